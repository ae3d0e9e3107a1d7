"""Bounded resources from Python: a 5,000-shard cache and a dataset of 2,000 caches read in
full under ``ulimit -n 256`` (set for a child process), through ``cache[i]``, ``read_many``,
``Loader`` and ``DataLoader(StreamingDataset(...), num_workers=2)`` in every collate and
transfer mode, with the descriptors in use counted from ``/proc/self/fd``."""

import contextlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

import datasetrt

LIMIT = 256
SHARDS = 5000
CACHES = 2000


def payload(cache, i):
    return (b"c%d-s%d:" % (cache, i)).ljust(40 + i % 13, b"x")


@contextlib.contextmanager
def scratch(tmp_path_factory, name):
    """A directory on tmpfs where there is one (thousands of fsyncs cost nothing there),
    removed afterwards: /dev/shm is memory, and pytest's own cleanup does not reach it."""
    if not os.path.isdir("/dev/shm"):
        yield str(tmp_path_factory.mktemp(name))
        return
    path = tempfile.mkdtemp(prefix=name, dir="/dev/shm")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def big_cache(tmp_path_factory):
    with scratch(tmp_path_factory, "big") as root:
        path = os.path.join(root, "cache")
        with datasetrt.CacheWriter(
            path, source="big", schema={"n": "int64"}, max_shard_bytes=1
        ) as w:
            for i in range(SHARDS):
                w.add(payload(0, i), n=i)
        assert len(datasetrt.Cache(path).manifest["shards"]) == SHARDS
        yield path


@pytest.fixture(scope="module")
def many_caches(tmp_path_factory):
    with scratch(tmp_path_factory, "many") as root:
        paths = []
        for c in range(CACHES):
            path = os.path.join(root, f"c{c:04d}")
            with datasetrt.CacheWriter(path, source=f"src{c}", schema={"n": "int64"}) as w:
                for i in range(2):
                    w.add(payload(c, i), n=i)
            paths.append(path)
        yield paths


PRELUDE = textwrap.dedent(
    """
    import os, sys, json
    import datasetrt

    SLACK = 40

    def payload(cache, i):
        return (b"c%d-s%d:" % (cache, i)).ljust(40 + i % 13, b"x")

    def fds():
        return len(os.listdir("/proc/self/fd"))

    def bounded(what):
        n, bound = fds(), datasetrt.max_open_shards() + SLACK
        assert n <= bound, f"{what}: {n} descriptors open, bound {bound}"
    """
)


def run_child(body, *args, limit=LIMIT, hard_limit=None):
    """Runs ``body`` in a child whose soft limit on open files is ``limit`` and whose hard
    limit is ``hard_limit`` (by default the same: the library raises a soft limit toward the
    hard one, and most tests need the low limit to hold)."""

    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard_limit or limit))

    code = PRELUDE + textwrap.dedent(body)
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        preexec_fn=lower,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_random_reads_and_read_many_of_5000_shards(big_cache):
    run_child(
        """
        cache = datasetrt.Cache(sys.argv[1])
        n = len(cache)
        for k in range(n):
            i = (k * 7919) % n
            assert bytes(cache[i].payload) == payload(0, i), i
            if k % 500 == 0:
                bounded("cache[i]")
        order = [(k * 104729) % n for k in range(n)]
        for start in range(0, n, 700):
            got = cache.read_many(order[start:start + 700])
            for i, s in zip(order[start:start + 700], got):
                assert bytes(s.payload) == payload(0, i)
            bounded("read_many")
        loader = datasetrt.Loader(datasetrt.Dataset([sys.argv[1]]), shuffle="full", workers=2)
        seen = set()
        for k, s in enumerate(loader):
            assert bytes(s.payload) == payload(0, s.sample_id)
            seen.add(s.sample_id)
            if k % 500 == 0:
                bounded("Loader")
        assert len(seen) == n
        """,
        big_cache,
    )


@pytest.mark.parametrize(
    "mode",
    [
        {"collate": "samples"},
        {"collate": "samples", "batch_size": 32},
        {"collate": "columnar", "batch_size": 32, "transfer": "bytes"},
        {"collate": "columnar", "batch_size": 32, "transfer": "locations"},
    ],
    ids=["samples", "samples-batched", "columnar-bytes", "columnar-locations"],
)
def test_streaming_dataset_over_5000_shards_in_every_mode(big_cache, mode):
    run_child(
        """
        from torch.utils.data import DataLoader
        from datasetrt.torch import StreamingDataset
        mode = json.loads(sys.argv[2])
        batch_size = mode.pop("batch_size", None)
        ds = StreamingDataset([sys.argv[1]], seed=1, shuffle="full", batch_size=batch_size, **mode)
        seen = set()
        for k, item in enumerate(DataLoader(ds, batch_size=None, num_workers=2)):
            if mode.get("collate") == "columnar":
                keys = item["keys"].tolist()
                for (c, i), p in zip(keys, item["payloads"]):
                    assert bytes(p) == payload(0, i)
                    seen.add(i)
            else:
                for s in (item if isinstance(item, list) else [item]):
                    i = s["key"][1]
                    assert bytes(s["payload"]) == payload(0, i)
                    seen.add(i)
            if k % 50 == 0:
                bounded("StreamingDataset " + sys.argv[2])
        assert len(seen) == 5000, len(seen)
        """,
        big_cache,
        __import__("json").dumps(mode),
    )


def test_a_dataset_of_2000_caches_opens_and_iterates(many_caches):
    listing = os.path.join(os.path.dirname(many_caches[0]), "paths.txt")
    with open(listing, "w") as f:
        f.write("\n".join(many_caches))
    run_child(
        """
        from torch.utils.data import DataLoader
        from datasetrt.torch import StreamingDataset
        paths = open(sys.argv[1]).read().splitlines()
        ds = datasetrt.Dataset(paths)
        assert fds() <= SLACK, f"{fds()} descriptors with 2,000 caches open"
        position = {c.cache_id: k for k, c in enumerate(ds.caches)}
        seen = set()
        for k, s in enumerate(datasetrt.Loader(ds, shuffle="full", workers=2)):
            assert bytes(s.payload) == payload(position[s.cache_id], s.sample_id)
            seen.add(s.key)
            if k % 500 == 0:
                bounded("Loader over 2,000 caches")
        assert len(seen) == 4000
        seen = set()
        streaming = StreamingDataset(ds, shuffle="full", seed=2)
        for item in DataLoader(streaming, batch_size=None, num_workers=2):
            c, i = item["key"]
            assert bytes(item["payload"]) == payload(position[c], i)
            seen.add((c, i))
        assert len(seen) == 4000
        """,
        listing,
    )


def test_a_held_payload_outlives_its_shards_release(big_cache):
    run_child(
        """
        datasetrt.set_max_open_shards(4)
        assert datasetrt.max_open_shards() == 4
        cache = datasetrt.Cache(sys.argv[1])
        held = cache[0].payload
        assert isinstance(held, memoryview)
        for i in range(1, 2000):
            cache[i]
        assert datasetrt.open_shard_handles() <= 4
        assert bytes(held) == payload(0, 0)
        """,
        big_cache,
    )


def test_mappings_stay_within_a_lowered_bound(big_cache):
    run_child(
        """
        def mapped_shards():
            with open("/proc/self/maps") as f:
                return sum(1 for line in f if "/shards/" in line and sys.argv[1] in line)

        cache = datasetrt.Cache(sys.argv[1])
        datasetrt.set_max_open_shards(300)
        for i in range(300):
            cache[i]
        assert mapped_shards() >= 300, mapped_shards()
        datasetrt.set_max_open_shards(8)
        # Shards whose views the binding already holds: the lower bound applies to them too
        # (the reader's pool and the binding's view table keep at most 8 each).
        for i in range(300):
            assert bytes(cache[i].payload) == payload(0, i)
            assert mapped_shards() <= 16, (i, mapped_shards())
        """,
        big_cache,
    )


def test_running_out_of_descriptors_is_a_resource_error(big_cache):
    run_child(
        """
        cache = datasetrt.Cache(sys.argv[1])
        hogs = []
        try:
            while True:
                hogs.append(open("/dev/null"))
        except OSError:
            pass
        try:
            cache[17]
        except datasetrt.ResourceError as e:
            assert not isinstance(e, datasetrt.CorruptCacheError)
            assert e.kind == "resource" and e.resource == "descriptors", (e.kind, e.resource)
            assert e.max_open_shards == datasetrt.max_open_shards()
            assert "DSRT_MAX_OPEN_SHARDS" in str(e), str(e)
        else:
            raise AssertionError("no ResourceError")
        for h in hogs:
            h.close()
        assert bytes(cache[17].payload) == payload(0, 17)
        """,
        big_cache,
    )


def test_a_low_soft_limit_is_raised_toward_the_hard_one(big_cache):
    run_child(
        """
        import resource
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (256, 4096)
        cache = datasetrt.Cache(sys.argv[1])
        for k in range(3000):
            i = (k * 7919) % len(cache)
            assert bytes(cache[i].payload) == payload(0, i)
        # The first read made the pool, which raised the soft limit to twice its capacity.
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (4096, 4096)
        assert datasetrt.max_open_shards() == 2048
        with open("/proc/self/maps") as f:
            mapped = sum(1 for line in f if "/shards/" in line and sys.argv[1] in line)
        assert mapped > 2000, mapped
        """,
        big_cache,
        hard_limit=4096,
    )


def test_set_max_open_shards_refuses_zero():
    with pytest.raises(ValueError):
        datasetrt.set_max_open_shards(0)
