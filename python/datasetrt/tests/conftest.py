"""Shared helpers for the datasetrt tests: every test works on real cache files."""

import os
import pathlib
import uuid

import pytest

import datasetrt

REPO = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = REPO / "fixtures" / "dsrt"

SCHEMA = {"label": "int64", "score": "float64", "flag": "bool", "name": "utf8?"}


def payload(i: int) -> bytes:
    """A deterministic payload of 1..600 bytes for sample ``i``."""
    n = 1 + (i * 7919) % 600
    return bytes((i * 31 + k) % 251 for k in range(n))


def row(i: int) -> dict:
    return {
        "label": i % 10,
        "score": i / 4.0,
        "flag": i % 3 == 0,
        "name": None if i % 5 == 0 else f"sample-{i}",
    }


def write_cache(
    path, n, *, source=None, compression="none", version=3, max_shard_bytes=4096, offset=0
):
    """Writes ``n`` samples (ids ``offset..offset+n``) and returns the path."""
    path = pathlib.Path(path)
    with datasetrt.CacheWriter(
        path,
        source=source or path.name,
        schema=SCHEMA,
        compression=compression,
        max_shard_bytes=max_shard_bytes,
        version=version,
    ) as w:
        for i in range(offset, offset + n):
            w.add(payload(i), row(i))
    return path


@pytest.fixture
def cache_path(tmp_path):
    return write_cache(tmp_path / "cache", 50)


@pytest.fixture
def s3_prefix():
    """A fresh ``s3://bucket/prefix`` on the test server (no object under it yet). Fails (never
    skips) without one: ``cargo xtask test`` starts it and passes its environment; by hand,
    ``bash .ci/s3-server.sh start /tmp/s3 && source /tmp/s3/env``."""
    missing = [v for v in ("AWS_ENDPOINT_URL", "ATLAS_S3_TEST_BUCKET") if not os.environ.get(v)]
    if missing:
        pytest.fail(
            f"the S3 tests need {', '.join(missing)}: start the test server with "
            "`bash .ci/s3-server.sh start /tmp/s3 && source /tmp/s3/env` (cargo xtask test does)"
        )
    return f"s3://{os.environ['ATLAS_S3_TEST_BUCKET']}/pytest-datasetrt-python/{uuid.uuid4().hex}"


def _files_below(path: "str | os.PathLike[str]") -> dict[str, bytes]:
    """Every file below ``path`` (relative path -> bytes): two caches compared whole."""
    out = {}
    for dirpath, _, names in os.walk(path):
        for name in names:
            full = os.path.join(dirpath, name)
            with open(full, "rb") as f:
                out[os.path.relpath(full, path)] = f.read()
    return out


@pytest.fixture
def files_below():
    """The function ``files_below(path)``: every file below ``path`` as bytes, by relative path."""
    return _files_below
