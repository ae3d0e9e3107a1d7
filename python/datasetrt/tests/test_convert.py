"""``datasetrt.convert``: a function of the user's over inputs in worker processes, one cache,
the same bytes for every number of workers, nothing left behind by any failure."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures.process import BrokenProcessPool

import pytest

import datasetrt

SCHEMA = {"label": "int64", "name": "utf8", "score": "float64?"}


def samples_of(i):
    """Input ``i``: 0-3 samples of its own bytes (a module-level function, so it pickles)."""
    for k in range(i % 4):
        payload = bytes([i % 251, k]) * (50 + (i * 37 + k) % 400)
        score = None if (i + k) % 5 == 0 else i / 7 + k
        yield payload, {"label": i * 10 + k, "name": f"item-{i}-{k}", "score": score}


def expected(n):
    return [sample for i in range(n) for sample in samples_of(i)]


def fails_at_300(i):
    if i == 300:
        raise ValueError(f"cannot decode input {i}")
    return samples_of(i)


def wrong_column(i):
    if i == 123:
        return [(b"x", {"label": 1, "name": "a", "score": None, "extra": 2})]
    return samples_of(i)


def not_pairs(i):
    return [b"just bytes"] if i == 5 else samples_of(i)


def read_back(path):
    cache = datasetrt.Cache(path, validate_cache=True)
    return [(bytes(s.payload), s.metadata) for s in (cache[i] for i in range(len(cache)))]


def test_every_number_of_workers_writes_the_same_bytes(tmp_path, files_below):
    n = 2_000
    trees = []
    for workers, chunk in ((0, None), (1, None), (2, None), (3, 7), (2, 1)):
        out = tmp_path / f"w{workers}-{chunk}"
        summary = datasetrt.convert(
            samples_of,
            range(n),
            out,
            source="converted",
            schema=SCHEMA,
            num_workers=workers,
            chunk_size=chunk,
            max_shard_bytes=64_000,
        )
        assert summary["samples"] == len(expected(n)) and summary["shards"] > 5
        trees.append(files_below(out))
    assert all(t == trees[0] for t in trees[1:])
    got = read_back(tmp_path / "w2-None")
    assert got == [(p, m) for p, m in expected(n)]


def test_a_generator_of_inputs_and_lz4(tmp_path):
    seen = []

    def inputs():
        for i in range(500):
            seen.append(i)
            yield i

    out = tmp_path / "c"
    stream = inputs()
    summary = datasetrt.convert(
        samples_of, stream, out, source="s", schema=SCHEMA, num_workers=2, compression="lz4"
    )
    assert summary["samples"] == len(expected(500)) and len(seen) == 500
    assert read_back(out) == expected(500)
    assert datasetrt.Cache(out).manifest["shards"][0]["compression"]["algo"] == "lz4"


@pytest.mark.parametrize("workers", [0, 2])
def test_a_raising_function_publishes_nothing_and_leaves_nothing(tmp_path, workers):
    out = tmp_path / "c"
    with pytest.raises(ValueError, match="cannot decode input 300") as caught:
        datasetrt.convert(
            fails_at_300,
            range(1_000),
            out,
            source="s",
            schema=SCHEMA,
            num_workers=workers,
            chunk_size=8,
            max_shard_bytes=20_000,
        )
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    assert "input 300 (300)" in notes and str(out) in notes
    assert not out.exists()
    # An existing empty directory stays, empty.
    out.mkdir()
    with pytest.raises(ValueError):
        datasetrt.convert(fails_at_300, range(1_000), out, source="s", schema=SCHEMA, num_workers=2)
    assert out.is_dir() and os.listdir(out) == []


def test_a_sample_that_does_not_fit_the_schema_names_its_input(tmp_path):
    out = tmp_path / "c"
    with pytest.raises(datasetrt.Error, match="extra") as caught:
        datasetrt.convert(wrong_column, range(400), out, source="s", schema=SCHEMA, num_workers=2)
    assert "input 123 (123)" in "\n".join(getattr(caught.value, "__notes__", []))
    assert not out.exists()


def test_a_function_that_yields_something_else_than_pairs_is_refused(tmp_path):
    out = tmp_path / "c"
    with pytest.raises(TypeError, match="sample 0 of this input is bytes, not a") as caught:
        datasetrt.convert(not_pairs, range(50), out, source="s", schema=SCHEMA, num_workers=2)
    assert "input 5 (5)" in "\n".join(getattr(caught.value, "__notes__", []))
    assert not out.exists()


def test_bad_arguments_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="num_workers"):
        datasetrt.convert(
            samples_of, range(3), tmp_path / "a", source="s", schema=SCHEMA, num_workers=-1
        )
    with pytest.raises(ValueError, match="chunk_size"):
        datasetrt.convert(
            samples_of, range(3), tmp_path / "b", source="s", schema=SCHEMA, chunk_size=0
        )
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(datasetrt.WriteError):
        datasetrt.convert(samples_of, range(3), tmp_path / "full", source="s", schema=SCHEMA)
    assert os.listdir(tmp_path / "full") == ["keep.txt"]
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_ctrl_c_stops_the_workers_and_leaves_nothing(tmp_path):
    out = tmp_path / "c"
    script = textwrap.dedent(
        f"""
        import sys, time
        import datasetrt

        def slow(i):
            time.sleep(0.01)
            yield bytes(1000), {{"label": i}}

        if __name__ == "__main__":
            print("started", flush=True)
            datasetrt.convert(slow, range(100_000), {str(out)!r}, source="s",
                              schema={{"label": "int64"}}, num_workers=2, chunk_size=4)
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "started"
    deadline = time.monotonic() + 30
    while not (out / "shards").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    # The terminal sends SIGINT to the whole foreground process group.
    os.killpg(child.pid, signal.SIGINT)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode != 0
    assert "KeyboardInterrupt" in stderr and "nothing was written" in stderr, stderr
    assert not out.exists()


def dies_at_50(i):
    if i == 50:
        os._exit(3)  # a worker killed mid-run (the OOM killer, a segfault in a decoder)
    return samples_of(i)


def test_a_worker_that_dies_publishes_nothing_and_leaves_nothing(tmp_path):
    out = tmp_path / "c"
    with pytest.raises(BrokenProcessPool):
        datasetrt.convert(
            dies_at_50, range(400), out, source="s", schema=SCHEMA, num_workers=2, chunk_size=4
        )
    assert not out.exists()
