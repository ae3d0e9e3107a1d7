"""Caches on object storage: published with ``datasetrt.publish`` to the S3 test server that
``cargo xtask test`` starts (SeaweedFS), then opened by URL through a local cache directory.

Without the server's environment every test here fails (the ``s3_prefix`` fixture), never
skips."""

import gc
import inspect
import os
import pathlib
import pickle
import shutil
import stat
import time
from typing import Any

import pytest
from torch.utils.data import DataLoader

import datasetrt
from datasetrt.torch import ColumnarBatch, StreamingDataset

from conftest import payload, row, write_cache

N = 120


def published(tmp_path, url, name="cache", n=N, **kw):
    """Writes a local cache of ``n`` samples in small shards and publishes it to ``url``."""
    local = write_cache(tmp_path / name, n, max_shard_bytes=4096, **kw)
    report = datasetrt.publish(local, url)
    assert report["url"] == url and report["manifest_atomic"] is True
    return local


def files_under(root):
    return sorted(
        p.relative_to(root).as_posix() for p in pathlib.Path(root).rglob("*") if p.is_file()
    )


def shard_names(cache):
    return [s["name"] for s in cache.manifest["shards"]]


def test_a_published_cache_reads_like_the_local_one(tmp_path, s3_prefix):
    local_dir = published(tmp_path, s3_prefix)
    local = datasetrt.Cache(local_dir)
    cache_dir = tmp_path / "local-cache"
    remote = datasetrt.Cache(s3_prefix, cache_dir=cache_dir, validate_cache=True)
    assert remote.is_remote and not local.is_remote
    assert remote.path == s3_prefix and s3_prefix in repr(remote)
    assert len(remote) == len(local) == N
    assert remote.manifest == local.manifest and remote.format_version == 3
    assert remote.schema == local.schema
    assert remote.metadata().equals(local.metadata())
    for i in range(N):
        s = remote[i]
        assert bytes(s.payload) == bytes(local[i].payload) == payload(i)
        assert s.metadata == row(i)
    many = remote.read_many([5, -1, 0])
    assert [bytes(s.payload) for s in many] == [payload(5), payload(N - 1), payload(0)]
    # The local cache directory holds the cache's files, every shard downloaded whole and
    # checked, and no partial download, once the cache is closed: a checked shard is read at
    # once, and fsynced and renamed into place by a background thread that closing waits for.
    here = pathlib.Path(remote.local_path)
    del remote, s, many
    gc.collect()
    held = files_under(cache_dir)
    assert not [f for f in held if "partial" in f], held
    assert here.parent == cache_dir
    assert {"manifest.json", "index.bin", "metadata.arrow"} <= set(os.listdir(here))
    # Beside each file, the shard cache's seal (its record that it wrote and checked it).
    shards_held = [n for n in os.listdir(here / "shards") if not n.startswith(".shard-cache")]
    assert sorted(shards_held) == sorted(shard_names(local))
    for name in shard_names(local):
        assert (here / "shards" / name).read_bytes() == (local_dir / "shards" / name).read_bytes()
    # Opening again uses the local copies (and still reads the same bytes).
    again = datasetrt.Cache(s3_prefix, cache_dir=cache_dir)
    assert [bytes(again[i].payload) for i in range(N)] == [payload(i) for i in range(N)]


def test_local_paths_behave_as_before(tmp_path):
    local_dir = write_cache(tmp_path / "c", 20)
    for location in (local_dir, str(local_dir), f"file://{local_dir}"):
        cache = datasetrt.Cache(
            location, cache_dir=tmp_path / "unused", cache_limit="1KB", fetch="range"
        )
        assert not cache.is_remote and cache.local_path == str(local_dir)
        # Uncompressed payloads stay zero-copy views of the mapped shard.
        p = cache[3].payload
        assert isinstance(p, memoryview) and p.readonly and bytes(p) == payload(3)
    assert not (tmp_path / "unused").exists()
    with pytest.raises(datasetrt.IncompleteCacheError):
        datasetrt.Cache(tmp_path)
    with pytest.raises(TypeError):
        datasetrt.Cache(42)  # type: ignore[arg-type]  # the wrong type is the test


def test_a_dataset_mixes_urls_and_paths(tmp_path, s3_prefix):
    url_a = f"{s3_prefix}/a"
    local_a = published(tmp_path, url_a, name="a", n=40)
    local_b = write_cache(tmp_path / "b", 30, offset=40)
    dataset = datasetrt.Dataset([url_a, local_b], cache_dir=tmp_path / "lc", cache_limit="10MiB")
    reference = datasetrt.Dataset([local_a, local_b])
    assert dataset.cache_ids == reference.cache_ids
    assert dataset.paths == [url_a, str(local_b)]
    assert [c.is_remote for c in dataset.caches] == [True, False]
    assert [c.path for c in dataset.caches] == [url_a, str(local_b)]
    assert dataset.cache_limit == 10 << 20 and dataset.fetch == "whole"
    assert dataset.cache_dir == str(tmp_path / "lc")
    assert len(dataset) == 70
    keys = [(cid, s) for cid, n in zip(dataset.cache_ids, (40, 30)) for s in range(n)]
    got = dataset.read_many(keys)
    assert [bytes(s.payload) for s in got] == [payload(i) for i in range(70)]
    assert bytes(dataset[keys[-1]].payload) == payload(69)
    assert dataset.select(label=3).keys() == reference.select(label=3).keys()
    # Samples through the Rust loader, with its shard prefetching.
    loaded = {s.key: bytes(s.payload) for s in datasetrt.Loader(dataset, seed=3, workers=2)}
    assert loaded == {k: payload(i) for i, k in enumerate(keys)}
    # Pickling carries the locations and the options, and reopens.
    clone = pickle.loads(pickle.dumps(dataset))
    assert clone.paths == dataset.paths and clone.cache_ids == dataset.cache_ids
    assert (clone.cache_dir, clone.cache_limit, clone.fetch) == (
        str(tmp_path / "lc"),
        10 << 20,
        "whole",
    )


def test_a_tampered_shard_raises_an_integrity_error_naming_url_and_shard(tmp_path, s3_prefix):
    good = write_cache(tmp_path / "good", N, max_shard_bytes=4096)
    bad = tmp_path / "bad"
    shutil.copytree(good, bad)
    # Same length, one byte flipped: the manifest's SHA-256 no longer matches.
    shard = bad / "shards" / "000001.bin"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    datasetrt.publish(bad, s3_prefix)
    cache_dir = tmp_path / "lc"
    cache = datasetrt.Cache(s3_prefix, cache_dir=cache_dir)
    with pytest.raises(datasetrt.RemoteIntegrityError) as caught:
        for i in range(len(cache)):
            cache[i]
    e = caught.value
    assert isinstance(e, datasetrt.RemoteError) and isinstance(e, datasetrt.Error)
    assert e.kind == "integrity" and e.retryable is False
    assert e.file == "shards/000001.bin" and e.cache == s3_prefix
    assert e.url == f"{s3_prefix}/shards/000001.bin"
    assert e.url in str(e) and "shards/000001.bin" in str(e) and "SHA-256" in str(e)
    # Nothing of the bad shard was kept, not even a partial download. (Shard 0's whole
    # download, begun while its samples were read from the store, may still be under way: its
    # partial file is checked for once the caches are closed, below.)
    held = files_under(cache_dir)
    assert not [f for f in held if "000001.bin" in f], held
    # The same through a batch read and a dataset.
    with pytest.raises(datasetrt.RemoteIntegrityError, match="shards/000001.bin"):
        cache.read_many(list(range(len(cache))))
    dataset = datasetrt.Dataset([s3_prefix], cache_dir=cache_dir)
    with pytest.raises(datasetrt.RemoteIntegrityError, match="shards/000001.bin"):
        list(datasetrt.Loader(dataset, shuffle="sequential"))
    # Closing the caches stops and waits for their downloads: no partial download is left.
    del cache, dataset, caught, e
    gc.collect()
    held = files_under(cache_dir)
    assert not [f for f in held if f.endswith("000001.bin") or "partial" in f], held


def test_a_cache_limit_below_the_largest_shard_raises_at_open(tmp_path, s3_prefix):
    published(tmp_path, s3_prefix)
    largest = max(s["byte_len"] for s in datasetrt.Cache(tmp_path / "cache").manifest["shards"])
    for limit in (largest - 1, f"{largest - 1}B", "1KB"):
        with pytest.raises(datasetrt.CacheLimitError) as caught:
            datasetrt.Cache(s3_prefix, cache_dir=tmp_path / "lc", cache_limit=limit)
        e = caught.value
        assert e.kind == "cache_limit" and e.url == s3_prefix and s3_prefix in str(e)
        # A file needs room for its seal too (256 bytes).
        assert e.needed == largest + 256 and e.limit < largest and e.shard.endswith(".bin")
    with pytest.raises(datasetrt.CacheLimitError):
        datasetrt.Dataset([s3_prefix], cache_dir=tmp_path / "lc", cache_limit=largest - 1)
    cache = datasetrt.Cache(s3_prefix, cache_dir=tmp_path / "lc", cache_limit="1MiB")
    assert bytes(cache[N - 1].payload) == payload(N - 1)


def test_sizes_and_bad_options():
    parse = datasetrt._native._parse_size
    assert parse("20GB") == 20_000_000_000
    assert parse("512MiB") == 512 << 20
    assert parse("1.5 gib") == 3 << 29
    assert parse("4096") == 4096
    for bad in ("lots", "20G", "1.2.3MB", "", "-5MB"):
        with pytest.raises(ValueError):
            parse(bad)
    with pytest.raises(ValueError, match="cache_limit"):
        datasetrt.Cache("s3://bucket/x", cache_limit="twenty")
    with pytest.raises(ValueError, match="cache_limit"):
        datasetrt.Cache("s3://bucket/x", cache_limit=-1)
    with pytest.raises(TypeError):
        datasetrt.Cache("s3://bucket/x", cache_limit=1.5)  # type: ignore[arg-type]  # likewise
    with pytest.raises(ValueError, match="fetch"):
        datasetrt.Cache("s3://bucket/x", fetch="some")
    with pytest.raises(TypeError):
        datasetrt.Dataset("s3://bucket/x")
    with pytest.raises(datasetrt.RemoteError) as caught:
        datasetrt.Cache("nosuch://bucket/x")
    assert caught.value.kind == "location"


def test_fetch_range_reads_without_caching_shards(tmp_path, s3_prefix):
    local_dir = published(tmp_path, s3_prefix)
    cache_dir = tmp_path / "lc"
    cache = datasetrt.Cache(s3_prefix, cache_dir=cache_dir, fetch="range")
    for i in (0, 57, N - 1, 3):
        s = cache[i]
        assert bytes(s.payload) == payload(i) and s.metadata == row(i)
    assert [bytes(s.payload) for s in cache.read_many(range(N))] == [payload(i) for i in range(N)]
    held = files_under(cache_dir)
    assert not [f for f in held if "/shards/" in f or "partial" in f], held
    held_here = {n for n in os.listdir(cache.local_path) if not n.startswith(".shard-cache")}
    assert held_here <= {
        "manifest.json",
        "index.bin",
        "metadata.arrow",
        "shards",
    }
    assert cache.metadata().equals(datasetrt.Cache(local_dir).metadata())


def test_missing_caches_and_write_once_prefixes(tmp_path, s3_prefix):
    with pytest.raises(datasetrt.RemoteError) as caught:
        datasetrt.Cache(f"{s3_prefix}/nothing-here", cache_dir=tmp_path / "lc")
    e = caught.value
    assert e.kind == "not_found" and e.retryable is False
    assert e.url == f"{s3_prefix}/nothing-here/manifest.json"
    local = published(tmp_path, s3_prefix)
    with pytest.raises(datasetrt.RemoteError) as caught:
        datasetrt.publish(local, s3_prefix)
    assert caught.value.kind == "already_published" and caught.value.url == s3_prefix
    with pytest.raises(ValueError, match="object-store URL"):
        datasetrt.publish(local, str(tmp_path / "elsewhere"))
    with pytest.raises(datasetrt.Error):
        datasetrt.publish(tmp_path / "lc-missing", f"{s3_prefix}/x")


def _keys(loader):
    out: list[tuple[int, int]] = []
    for item in loader:
        out.extend(tuple(x["key"]) for x in item)
    return out


def test_a_dataloader_over_urls_yields_what_it_yields_over_the_local_copies(tmp_path, s3_prefix):
    url_a = f"{s3_prefix}/a"
    local_a = published(tmp_path, url_a, name="a", n=90)
    local_b = write_cache(tmp_path / "b", 70, offset=90, max_shard_bytes=3000)
    kw: dict[str, Any] = dict(seed=5, epoch=1, batch_size=16, rank=0, world_size=1)
    expected = _keys(
        DataLoader(
            StreamingDataset([str(local_a), str(local_b)], **kw), batch_size=None, num_workers=0
        )
    )
    assert len(expected) == 160
    dataset = datasetrt.Dataset([url_a, local_b], cache_dir=tmp_path / "lc")
    ds = StreamingDataset(dataset, **kw)
    assert ds.paths == [url_a, str(local_b)] and ds.cache_dir == str(tmp_path / "lc")
    clone = pickle.loads(pickle.dumps(ds))
    assert clone._dataset is None and clone.paths == ds.paths and clone.cache_dir == ds.cache_dir
    items = []
    for item in DataLoader(ds, batch_size=None, num_workers=2):
        items.extend(item)
    assert [tuple(x["key"]) for x in items] == expected
    reference = datasetrt.Dataset([local_a, local_b])
    for x in items:
        assert bytes(x["payload"]) == bytes(reference[tuple(x["key"])].payload)
        assert x["metadata"] == reference[tuple(x["key"])].metadata
    # All-remote, fetched by range, also through worker processes.
    remote_only = StreamingDataset([url_a], cache_dir=tmp_path / "lc2", fetch="range", **kw)
    got = _keys(DataLoader(remote_only, batch_size=None, num_workers=2))
    assert got == _keys(
        DataLoader(StreamingDataset([str(local_a)], **kw), batch_size=None, num_workers=0)
    )
    assert not [f for f in files_under(tmp_path / "lc2") if "/shards/" in f]


def test_columnar_locations_send_remote_payloads_as_bytes(tmp_path, s3_prefix):
    url_a = f"{s3_prefix}/a"
    local_a = published(tmp_path, url_a, name="a", n=90)
    local_b = write_cache(tmp_path / "b", 70, offset=90, max_shard_bytes=3000)
    kw: dict[str, Any] = dict(
        seed=2, shuffle="full", batch_size=32, collate="columnar", rank=0, world_size=1
    )

    def items(loader):
        out: list[tuple[tuple[int, int], bytes]] = []
        for batch in loader:
            assert isinstance(batch, ColumnarBatch)
            keys = batch["keys"].tolist()
            out.extend((tuple(k), bytes(p)) for k, p in zip(keys, batch["payloads"]))
        return out

    expected = items(
        DataLoader(StreamingDataset([str(local_a), str(local_b)], **kw), batch_size=None)
    )
    mixed = [url_a, str(local_b)]
    for transfer in ("bytes", "locations"):
        ds = StreamingDataset(mixed, transfer=transfer, cache_dir=tmp_path / "lc", **kw)
        assert items(DataLoader(ds, batch_size=None, num_workers=2)) == expected, transfer
    # Only the local cache's shard files travel as locations.
    ds = StreamingDataset(mixed, transfer="locations", cache_dir=tmp_path / "lc", **kw)
    shards = set()
    for batch in DataLoader(ds, batch_size=None, num_workers=2):
        shards.update(batch.arrow.column("shard").dictionary.to_pylist())
    assert shards and all(pathlib.Path(s).parent.parent == local_b for s in shards)


def _read_all(url, cache_dir):
    cache = datasetrt.Cache(url, cache_dir=cache_dir)
    return [bytes(cache[i].payload) for i in range(len(cache))]


def test_a_forked_child_opens_and_reads_remote_caches(tmp_path, s3_prefix):
    import multiprocessing

    published(tmp_path, s3_prefix, n=30)
    # The parent's requests start its runtime before the fork; the child builds its own.
    parent = datasetrt.Cache(s3_prefix, cache_dir=tmp_path / "lc")
    assert bytes(parent[0].payload) == payload(0)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got = pool.apply_async(_read_all, (s3_prefix, str(tmp_path / "lc2"))).get(timeout=120)
    assert got == [payload(i) for i in range(30)]


def _big(i):
    return bytes([i % 251]) * (6 << 20)


def test_a_child_forked_while_a_download_publishes_reads_and_exits_cleanly(tmp_path, s3_prefix):
    # A checked shard is fsynced and renamed by a background thread; a child forked while it
    # runs has the thread's handle but not the thread, and must not wait for it. Shards of one
    # 6 MiB sample each, so the fsync is still running when the fork comes.
    from conftest import SCHEMA

    local = tmp_path / "big"
    with datasetrt.CacheWriter(local, source="big", schema=SCHEMA, max_shard_bytes=1 << 20) as w:
        for i in range(4):
            w.add(_big(i), row(i))
    datasetrt.publish(local, s3_prefix)
    for attempt in range(4):
        parent = datasetrt.Cache(s3_prefix, cache_dir=tmp_path / f"lc{attempt}", prefetch_shards=0)
        assert bytes(parent[attempt].payload) == _big(attempt)  # downloads it, publishes it
        pid = os.fork()
        if pid == 0:  # the child: read another shard, then drop the cache
            code = 1
            try:
                code = (
                    0 if bytes(parent[(attempt + 1) % 4].payload) == _big((attempt + 1) % 4) else 2
                )
                del parent
                import gc

                gc.collect()
            finally:
                os._exit(code)
        deadline = 60.0
        while deadline > 0:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            import time

            time.sleep(0.1)
            deadline -= 0.1
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung dropping its cache")
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
        del parent


# The remote options beyond cache_dir, cache_limit and fetch, each at a value other than its
# default (REMOTE_DEFAULTS, from the Rust RemoteOptions; test_defaults.py checks its values).
OPTIONS: dict[str, Any] = dict(
    prefetch_shards=0,
    read_while_downloading=False,
    attempts=3,
    first_backoff=0.25,
    wait_for_room=7.5,
)
DEFAULTS: dict[str, Any] = dict(datasetrt._native.REMOTE_DEFAULTS)


def options_of(obj):
    return {name: getattr(obj, name) for name in OPTIONS}


@pytest.mark.parametrize(
    "option, value, error, message",
    [
        ("prefetch_shards", -1, ValueError, "prefetch_shards must be >= 0"),
        ("prefetch_shards", True, TypeError, "prefetch_shards must be an int, not bool"),
        ("prefetch_shards", 2.0, TypeError, "prefetch_shards must be an int, not float"),
        ("prefetch_shards", "2", TypeError, "prefetch_shards must be an int, not str"),
        ("attempts", 0, ValueError, "attempts must be >= 1"),
        ("attempts", -3, ValueError, "attempts must be >= 1"),
        ("attempts", 1 << 32, ValueError, "attempts must be at most"),
        ("attempts", False, TypeError, "attempts must be an int, not bool"),
        ("attempts", 5.0, TypeError, "attempts must be an int, not float"),
        ("read_while_downloading", 1, TypeError, "read_while_downloading must be a bool, not int"),
        (
            "read_while_downloading",
            "yes",
            TypeError,
            "read_while_downloading must be a bool, not str",
        ),
        ("first_backoff", -0.5, ValueError, "first_backoff must be >= 0 seconds"),
        (
            "first_backoff",
            float("nan"),
            ValueError,
            "first_backoff must be a finite number of seconds",
        ),
        (
            "first_backoff",
            float("inf"),
            ValueError,
            "first_backoff must be a finite number of seconds",
        ),
        ("first_backoff", 10.5, ValueError, "first_backoff must be at most 10 seconds"),
        ("first_backoff", True, TypeError, "first_backoff must be a number of seconds"),
        ("first_backoff", "0.1", TypeError, "first_backoff must be a number of seconds"),
        ("wait_for_room", -1, ValueError, "wait_for_room must be >= 0 seconds"),
        (
            "wait_for_room",
            float("nan"),
            ValueError,
            "wait_for_room must be a finite number of seconds",
        ),
        (
            "wait_for_room",
            float("-inf"),
            ValueError,
            "wait_for_room must be a finite number of seconds",
        ),
        ("wait_for_room", 1e30, ValueError, "wait_for_room is too large"),
        ("wait_for_room", [600], TypeError, "wait_for_room must be a number of seconds"),
    ],
)
def test_bad_remote_options_raise_naming_the_option(tmp_path, option, value, error, message):
    local = write_cache(tmp_path / "c", 3)
    # Checked before anything is opened (no request is made), for URLs and local paths alike.
    for open_one in (
        lambda **kw: datasetrt.Cache("s3://bucket/x", **kw),
        lambda **kw: datasetrt.Dataset(["s3://bucket/x"], **kw),
        lambda **kw: datasetrt.Cache(local, **kw),
        lambda **kw: datasetrt.Dataset([local], **kw),
        lambda **kw: StreamingDataset([str(local)], rank=0, world_size=1, **kw),
    ):
        with pytest.raises(error, match=message):
            open_one(**{option: value})


def test_remote_options_are_accepted_and_ignored_for_local_caches(tmp_path):
    local = write_cache(tmp_path / "c", 20)
    cache = datasetrt.Cache(local, cache_dir=tmp_path / "unused", **OPTIONS)
    assert not cache.is_remote and [bytes(cache[i].payload) for i in range(20)] == [
        payload(i) for i in range(20)
    ]
    # Ints where seconds are expected, zero, and None (the default) are fine too.
    dataset = datasetrt.Dataset(
        [local], first_backoff=0, wait_for_room=0, attempts=1, prefetch_shards=None
    )
    assert (
        dataset.first_backoff,
        dataset.wait_for_room,
        dataset.attempts,
        dataset.prefetch_shards,
    ) == (0.0, 0.0, 1, 8)
    assert bytes(dataset[(dataset.cache_ids[0], 7)].payload) == payload(7)
    assert not (tmp_path / "unused").exists()
    # The defaults, as the signature shows them.
    assert options_of(datasetrt.Dataset([local])) == DEFAULTS
    for cls in (datasetrt.Cache, datasetrt.Dataset):
        parameters = inspect.signature(cls).parameters
        assert {name: parameters[name].default for name in DEFAULTS} == DEFAULTS
        assert all(parameters[name].kind is inspect.Parameter.KEYWORD_ONLY for name in DEFAULTS)


def test_a_pickled_dataset_keeps_every_remote_option(tmp_path, s3_prefix):
    url = f"{s3_prefix}/a"
    published(tmp_path, url, name="a", n=40)
    local_b = write_cache(tmp_path / "b", 30, offset=40)
    dataset = datasetrt.Dataset(
        [url, local_b],
        cache_dir=tmp_path / "lc",
        cache_limit="10MiB",
        fetch="range",
        validate_cache=True,
        **OPTIONS,
    )
    assert options_of(dataset) == OPTIONS
    clone = pickle.loads(pickle.dumps(dataset))
    assert options_of(clone) == OPTIONS
    assert (clone.paths, clone.cache_ids) == (dataset.paths, dataset.cache_ids)
    assert (clone.cache_dir, clone.cache_limit, clone.fetch, clone.validate_cache) == (
        str(tmp_path / "lc"),
        10 << 20,
        "range",
        True,
    )
    keys = [(cid, s) for cid, n in zip(clone.cache_ids, (40, 30)) for s in range(n)]
    assert [bytes(s.payload) for s in clone.read_many(keys)] == [payload(i) for i in range(70)]
    # A pickle made before these options existed carries five arguments: the rest default.
    old = datasetrt._reopen_dataset([url, str(local_b)], False, str(tmp_path / "lc"), None, "whole")
    assert options_of(old) == DEFAULTS
    # StreamingDataset takes them from the Dataset (an explicit argument wins), carries them
    # through pickling and opens its caches with them.
    ds = StreamingDataset(dataset, attempts=2, rank=0, world_size=1)
    assert options_of(ds) == {**OPTIONS, "attempts": 2}
    ds_clone = pickle.loads(pickle.dumps(ds))
    assert ds_clone._dataset is None and options_of(ds_clone) == options_of(ds)
    assert options_of(ds_clone._open()) == options_of(ds)
    assert options_of(StreamingDataset([str(local_b)], rank=0, world_size=1)) == DEFAULTS


def test_read_while_downloading_without_prefetch_reads_a_remote_cache_byte_exact(
    tmp_path, s3_prefix
):
    local_dir = published(tmp_path, s3_prefix)
    kw: dict[str, Any] = dict(
        prefetch_shards=0,
        read_while_downloading=True,
        attempts=2,
        first_backoff=0.01,
        wait_for_room=30,
    )
    # Random access: the first records come by range requests while their shards download.
    cache = datasetrt.Cache(s3_prefix, cache_dir=tmp_path / "lc", **kw)
    assert cache.is_remote and len(cache) == N
    for i in (N - 1, 0, 57, 58, 3, N // 2, 1, 2, 4):
        s = cache[i]
        assert bytes(s.payload) == payload(i) and s.metadata == row(i)
    assert [bytes(s.payload) for s in cache.read_many(range(N))] == [payload(i) for i in range(N)]
    # The same through a fresh local cache, a dataset and the Rust loader.
    dataset = datasetrt.Dataset([s3_prefix], cache_dir=tmp_path / "lc2", **kw)
    loaded = {s.key: bytes(s.payload) for s in datasetrt.Loader(dataset, seed=4, workers=2)}
    assert loaded == {(dataset.cache_ids[0], i): payload(i) for i in range(N)}
    # Whatever was downloaded whole matches the published shards.
    del cache, dataset
    for cache_dir in (tmp_path / "lc", tmp_path / "lc2"):
        for shard in pathlib.Path(cache_dir).glob("*/shards/*.bin"):
            if shard.name.startswith(".shard-cache-"):  # the cache's seals and partials
                continue
            assert shard.read_bytes() == (local_dir / "shards" / shard.name).read_bytes()


def test_hint_ahead_reaches_past_the_downloads_in_flight_however_dense_the_shards(
    tmp_path, s3_prefix
):
    # About 400 samples per shard and 24 shards: a chunk of 64 steps lies in one shard, and a
    # hint of only the chunk and the next two would name one or two. `hint_ahead` looks on,
    # so the cache downloads `prefetch_shards` (8) shards ahead at once.
    local_dir = write_cache(tmp_path / "dense", 24 * 400, max_shard_bytes=400 * 400)
    shards = len(datasetrt.Cache(local_dir).manifest["shards"])
    assert shards >= 16, shards
    datasetrt.publish(local_dir, s3_prefix)
    cache_dir = tmp_path / "local-cache"
    dataset = datasetrt.Dataset([s3_prefix], cache_dir=cache_dir)
    plan = datasetrt.RankPlan(dataset, shuffle="sequential")
    plan.hint_ahead(0, 64)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        local = [
            p
            for p in pathlib.Path(cache_dir).rglob("*.bin")
            if "shards" in p.parts and not p.name.startswith(".shard-cache-")
        ]
        if len(local) >= 8:
            break
        time.sleep(0.05)
    assert len(local) >= 8, sorted(p.name for p in local)
    plan.hint_ahead(10**9, 10**9 + 5)  # past the end: nothing to hint, no error


def test_a_cache_dir_of_documents_is_refused_and_left_alone(tmp_path, s3_prefix):
    published(tmp_path, s3_prefix)
    docs = tmp_path / "docs"
    (docs / "figures").mkdir(parents=True)
    (docs / "thesis.tex").write_bytes(b"x" * 3_000_000)
    (docs / "draft.partial").write_bytes(b"half")
    (docs / "figures" / "plot.png").write_bytes(b"\x07" * 2_000_000)

    def files():
        return {p: p.read_bytes() for p in sorted(docs.rglob("*")) if p.is_file()}

    before = files()
    for open_ in (
        lambda: datasetrt.Cache(s3_prefix, cache_dir=docs, cache_limit="2MiB"),
        lambda: datasetrt.Dataset([s3_prefix], cache_dir=docs, cache_limit="2MiB"),
    ):
        with pytest.raises(datasetrt.RemoteError) as caught:
            open_()
        assert caught.value.kind == "local_cache" and caught.value.retryable is False
        assert "not empty" in str(caught.value) and ".shard-cache-root" in str(caught.value)
    assert files() == before


def test_cache_access_group_shares_the_local_cache_with_the_group_only(tmp_path, s3_prefix):
    published(tmp_path, s3_prefix)
    group_dir, private_dir = tmp_path / "group", tmp_path / "private"
    dataset = datasetrt.Dataset([s3_prefix], cache_dir=group_dir, cache_access="group")
    assert dataset.cache_access == "group"
    assert bytes(dataset[(dataset.cache_ids[0], N - 1)].payload) == payload(N - 1)
    modes = {
        p.relative_to(group_dir).as_posix(): stat.S_IMODE(p.stat().st_mode)
        for p in [group_dir, *group_dir.rglob("*")]
    }
    assert modes["."] == 0o2770
    assert {m for p, m in modes.items() if (group_dir / p).is_dir()} == {0o2770}
    shards = [p for p in modes if p.endswith(".bin") and ".shard-cache-" not in p]
    assert shards and {modes[p] for p in shards} == {0o640}
    # It travels with a pickle, and a directory made one way is refused the other way.
    assert pickle.loads(pickle.dumps(dataset)).cache_access == "group"
    with pytest.raises(datasetrt.RemoteError, match="group") as caught:
        datasetrt.Dataset([s3_prefix], cache_dir=group_dir)
    assert caught.value.kind == "local_cache"
    datasetrt.Cache(s3_prefix, cache_dir=private_dir)[0]
    assert stat.S_IMODE(private_dir.stat().st_mode) == 0o700
    with pytest.raises(datasetrt.RemoteError):
        datasetrt.Cache(s3_prefix, cache_dir=private_dir, cache_access="group")
    with pytest.raises(ValueError, match="cache_access"):
        datasetrt.Cache(s3_prefix, cache_dir=private_dir, cache_access="world")
