"""Round trips through the public Python API, the golden fixtures, and cache.metadata()."""

import itertools
import json
import random
import struct

import pyarrow as pa
import pyarrow.ipc
import pytest

import datasetrt
import datasetrt.torch

from conftest import FIXTURES, SCHEMA, payload, row, write_cache


@pytest.mark.parametrize("compression,version", list(itertools.product(["none", "lz4"], [2, 3])))
def test_round_trip(tmp_path, compression, version):
    path = write_cache(
        tmp_path / "c", 120, compression=compression, version=version, max_shard_bytes=3000
    )
    cache = datasetrt.Cache(path, validate_cache=True)
    assert len(cache) == 120
    assert cache.format_version == version
    manifest = cache.manifest
    assert manifest["format_version"] == version
    assert ("cache_id" in manifest) == (version == 3)
    if version == 3:
        assert manifest["cache_id"] == datasetrt.cache_id_for_source("c")
    assert len(manifest["shards"]) > 1
    assert manifest["shards"][0]["compression"]["algo"] == compression
    for i in range(120):
        s = cache[i]
        assert s.sample_id == i
        assert bytes(s.payload) == payload(i)
        assert memoryview(s.payload).nbytes == len(payload(i))
        assert s.metadata == row(i)
    assert cache[-1].sample_id == 119 and cache[-120].sample_id == 0
    with pytest.raises(IndexError):
        cache[120]
    with pytest.raises(IndexError):
        cache[-121]
    many = cache.read_many([5, -1, 0, 5])
    assert [s.sample_id for s in many] == [5, 119, 0, 5]
    assert [bytes(s.payload) for s in many] == [payload(5), payload(119), payload(0), payload(5)]
    with pytest.raises(IndexError):
        cache.read_many([0, 500])
    assert cache.schema == pa.schema(
        [
            pa.field("label", pa.int64(), nullable=False),
            pa.field("score", pa.float64(), nullable=False),
            pa.field("flag", pa.bool_(), nullable=False),
            pa.field("name", pa.string(), nullable=True),
        ]
    )


def test_writer_accepts_a_pyarrow_schema_and_kwargs(tmp_path):
    schema = pa.schema(
        [pa.field("label", pa.int64(), nullable=False), pa.field("caption", pa.string())]
    )
    w = datasetrt.CacheWriter(tmp_path / "c", source="s", schema=schema, compression="lz4")
    assert w.add(b"a" * 100, label=1, caption="x") == 0
    assert w.add(bytearray(b"b" * 10), {"label": 2}, caption=None) == 1
    assert w.add(memoryview(b"ccc"), {"label": 3, "caption": "z"}) == 2
    summary = w.finish()
    assert summary["samples"] == 3 and summary["cache_id"] == datasetrt.cache_id_for_source("s")
    cache = datasetrt.Cache(tmp_path / "c")
    assert cache.schema == schema
    assert [bytes(s.payload) for s in cache.read_many([0, 1, 2])] == [b"a" * 100, b"b" * 10, b"ccc"]
    assert cache[1].metadata == {"label": 2, "caption": None}


def test_a_bad_row_is_refused_and_the_writer_stays_usable(tmp_path):
    with datasetrt.CacheWriter(tmp_path / "c", source="s", schema=SCHEMA) as w:
        with pytest.raises(datasetrt.WriteError) as err:
            w.add(b"x", label=1, score=1.0, flag=True)  # name is missing
        assert err.value.kind == "row" and err.value.path == str(tmp_path / "c")
        assert "name" in err.value.reason
        with pytest.raises(TypeError):
            w.add(b"x", label="one", score=1.0, flag=True, name=None)
        w.add(b"x", row(0))
    assert len(datasetrt.Cache(tmp_path / "c")) == 1


def test_leaving_the_block_by_an_exception_publishes_nothing(tmp_path):
    with pytest.raises(RuntimeError):
        with datasetrt.CacheWriter(tmp_path / "c", source="s", schema=SCHEMA) as w:
            w.add(payload(0), row(0))
            raise RuntimeError("boom")
    assert not (tmp_path / "c" / "manifest.json").exists()
    with pytest.raises(datasetrt.IncompleteCacheError) as err:
        datasetrt.Cache(tmp_path / "c")
    assert err.value.path == str(tmp_path / "c")
    with pytest.raises(ValueError):
        w.add(b"late", row(1))


def test_writer_errors_name_the_path(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "junk").write_bytes(b"x")
    with pytest.raises(datasetrt.WriteError) as err:
        datasetrt.CacheWriter(tmp_path / "c", source="s", schema=SCHEMA)
    assert err.value.kind == "target_not_empty" and err.value.path == str(tmp_path / "c")
    with pytest.raises(ValueError):
        datasetrt.CacheWriter(tmp_path / "d", source="s", schema=SCHEMA, compression="zip")
    with pytest.raises(ValueError):
        datasetrt.CacheWriter(tmp_path / "e", source="s", schema={"a": "int32"})


def fixture_payload(name, i):
    """crates/dsrt-atlas-fixtures `cache_payload`, reimplemented independently."""
    tag = f"{name}:{i};".encode()
    n = (i * 53) % 230
    return (tag * (n // len(tag) + 1))[:n]


def fixture_row(i):
    return {
        "label": i,
        "score": None if i % 3 == 0 else i / 8.0,
        "caption": None if i % 5 == 4 else f"sample {i} ünïcode",
        "flag": i % 2 == 0,
    }


@pytest.mark.parametrize("name,count,version", [("v2", 6, 2), ("v3", 7, 3), ("lz4", 24, 3)])
def test_golden_fixtures_written_by_rust_read_byte_for_byte(name, count, version):
    path = FIXTURES / name
    cache = datasetrt.Cache(path, validate_cache=True)
    assert len(cache) == count and cache.format_version == version
    assert cache.manifest == json.loads((path / "manifest.json").read_bytes())
    index = (path / "index.bin").read_bytes()
    for i in range(count):
        s = cache[i]
        assert bytes(s.payload) == fixture_payload(name, i)
        assert s.metadata == fixture_row(i)
        if name != "lz4":
            # The record in the shard, parsed by hand: u64 json_len, JSON, payload.
            shard, offset, length = struct.unpack_from("<QQQ", index, 24 * i)
            record = (path / "shards" / f"{shard:06}.bin").read_bytes()[offset : offset + length]
            (json_len,) = struct.unpack_from("<Q", record)
            assert bytes(s.payload) == record[8 + json_len :]


@pytest.mark.parametrize("fixture", ["v2", "v3", "lz4", "dataset/caches/a"])
def test_metadata_equals_what_pyarrow_reads(fixture):
    path = FIXTURES / fixture
    expected = pa.ipc.open_file(str(path / "metadata.arrow")).read_all()
    table = datasetrt.Cache(path).metadata()
    assert isinstance(table, pa.Table)
    assert table.schema == expected.schema
    assert table.equals(expected)


def test_metadata_of_a_new_cache_equals_pyarrow(tmp_path):
    path = write_cache(tmp_path / "c", 300)
    expected = pa.ipc.open_file(str(path / "metadata.arrow")).read_all()
    assert datasetrt.Cache(path).metadata().equals(expected)
    assert expected.num_rows == 300


def _mapping_of(address: int) -> str | None:
    """The file mapped at ``address`` in this process (from /proc/self/maps), if any."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if start <= address < end:
                return fields[5].strip() if len(fields) == 6 else None
    return None


def test_metadata_is_the_mapped_file_not_a_copy(tmp_path):
    n = 60_000
    with datasetrt.CacheWriter(
        tmp_path / "c", source="c", schema={"label": "int64", "score": "float64"}
    ) as w:
        for i in range(n):
            w.add(b"x", label=i, score=i / 2)
    cache = datasetrt.Cache(tmp_path / "c")
    before = pa.total_allocated_bytes()
    table = cache.metadata()
    # pyarrow allocated nothing for 2 x 8 x 60,000 bytes of columns: they are the file's.
    assert pa.total_allocated_bytes() - before < 64 * 1024
    assert table.num_rows == n and table.column("label").to_pylist()[-3:] == [n - 3, n - 2, n - 1]
    for chunk in table.column("score").chunks:
        values = chunk.buffers()[1]
        assert str(_mapping_of(values.address)).endswith("/c/metadata.arrow")
    # The table keeps the file mapped after the cache is gone.
    del cache
    import gc

    gc.collect()
    assert table.column("score").to_pylist()[:3] == [0.0, 0.5, 1.0]


def test_metadata_is_lazy_and_repr(cache_path):
    cache = datasetrt.Cache(cache_path)
    s = cache[3]
    assert s.key is None and s.cache_id is None and not s.padding
    assert s.metadata == row(3) and s.metadata is not s.metadata
    assert "sample_id=3" in repr(s) and "Cache(" in repr(cache)


def test_help_describes_every_public_class_and_function():
    for name in datasetrt.__all__:
        obj = getattr(datasetrt, name)
        if callable(obj):
            assert obj.__doc__ and len(obj.__doc__) > 20, name
    assert datasetrt.torch.StreamingDataset.__doc__
    assert issubclass(datasetrt.CacheError, datasetrt.Error)
    assert issubclass(datasetrt.IncompleteCacheError, datasetrt.CacheError)
    assert issubclass(datasetrt.ManifestUpdateError, datasetrt.Error)
    assert issubclass(datasetrt.WriteError, datasetrt.Error)
    assert issubclass(datasetrt.Error, Exception)


def test_uncompressed_payloads_are_zero_copy_views_that_outlive_the_cache(tmp_path):
    plain = datasetrt.Cache(write_cache(tmp_path / "plain", 20))
    view = plain[7].payload
    assert isinstance(view, memoryview) and view.readonly and view.format == "B"
    many = plain.read_many([3, 4])
    assert all(isinstance(s.payload, memoryview) for s in many)
    del plain, many
    import gc

    gc.collect()
    assert bytes(view) == payload(7)  # the view keeps the shard mapping alive
    packed = datasetrt.Cache(write_cache(tmp_path / "lz4", 20, compression="lz4"))
    assert isinstance(packed[7].payload, bytes) and packed[7].payload == payload(7)


@pytest.mark.parametrize("compression", ["none", "lz4"])
def test_io_on_the_adding_thread_writes_the_same_bytes(tmp_path, files_below, compression):
    """``io_threads=False`` (hash and write in the thread that adds) is a choice of where the
    work runs, never of what is written: small and large payloads, several shards."""
    sizes = [0, 7, 20_000, 300_000, 3, 1 << 20, 5_000] * 4
    outs = []
    for io_threads in (True, False):
        out = tmp_path / f"threads-{io_threads}"
        with datasetrt.CacheWriter(
            out,
            source="io",
            schema={"n": "int64"},
            compression=compression,
            max_shard_bytes=700_000,
            io_threads=io_threads,
        ) as writer:
            for n, size in enumerate(sizes):
                # Incompressible, so LZ4 shards rotate as plain ones do.
                writer.add(random.Random(n).randbytes(size), n=n)
        outs.append(out)
    assert len(list((outs[0] / "shards").iterdir())) > 3
    assert files_below(outs[0]) == files_below(outs[1])
