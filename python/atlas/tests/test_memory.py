"""Reading a remote collection 1,000,000 times from Python keeps RSS flat.

The collection is opened by a ``file://`` URL: object_store's ``LocalFileSystem`` behind the
request-counting store an ``s3://`` collection has too. A read the reader can answer from what
it holds makes no request (a small segment is kept whole once read), so one read in five is of an
array whose bytes have left the store: it reaches the store every time, is recorded in the
collection's request log and fails with a ``StorageError``. Were that log unbounded, each such
request would stay in memory (about 50 bytes), and the 40,000 required pass the limit twice.

A slow machine reads for at most ``SECONDS`` instead of the full ``READS``.
"""

import os
import time

import numpy as np

import atlas_collections as ac

READS = 1_000_000
SECONDS = 60.0
# Every this many reads, one of the array the store no longer serves.
FAILING_EVERY = 5
BATCH = 10_000
WARM_UP = 20_000
# Growth allowed after the warm-up: the allocator's and the interpreter's own slack (about
# 0.1 MiB over a million reads).
MAX_GROWTH = 1024 * 1024


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        resident_pages = int(statm.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def test_reading_a_remote_collection_1_000_000_times_keeps_rss_flat(tmp_path):
    path = tmp_path / "coll"
    with ac.Writer(path) as w:
        w.write("a", {"small": np.arange(4.0), "gone": np.arange(4.0)})
    collection = ac.open(path.as_uri())
    small = collection["a"]["small"]
    gone = collection["a"]["gone"]
    want = small.read()
    (path / "data.atlas").unlink()

    def read(count: int) -> int:
        failed = 0
        for i in range(count):
            if i % FAILING_EVERY == FAILING_EVERY - 1:
                try:
                    gone.read()
                except ac.StorageError:
                    failed += 1
            else:
                small.read()
        return failed

    read(WARM_UP)
    np.testing.assert_array_equal(small.read(), want)
    requests_before = collection.request_count
    before = rss_bytes()
    start = time.monotonic()
    reads = failed = 0
    while reads < READS and time.monotonic() - start < SECONDS:
        failed += read(BATCH)
        reads += BATCH
    after = rss_bytes()
    seconds = time.monotonic() - start
    # The figures, which `pytest -rP` shows: the read rate and the growth on this machine.
    print(
        f"{reads} reads ({failed} failing) in {seconds:.1f} s; "
        f"RSS {before / 2**20:.2f} -> {after / 2**20:.2f} MiB"
    )

    assert failed == reads // FAILING_EVERY
    # Enough requests that an unbounded log would show.
    assert failed >= 40_000, f"only {reads} reads in {SECONDS} s"
    assert collection.request_count - requests_before >= failed
    assert len(collection.requests()) <= 1024
    assert after - before < MAX_GROWTH, (
        f"RSS grew {(after - before) / 2**20:.1f} MiB over {reads} reads "
        f"({before / 2**20:.1f} -> {after / 2**20:.1f} MiB)"
    )
