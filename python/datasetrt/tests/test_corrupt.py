"""Every corruption the Rust integrity tests (crates/dsrt-reader/tests/integrity.rs) know,
made from Python: each raises the matching exception, naming the cache; none crashes."""

import json
import struct

import pytest

import datasetrt

from conftest import payload, write_cache

COUNT = 12


@pytest.fixture
def fresh(tmp_path):
    path = write_cache(tmp_path / "c", COUNT, max_shard_bytes=1500)
    datasetrt.Cache(path, validate_cache=True)
    return path


@pytest.fixture
def fresh_lz4(tmp_path):
    return write_cache(tmp_path / "c", COUNT, compression="lz4", max_shard_bytes=1500)


def edit_manifest(path, edit):
    m = json.loads((path / "manifest.json").read_bytes())
    edit(m)
    (path / "manifest.json").write_text(json.dumps(m, indent=2))


def rows(path):
    data = (path / "index.bin").read_bytes()
    return [list(struct.unpack_from("<QQQ", data, 24 * i)) for i in range(len(data) // 24)]


def write_rows(path, rs):
    (path / "index.bin").write_bytes(b"".join(struct.pack("<QQQ", *r) for r in rs))


def patch_record(path, sample, delta, data):
    shard, offset, _ = rows(path)[sample]
    f = path / "shards" / f"{shard:06}.bin"
    b = bytearray(f.read_bytes())
    b[offset + delta : offset + delta + len(data)] = data
    f.write_bytes(bytes(b))


def open_err(path, exc, kind, validate_cache=False):
    with pytest.raises(exc) as err:
        datasetrt.Cache(path, validate_cache=validate_cache)
    e = err.value
    assert isinstance(e, datasetrt.CacheError) and isinstance(e, datasetrt.Error)
    assert e.path == str(path) and str(path) in str(e)
    assert e.kind == kind and e.reason
    return e


def test_missing_manifest_is_an_incomplete_cache(fresh):
    (fresh / "manifest.json").unlink()
    open_err(fresh, datasetrt.IncompleteCacheError, "incomplete")


def test_a_missing_path_is_not_a_cache_directory(tmp_path):
    open_err(tmp_path / "nowhere", datasetrt.CacheError, "not_a_directory")
    (tmp_path / "file").write_bytes(b"x")
    open_err(tmp_path / "file", datasetrt.CacheError, "not_a_directory")


def test_unsupported_version(fresh):
    edit_manifest(fresh, lambda m: m.update(format_version=4))
    e = open_err(fresh, datasetrt.CorruptCacheError, "manifest")
    assert e.file == "manifest.json"


def test_v2_with_a_cache_id(fresh):
    edit_manifest(fresh, lambda m: m.update(format_version=2))
    open_err(fresh, datasetrt.CorruptCacheError, "manifest")


def test_sample_count_against_index_rows(fresh):
    edit_manifest(fresh, lambda m: m.update(sample_count=COUNT + 1))
    open_err(fresh, datasetrt.CorruptCacheError, "index")


def test_index_rows_against_sample_count(fresh):
    write_rows(fresh, rows(fresh)[:-1])
    open_err(fresh, datasetrt.CorruptCacheError, "index")


def test_metadata_rows_against_sample_count(fresh, tmp_path):
    other = write_cache(tmp_path / "fewer", COUNT - 2)
    (fresh / "metadata.arrow").write_bytes((other / "metadata.arrow").read_bytes())
    open_err(fresh, datasetrt.CorruptCacheError, "metadata")


def test_index_size_not_a_multiple_of_24(fresh):
    with open(fresh / "index.bin", "ab") as f:
        f.write(b"\0")
    open_err(fresh, datasetrt.CorruptCacheError, "index")


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda r: r.__setitem__(0, 99),  # unknown shard
        lambda r: r.__setitem__(1, r[1] + 100_000),  # past the shard's end
        lambda r: r.__setitem__(2, 1 << 63),  # hostile length
        # offset + length overflows
        lambda r: (r.__setitem__(1, (1 << 64) - 4), r.__setitem__(2, 8)),
    ],
)
def test_index_row_out_of_bounds_unknown_shard_and_hostile_lengths(fresh, corrupt):
    rs = rows(fresh)
    corrupt(rs[5])
    write_rows(fresh, rs)
    open_err(fresh, datasetrt.CorruptCacheError, "index")


def test_missing_shard(fresh):
    (fresh / "shards" / "000001.bin").unlink()
    e = open_err(fresh, datasetrt.CorruptCacheError, "missing_shard")
    assert e.file == "shards/000001.bin"


def test_shard_length_mismatch(fresh):
    with open(fresh / "shards" / "000000.bin", "ab") as f:
        f.write(b"\0")
    e = open_err(fresh, datasetrt.CorruptCacheError, "shard_length")
    assert e.file == "shards/000000.bin"


def test_shard_checksum_mismatch_is_caught_only_with_validate_cache(fresh):
    shard, offset, length = rows(fresh)[4]
    f = fresh / "shards" / f"{shard:06}.bin"
    b = bytearray(f.read_bytes())
    b[offset + length - 1] ^= 0xFF
    f.write_bytes(bytes(b))
    e = open_err(fresh, datasetrt.ChecksumError, "checksum", validate_cache=True)
    assert e.file == f"shards/{shard:06}.bin"
    # Without validation the flipped byte is served: the documented cost of skipping hashes.
    p = datasetrt.Cache(fresh)[4].payload
    assert p[-1] == payload(4)[-1] ^ 0xFF


def test_index_checksum_mismatch(fresh):
    rs = rows(fresh)
    rs[0], rs[1] = rs[1], rs[0]
    write_rows(fresh, rs)
    e = open_err(fresh, datasetrt.ChecksumError, "checksum", validate_cache=True)
    assert e.file == "index.bin"


def test_metadata_checksum_mismatch(fresh):
    edit_manifest(fresh, lambda m: m.update(metadata_sha256="0" * 64))
    e = open_err(fresh, datasetrt.ChecksumError, "checksum", validate_cache=True)
    assert e.file == "metadata.arrow"
    datasetrt.Cache(fresh)  # no hashing without validate_cache


def test_manifest_schema_against_arrow_schema(fresh):
    edit_manifest(fresh, lambda m: m["metadata_schema"][2].update(type="int64"))
    open_err(fresh, datasetrt.CorruptCacheError, "metadata")


def test_embedded_metadata_mismatch_at_sample_read(fresh):
    # The envelope starts with {"label":7 for sample 7; make it 8.
    patch_record(fresh, 7, 8 + len(b'{"label":'), b"8")
    cache = datasetrt.Cache(fresh)
    with pytest.raises(datasetrt.CorruptCacheError) as err:
        cache[7]
    e = err.value
    assert e.kind == "record" and e.sample == 7 and e.path == str(fresh)
    assert "label" in e.reason
    with pytest.raises(datasetrt.CorruptCacheError):
        cache.read_many([6, 7])
    assert bytes(cache[6].payload) == payload(6)


def test_bad_lz4_payload(fresh_lz4):
    shard, offset, _ = rows(fresh_lz4)[3]
    data = (fresh_lz4 / "shards" / f"{shard:06}.bin").read_bytes()
    (json_len,) = struct.unpack_from("<Q", data, offset)
    patch_record(fresh_lz4, 3, 8 + json_len, b"\xff\xff\xff\xff")  # claims 4 GiB
    cache = datasetrt.Cache(fresh_lz4)
    with pytest.raises(datasetrt.CorruptCacheError) as err:
        cache[3]
    assert err.value.kind == "record" and err.value.sample == 3


@pytest.mark.parametrize("hostile", [1000, 1 << 63, (1 << 64) - 1])
def test_json_length_past_the_record_end_and_hostile(fresh, hostile):
    patch_record(fresh, 2, 0, struct.pack("<Q", hostile))
    with pytest.raises(datasetrt.CorruptCacheError) as err:
        datasetrt.Cache(fresh)[2]
    assert err.value.kind == "record" and err.value.sample == 2


@pytest.mark.parametrize(
    "data", [b"", b"{", b"\x89PNG\r\n\x1a\n", b"[1,2,3]", b'{"format_version": 3}']
)
def test_corrupt_manifest_json(fresh, data):
    (fresh / "manifest.json").write_bytes(data)
    open_err(fresh, datasetrt.CorruptCacheError, "manifest")


def test_foreign_metadata_file(fresh):
    (fresh / "metadata.arrow").write_bytes(b"PAR1 not arrow")
    open_err(fresh, datasetrt.CorruptCacheError, "metadata")


def test_a_corrupt_cache_in_a_dataset_raises_the_same(fresh, tmp_path):
    good = write_cache(tmp_path / "good", 3)
    (fresh / "manifest.json").unlink()
    with pytest.raises(datasetrt.IncompleteCacheError):
        datasetrt.Dataset([good, fresh])
