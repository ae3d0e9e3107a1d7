"""Hostile collections: small files that ask for far more memory than they hold are
refused with a typed error, in a child process held to the memory an honest collection needs
plus 256 MiB, within seconds, without a panic.

Each child opens (and, for the block bomb, reads) one collection and reports the error and how
much its peak RSS grew. The address-space limit is calibrated in the same run: the peak virtual
size of a child that opens and reads an honest collection, plus 256 MiB. The files come from
``hostile.py``; ``docs/reliability.md`` ("Hostile inputs", Atlas) lists what each gets.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
import pytest

import atlas_collections as ac

import hostile

MIB = 1024 * 1024
HEADROOM = 256 * MIB
# Whole child process, interpreter start-up and imports included.
SECONDS = 20.0
# The open (and read) itself.
OPEN_SECONDS = 5.0

CHILD = r"""
import json, resource, sys, time
import atlas_collections as ac

def vm_peak():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmPeak:"):
                return int(line.split()[1]) * 1024
    return 0

before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
start = time.monotonic()
out = {}
try:
    collection = ac.open(sys.argv[1])
    if len(sys.argv) > 2:
        collection[sys.argv[2]][sys.argv[3]].read()
    out["ok"] = True
except ac.AtlasError as e:
    out.update(error=type(e).__name__, message=str(e), path=e.path,
               retryable=e.retryable, field=getattr(e, "field", None))
out["seconds"] = time.monotonic() - start
out["rss_growth"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
out["vm_peak"] = vm_peak()
print(json.dumps(out))
"""


def run_child(args: list[str], limit: int | None = None) -> dict:
    env = dict(os.environ, MALLOC_ARENA_MAX="2", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")

    def limit_memory() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    proc = subprocess.run(
        [sys.executable, "-c", CHILD, *args],
        capture_output=True,
        text=True,
        timeout=SECONDS,
        env=env,
        preexec_fn=limit_memory,
    )
    assert "panicked" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, f"child died ({proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def limit(tmp_path_factory) -> int:
    """An honest collection's peak virtual size in a child, plus 256 MiB."""
    path = tmp_path_factory.mktemp("honest") / "coll"
    rng = np.random.default_rng(3)
    with ac.Writer(path) as w:
        w.write("big", {"v": rng.standard_normal(65_536).astype(np.float32)})
        w.write("small", {"v": np.arange(32, dtype=np.float32)})
    honest = run_child([str(path), "small", "v"])
    assert honest.get("ok"), honest
    return honest["vm_peak"] + HEADROOM


def assert_refused(out: dict, error: str, *needles: str) -> None:
    assert not out.get("ok"), out
    assert out["error"] == error, out
    assert not out["retryable"], out
    for needle in needles:
        assert needle in out["message"], out
    assert out["seconds"] < OPEN_SECONDS, out
    assert out["rss_growth"] < HEADROOM, out


@pytest.mark.parametrize(
    "strings",
    [16 * MIB, 128 * MIB],
    ids=["16MiB-of-empty-strings", "128MiB-of-empty-strings"],
)
def test_a_footer_of_empty_strings_is_refused_within_its_budget(tmp_path, limit, strings):
    # 16 MiB decoded took 419-771 MiB per open; 128 MiB aborted under a 4 GiB limit.
    path = hostile.write(tmp_path / "c", hostile.empty_string_pool(strings))
    out = run_child([str(path)], limit)
    assert_refused(out, "CorruptCollectionError", "footer", "stored bytes may take")
    assert out["field"] == "footer", out


def test_a_footer_of_a_gibibyte_of_zeros_is_refused_within_its_budget(tmp_path, limit):
    # A 32 KB frame; the 1 GiB decode limit let it cost 1 GiB before it was refused.
    data = hostile.zero_footer(1 << 30)
    assert len(data) < 64 * 1024
    path = hostile.write(tmp_path / "c", data)
    out = run_child([str(path)], limit)
    assert_refused(out, "CorruptCollectionError", "footer")


def test_attributes_typed_by_a_deep_list_are_refused_before_they_are_resolved(tmp_path, limit):
    # 2,000,000 attributes of a 30-deep list: a few KB stored, 6 MB decoded, about 2 GB once
    # each is resolved to its own copy of the type.
    path = hostile.write(tmp_path / "c", hostile.deep_attribute_types(2_000_000, 30))
    out = run_child([str(path)], limit)
    assert_refused(out, "CorruptCollectionError", "footer", "tables")


def test_a_block_that_decodes_past_its_chunks_is_refused(tmp_path, limit):
    # The block of a 128-byte array whose frame really decodes to 1.5 GiB: read whole before.
    path = hostile.block_bomb(tmp_path / "c", 3 * 512 * MIB)
    start = time.monotonic()
    out = run_child([str(path), "small", "v"], limit)
    assert time.monotonic() - start < SECONDS
    assert_refused(out, "CorruptCollectionError", "segment 'v'", "block 0", "'small'")


def test_a_fifo_in_place_of_the_mask_or_the_container_does_not_hang(tmp_path):
    # Opened in a child under a timeout: before the check, the open blocked for ever.
    path = tmp_path / "c"
    with ac.Writer(path) as w:
        w.write("a", {"v": np.arange(4.0)})
    os.mkfifo(path / "deleted.mask")
    out = run_child([str(path)])
    assert out["error"] == "CorruptCollectionError", out
    assert "deleted.mask" in out["message"] and "a FIFO, not a regular file" in out["message"]
    assert out["seconds"] < OPEN_SECONDS, out
    (path / "deleted.mask").unlink()
    (path / "data.atlas").unlink()
    os.mkfifo(path / "data.atlas")
    out = run_child([str(path)])
    assert out["error"] == "NotACollectionError", out
    assert "data.atlas" in out["message"] and "a FIFO, not a regular file" in out["message"]
    (path / "data.atlas").unlink()
    (path / "data.atlas").mkdir()
    out = run_child([str(path)])
    assert out["error"] == "NotACollectionError", out
    assert "a directory, not a regular file" in out["message"], out
