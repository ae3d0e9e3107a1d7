"""Test 5: a damaged collection, of each kind the Rust tests know (crates/atlas-reader/tests,
crates/*fuzz-targets/tests), raises the typed exception with the path and the reason."""

import struct

import numpy as np
import pytest

import atlas_collections as ac

from conftest import write_collection

TRAILER = 16


@pytest.fixture
def coll(tmp_path):
    path = tmp_path / "coll"
    write_collection(path, 3)
    return path


def container(path):
    return bytearray((path / "data.atlas").read_bytes())


def replace(path, data):
    (path / "data.atlas").write_bytes(bytes(data))


def footer_size(data):
    return struct.unpack_from("<Q", data, len(data) - TRAILER)[0]


def assert_names_path(error, path):
    assert error.path is not None and str(path) in error.path
    assert error.reason
    assert not getattr(error, "retryable", False)


def test_a_directory_without_data_atlas_is_not_a_collection(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ac.NotACollectionError) as info:
        ac.open(tmp_path / "empty")
    assert_names_path(info.value, tmp_path / "empty")


def test_a_wrong_trailer_magic_is_not_a_collection(coll):
    data = container(coll)
    data[-4:] = b"NOPE"
    replace(coll, data)
    with pytest.raises(ac.NotACollectionError) as info:
        ac.open(coll)
    assert_names_path(info.value, coll)


def test_a_truncated_container_is_not_a_collection(coll):
    data = container(coll)
    replace(coll, data[: len(data) // 2])
    with pytest.raises(ac.NotACollectionError):
        ac.open(coll)


def test_another_format_version_is_unsupported(coll):
    data = container(coll)
    struct.pack_into("<I", data, len(data) - 8, 9)
    struct.pack_into("<I", data, 4, 9)
    replace(coll, data)
    with pytest.raises(ac.UnsupportedVersionError) as info:
        ac.open(coll)
    assert (info.value.found, info.value.expected) == (9, 8)
    assert_names_path(info.value, coll)


@pytest.mark.parametrize("size", [0, 2**40])
def test_an_impossible_footer_size_is_corrupt(coll, size):
    data = container(coll)
    struct.pack_into("<Q", data, len(data) - TRAILER, size)
    replace(coll, data)
    with pytest.raises(ac.CorruptCollectionError) as info:
        ac.open(coll)
    assert info.value.field == "trailer.footer_size"
    assert_names_path(info.value, coll)


def test_a_damaged_footer_frame_is_corrupt(coll):
    data = container(coll)
    start = len(data) - TRAILER - footer_size(data)
    for i in range(start + 4, len(data) - TRAILER):
        data[i] ^= 0x5A
    replace(coll, data)
    with pytest.raises(ac.CorruptCollectionError) as info:
        ac.open(coll)
    assert_names_path(info.value, coll)


def test_segments_that_no_longer_tile_are_corrupt(coll):
    data = container(coll)
    del data[100:200]  # bytes before the footer cut out; the trailer survives
    replace(coll, data)
    with pytest.raises(ac.CorruptCollectionError):
        ac.open(coll)


def test_a_damaged_segment_is_corrupt_on_read(coll):
    data = container(coll)
    first_segment_trailer = bytes(data).find(b"ARRF")
    data[first_segment_trailer : first_segment_trailer + 4] = b"XXXX"
    replace(coll, data)
    c = ac.open(coll)  # the footer is intact
    with pytest.raises(ac.CorruptCollectionError) as info:
        c["ds_000"]["t2m"][:]
    assert "segment" in info.value.field
    assert_names_path(info.value, coll)


def test_a_damaged_block_is_corrupt_on_read(coll):
    data = container(coll)
    # Flip the data bytes of the first segment (its compressed blocks come first).
    for i in range(8 + 16, 8 + 400):
        data[i] ^= 0xFF
    replace(coll, data)
    c = ac.open(coll)
    with pytest.raises(ac.CorruptCollectionError):
        c["ds_000"]["t2m"][:]


@pytest.mark.parametrize("mask", [b"JUNKJUNKJUNK", b"ATLM" + struct.pack("<II", 2, 0)])
def test_a_mask_that_is_not_a_mask_is_corrupt(coll, mask):
    (coll / "deleted.mask").write_bytes(mask)
    with pytest.raises(ac.CorruptCollectionError) as info:
        ac.open(coll)
    assert info.value.field == "deleted.mask"


def test_a_lenient_mask_drops_what_it_cannot_use(coll):
    # Ordinals past the count and non-increasing entries are dropped with a warning, not raised.
    (coll / "deleted.mask").write_bytes(b"ATLM" + struct.pack("<IIIII", 1, 3, 1, 1, 99))
    assert ac.open(coll).names == ["ds_000", "ds_002"]


def test_every_exception_is_an_atlas_error_with_path_and_reason(coll):
    for cls in (
        ac.NotACollectionError,
        ac.UnsupportedVersionError,
        ac.CorruptCollectionError,
        ac.StorageError,
        ac.DatasetNotFoundError,
        ac.ArrayNotFoundError,
        ac.InvalidNameError,
        ac.ImportRefusedError,
        ac.AtlasPanicError,
    ):
        assert issubclass(cls, ac.AtlasError)
    with pytest.raises(ac.ArrayNotFoundError) as info:
        ac.open(coll)["ds_000"]["nope"]
    assert (info.value.dataset, info.value.name) == ("ds_000", "nope")
    with pytest.raises(ac.SelectionError):
        ac.open(coll)["ds_000"]["t2m"][99, 0]


def test_a_refused_store_connection_is_a_retryable_storage_error(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_MAX_RETRIES", "0")
    monkeypatch.setenv("AWS_RETRY_TIMEOUT", "1s")
    with pytest.raises(ac.StorageError) as info:
        ac.open("s3://bucket/prefix")
    assert info.value.retryable is True
    assert info.value.path is not None and "s3://bucket/prefix" in info.value.path


def test_a_rust_panic_is_a_python_exception_and_the_module_keeps_working(coll):
    from atlas_collections import _atlas

    with pytest.raises(ac.AtlasPanicError) as info:
        _atlas._testing.panic_for_tests("boom")
    assert "boom" in str(info.value) and info.value.reason == "boom"
    assert ac.open(coll).names == ["ds_000", "ds_001", "ds_002"]


def test_reads_release_the_gil_so_threads_share_a_collection(coll):
    from concurrent.futures import ThreadPoolExecutor

    c = ac.open(coll)
    want = {n: c[n]["t2m"][:] for n in c.names}
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda n: (n, c[n]["t2m"][2:9, ::2]), c.names * 20))
    for n, a in got:
        np.testing.assert_array_equal(a, want[n][2:9, ::2])
