"""``datasetrt.convert``: a function of the user's over inputs in worker processes, one cache,
the same bytes for every number of workers, nothing left behind by any failure."""

import multiprocessing
import multiprocessing.connection
import os
import signal
import subprocess
import sys
import textwrap
import time
import traceback
from concurrent.futures.process import BrokenProcessPool
from typing import Any

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


CACHE_FILES = ["index.bin", "manifest.json", "metadata.arrow", "shards"]


def test_every_number_of_workers_writes_the_same_bytes(tmp_path, files_below):
    n = 2_000
    trees = []
    for workers, chunk in ((0, 100), (1, 100), (2, 100), (3, 100), (0, None), (2, None)):
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
        # The staging directory and the parts are gone: only the cache's own files remain.
        assert sorted(os.listdir(out)) == CACHE_FILES
        trees.append(files_below(out))
    assert all(t == trees[0] for t in trees[1:4]), "the bytes depend on num_workers"
    assert trees[4] == trees[5], "the default chunk size depends on num_workers"
    assert read_back(tmp_path / "w2-100") == expected(n)
    assert read_back(tmp_path / "w2-None") == expected(n)


def shard_starts(path):
    """The first sample of every shard (and the sample count), from the cache's index."""
    runs = datasetrt.Cache(path).shard_runs()
    assert [shard for shard, _, _ in runs] == sorted({shard for shard, _, _ in runs})
    return [start for _, start, _ in runs] + [runs[-1][2]]


@pytest.mark.parametrize("workers", [0, 2])
def test_the_shard_layout_follows_chunk_size(tmp_path, workers):
    n = 3_000

    # The first sample of every chunk: input i has i % 4 samples.
    def chunk_ends(size):
        ends, count = [], 0
        for i in range(n):
            if i % size == 0:
                ends.append(count)
            count += i % 4
        return ends + [count]

    for chunk in (7, 250, None):
        size = chunk or 1024
        # Shards large enough for everything: a shard ends only where a chunk ends.
        whole = tmp_path / f"whole-{chunk}"
        summary = datasetrt.convert(
            samples_of,
            range(n),
            whole,
            source="s",
            schema=SCHEMA,
            num_workers=workers,
            chunk_size=chunk,
        )
        assert summary["shards"] == -(-n // size)
        assert shard_starts(whole) == chunk_ends(size)
        assert read_back(whole) == expected(n)
        # Small shards: the rotation rule within a chunk, and a chunk's end ends a shard.
        small = tmp_path / f"small-{chunk}"
        datasetrt.convert(
            samples_of,
            range(n),
            small,
            source="s",
            schema=SCHEMA,
            num_workers=workers,
            chunk_size=chunk,
            max_shard_bytes=20_000,
        )
        starts = shard_starts(small)
        assert set(chunk_ends(size)) <= set(starts)
        # A chunk of 7 inputs (about 5 KB) fits one shard; larger chunks need several.
        assert (len(starts) > len(chunk_ends(size))) == (size > 7)
        assert read_back(small) == expected(n)


def big_samples(i):
    yield bytes([i % 251]) * 20_000, {"label": i, "name": f"item-{i}", "score": None}


def test_samples_stay_in_the_worker_that_made_them(tmp_path, monkeypatch):
    """Every byte the processes send each other, counted in the pipes (forked workers inherit
    the count): the chunks' inputs and the parts' summaries, not the samples."""
    fork = multiprocessing.get_context("fork")
    sent = fork.Value("q", 0)
    send_bytes = multiprocessing.connection.Connection.send_bytes

    def counted(self, buf, offset=0, size=None):
        with sent.get_lock():
            sent.value += memoryview(buf).nbytes if size is None else size
        return send_bytes(self, buf, offset, size)

    monkeypatch.setattr(multiprocessing.connection.Connection, "send_bytes", counted)
    out = tmp_path / "c"
    summary = datasetrt.convert(
        big_samples,
        range(400),
        out,
        source="s",
        schema=SCHEMA,
        num_workers=2,
        chunk_size=50,
        mp_context=fork,
    )
    assert summary["payload_bytes"] == 400 * 20_000
    assert 0 < sent.value < summary["payload_bytes"] / 100, sent.value
    assert [bytes(p) for p, _ in read_back(out)] == [next(big_samples(i))[0] for i in range(400)]


def test_spawned_workers_write_the_same_bytes(tmp_path, files_below, capfd):
    """The start method of macOS and Windows: the function, the writer's options and the
    progress counts reach each worker by pickling."""
    for name, context in (("fork", None), ("spawn", multiprocessing.get_context("spawn"))):
        datasetrt.convert(
            samples_of,
            range(600),
            tmp_path / name,
            source="s",
            schema=SCHEMA,
            num_workers=2,
            chunk_size=50,
            mp_context=context,
            progress=True,
        )
        assert "600/600" in capfd.readouterr().err
    assert files_below(tmp_path / "spawn") == files_below(tmp_path / "fork")


def test_a_generator_of_inputs_and_lz4(tmp_path, files_below):
    seen = []

    def inputs():
        for i in range(2_500):
            seen.append(i)
            yield i

    out = tmp_path / "c"
    stream = inputs()
    summary = datasetrt.convert(
        samples_of, stream, out, source="s", schema=SCHEMA, num_workers=2, compression="lz4"
    )
    assert summary["samples"] == len(expected(2_500)) and len(seen) == 2_500
    assert read_back(out) == expected(2_500)
    assert datasetrt.Cache(out).manifest["shards"][0]["compression"]["algo"] == "lz4"
    # The default chunk size does not depend on whether the input has a length.
    listed = tmp_path / "listed"
    datasetrt.convert(
        samples_of,
        list(range(2_500)),
        listed,
        source="s",
        schema=SCHEMA,
        num_workers=2,
        compression="lz4",
    )
    assert files_below(listed) == files_below(out)


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
    # Where fn raised: the worker's traceback as the cause, or the error's own in-process.
    if workers:
        assert "in fails_at_300" in str(caught.value.__cause__)
    else:
        assert "in fails_at_300" in "".join(traceback.format_exception(caught.value))
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
    # The writer's own checks, before any worker starts (the function would fail).
    cases: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"compression": "zstd"}, ValueError, "compression"),
        ({"max_shard_bytes": 0}, datasetrt.WriteError, "max_shard_bytes"),
        ({"schema": {"label": "int32"}}, ValueError, "int32"),
    ]
    for options, error, match in cases:
        with pytest.raises(error, match=match):
            datasetrt.convert(
                fails_at_300,
                range(1_000),
                tmp_path / "c",
                **{"source": "s", "schema": SCHEMA, **options},
            )
        assert not (tmp_path / "c").exists()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(datasetrt.WriteError):
        datasetrt.convert(samples_of, range(3), tmp_path / "full", source="s", schema=SCHEMA)
    assert os.listdir(tmp_path / "full") == ["keep.txt"]
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize("workers", [0, 2])
def test_ctrl_c_stops_the_workers_and_leaves_nothing(tmp_path, workers):
    out = tmp_path / "c"
    script = textwrap.dedent(
        f"""
        import signal, sys, time
        import datasetrt

        def slow(i):
            time.sleep(0.01)
            yield bytes(1000), {{"label": i}}

        if __name__ == "__main__":
            # Ctrl-C handled as a terminal's shell starts a program: a runner that started
            # this suite with SIGINT ignored (`nohup ... &` in a script) passes that on.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            print("started", flush=True)
            datasetrt.convert(slow, range(100_000), {str(out)!r}, source="s",
                              schema={{"label": "int64"}}, num_workers={workers}, chunk_size=4)
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
    # Some parts are finished, others being written.
    while len(list(out.glob(".dsrt-parts-*/*/manifest.json"))) < 3:
        assert time.monotonic() < deadline, "no part was finished in 30 s"
        time.sleep(0.05)
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


def test_progress_goes_to_stderr_only_when_asked(tmp_path, capfd, monkeypatch):
    n = 2_000
    samples = len(expected(n))
    # Off, and by default when stderr is not a terminal (as under pytest): not a byte.
    for name, progress in (("off", False), ("default", None)):
        datasetrt.convert(
            samples_of,
            range(n),
            tmp_path / name,
            source="s",
            schema=SCHEMA,
            num_workers=2,
            chunk_size=100,
            progress=progress,
        )
        assert capfd.readouterr() == ("", "")
    # On, with tqdm (a test requirement), from workers and in-process.
    for workers in (2, 0):
        datasetrt.convert(
            samples_of,
            range(n),
            tmp_path / f"tqdm-{workers}",
            source="s",
            schema=SCHEMA,
            num_workers=workers,
            chunk_size=100,
            progress=True,
        )
        captured = capfd.readouterr()
        assert captured.out == ""
        assert f"{n}/{n}" in captured.err and f"{samples:,} samples" in captured.err
    # On, without tqdm: one line rewritten in place, ended once, the count of a generator.
    for module in ("tqdm", "tqdm.auto"):
        monkeypatch.setitem(sys.modules, module, None)
    datasetrt.convert(
        samples_of,
        iter(range(n)),
        tmp_path / "plain",
        source="s",
        schema=SCHEMA,
        num_workers=2,
        chunk_size=100,
        progress=True,
    )
    captured = capfd.readouterr()
    assert captured.out == ""
    last = captured.err.split("\r")[-1]
    assert last.startswith(f"datasetrt.convert: {n:,} inputs, {samples:,} samples, ")
    assert last.endswith(" samples/s\n") and captured.err.count("\n") == 1
    datasetrt.convert(
        samples_of,
        range(n),
        tmp_path / "plain-sized",
        source="s",
        schema=SCHEMA,
        num_workers=0,
        chunk_size=100,
        progress=True,
    )
    assert f"{n:,}/{n:,} inputs, {samples:,} samples" in capfd.readouterr().err
