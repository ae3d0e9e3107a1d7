"""Ctrl-C during a long wait: a read waiting for another process's download of its shard (it
would wait up to ``wait_for_room``, 600 s by default) raises the signal handler's exception at
once."""

import fcntl
import os
import signal
import threading
import time

import pytest

import datasetrt

from conftest import payload, write_cache

N = 120


class Interrupted(Exception):
    """What the test's SIGINT handler raises (the default handler raises KeyboardInterrupt,
    which would also stop pytest if it escaped)."""


def test_a_signal_stops_a_read_waiting_for_another_download(tmp_path, s3_prefix):
    local = write_cache(tmp_path / "cache", N, max_shard_bytes=4096)
    datasetrt.publish(local, s3_prefix)
    last_shard = datasetrt.Cache(local).manifest["shards"][-1]["name"]
    cache_dir = tmp_path / "lc"
    cache = datasetrt.Cache(
        s3_prefix, cache_dir=cache_dir, prefetch_shards=0, read_while_downloading=False
    )
    (entry,) = [d for d in cache_dir.iterdir() if d.is_dir()]
    # Another downloader holds the last shard's claim (its partial file's exclusive lock),
    # as a process of the node downloading it would.
    (entry / "shards").mkdir(exist_ok=True)
    claim = open(entry / "shards" / f".shard-cache-partial.{last_shard}", "wb")
    fcntl.flock(claim, fcntl.LOCK_EX)

    def handler(signum, frame):
        raise Interrupted

    previous = signal.signal(signal.SIGINT, handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    try:
        start = time.monotonic()
        timer.start()
        with pytest.raises(Interrupted):
            cache[N - 1]
        elapsed = time.monotonic() - start
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
        claim.close()
    assert 0.3 <= elapsed < 1.3, elapsed
    # The claim let go (its downloader died), the read downloads the shard itself.
    assert bytes(cache[N - 1].payload) == payload(N - 1)


def test_a_signal_stops_a_loader_waiting_for_its_workers(tmp_path, s3_prefix):
    local = write_cache(tmp_path / "cache", N, max_shard_bytes=4096)
    datasetrt.publish(local, s3_prefix)
    shards = [s["name"] for s in datasetrt.Cache(local).manifest["shards"]]
    cache_dir = tmp_path / "lc"
    dataset = datasetrt.Dataset(
        [s3_prefix], cache_dir=cache_dir, prefetch_shards=0, read_while_downloading=False
    )
    (entry,) = [d for d in cache_dir.iterdir() if d.is_dir()]
    # Another downloader holds every shard's claim: the loader's workers wait in the shard
    # cache, and the iterating thread waits for them.
    (entry / "shards").mkdir(exist_ok=True)
    claims = []
    for name in shards:
        claim = open(entry / "shards" / f".shard-cache-partial.{name}", "wb")
        fcntl.flock(claim, fcntl.LOCK_EX)
        claims.append(claim)

    def handler(signum, frame):
        raise Interrupted

    loader = datasetrt.Loader(dataset, shuffle="none", workers=2)
    previous = signal.signal(signal.SIGINT, handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    try:
        start = time.monotonic()
        timer.start()
        with pytest.raises(Interrupted):
            next(loader)
        elapsed = time.monotonic() - start
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
        for claim in claims:
            claim.close()
    assert 0.3 <= elapsed < 1.3, elapsed
    # The interrupted step was not consumed: the loader goes on with it, in order.
    got = [bytes(s.payload) for s in loader]
    assert got == [payload(i) for i in range(N)]
