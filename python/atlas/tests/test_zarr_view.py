"""Test 2 of issue 42: ``atlas_collections.zarr.AtlasStore``, a read-only Zarr v3 view.

zarr-python's own store test suite (``zarr.testing.store.StoreTests``), the part that applies
to a read-only store with content of its own, runs against it; its keys and bytes are those
zarr-python itself writes for the same arrays; ``xr.open_zarr(store, group=name)`` is
``assert_identical`` to ``engine="atlas"`` for every dataset of a 2,000-station collection and
of the calendar corpus; listing, partial reads, dask, pickling, refused writes and deleted
datasets; on the S3 test server, an open costs at most 3 requests."""

import json
import pickle
import warnings
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import dask.array
import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr
from test_calendars import CALENDARS, write_calendar_file
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.core.buffer import cpu, default_buffer_prototype
from zarr.core.sync import sync
from zarr.storage import MemoryStore
from zarr.testing.store import StoreTests

import atlas_collections as ac
from atlas_collections.zarr import AtlasStore

STATIONS = 2000


def zarray(group: zarr.Group, path: str) -> zarr.Array:
    node = group[path]
    assert isinstance(node, zarr.Array), path
    return node


def zgroup(group: zarr.Group, path: str) -> zarr.Group:
    node = group[path]
    assert isinstance(node, zarr.Group), path
    return node


def values(group: zarr.Group, path: str) -> Any:
    return np.asarray(zarray(group, path)[...])


def fetched(store: Any, key: str, byte_range: Any = None) -> bytes:
    buffer = sync(store.get(key, default_buffer_prototype(), byte_range=byte_range))
    assert buffer is not None, key
    return buffer.to_bytes()


def small_collection(path) -> None:
    rng = np.random.default_rng(0)
    with ac.Writer(path) as w:
        w.write(
            "a",
            {
                "t": {
                    "data": rng.random((5, 7)).astype("f4"),
                    "dims": ("y", "x"),
                    "chunks": (2, 3),
                    "fill_value": -1.0,
                    "attrs": {"units": "K", "valid_range": np.array([0, 1], "f4")},
                },
                "n": {"data": np.arange(6, dtype="i2"), "dims": ("k",), "chunks": (4,)},
                "s": {"data": np.array(["a", "bcd", "", "é"], dtype=object), "dims": ("k4",)},
                "b": {"data": np.array([b"x", b"", b"yz"], dtype=object), "dims": ("k3",)},
                "when": {"data": pd.date_range("2000-01-01", periods=3).values, "dims": ("k3",)},
                "scalar": {"data": np.float64(2.5)},
                "empty": {"data": np.zeros((0, 3), "f8"), "dims": ("e", "x3")},
            },
            attrs={"title": "small", "member": 1},
        )
        w.write("group/child", {"v": {"data": np.arange(3.0), "dims": ("z",)}})


class TestAtlasStore(StoreTests[AtlasStore, cpu.Buffer]):
    """zarr-python's store tests, read-only part. Left out (set to None), because each plants
    arbitrary keys and bytes through the store or the test's own ``set``, which a view
    computed from a collection cannot hold, or needs a writable store: test_get,
    test_get_not_open, test_get_raises, test_get_many, test_getsize, test_getsize_prefix,
    test_set, test_set_not_open, test_set_many, test_exists, test_delete, test_delete_dir,
    test_delete_nonexistent_key_does_not_raise, test_is_empty, test_clear, test_list,
    test_list_prefix, test_list_empty_path, test_list_dir, test_set_if_not_exists,
    test_get_bytes, test_get_bytes_sync, test_get_json, test_get_json_sync, test_get_sync,
    test_set_sync, test_delete_sync, test_delete_sync_missing, test_serializable_store (it
    writes after unpickling), test_store_read_only (it asserts a writable store). What they
    check is checked below against the store's own content (TestViewContent)."""

    store_cls = AtlasStore
    buffer_cls = cpu.Buffer

    @pytest.fixture
    def store_kwargs(self, tmp_path):
        small_collection(tmp_path / "coll")
        return {"location": str(tmp_path / "coll")}

    async def set(self, store, key, value):  # pragma: no cover - the tests using it are out
        raise NotImplementedError("an Atlas collection is write-once")

    async def get(self, store, key):  # pragma: no cover
        raise NotImplementedError

    def test_store_repr(self, store):
        assert repr(store) == f"AtlasStore({store.location!r})"

    def test_store_supports_writes(self, store):
        assert not store.supports_writes

    def test_store_supports_listing(self, store):
        assert store.supports_listing

    # Only the read-only case of zarr's own test: a collection cannot be opened writable.
    @pytest.mark.parametrize("read_only", [True])
    async def test_store_open_read_only(self, open_kwargs, read_only):
        await super().test_store_open_read_only(open_kwargs, read_only)

    # Only the case without keys: the others plant keys through `set` first.
    @pytest.mark.parametrize("key_ranges", [[]])
    async def test_get_partial_values(self, store, key_ranges):
        await super().test_get_partial_values(store, key_ranges)

    test_get = None  # type: ignore[assignment]
    test_get_not_open = None  # type: ignore[assignment]
    test_get_raises = None  # type: ignore[assignment]
    test_get_many = None  # type: ignore[assignment]
    test_getsize = None  # type: ignore[assignment]
    test_getsize_prefix = None  # type: ignore[assignment]
    test_set = None  # type: ignore[assignment]
    test_set_not_open = None  # type: ignore[assignment]
    test_set_many = None  # type: ignore[assignment]
    test_exists = None  # type: ignore[assignment]
    test_delete = None  # type: ignore[assignment]
    test_delete_dir = None  # type: ignore[assignment]
    test_delete_nonexistent_key_does_not_raise = None  # type: ignore[assignment]
    test_is_empty = None  # type: ignore[assignment]
    test_clear = None  # type: ignore[assignment]
    test_list = None  # type: ignore[assignment]
    test_list_prefix = None  # type: ignore[assignment]
    test_list_empty_path = None  # type: ignore[assignment]
    test_list_dir = None  # type: ignore[assignment]
    test_set_if_not_exists = None  # type: ignore[assignment]
    test_get_bytes = None  # type: ignore[assignment]
    test_get_bytes_sync = None  # type: ignore[assignment]
    test_get_json = None  # type: ignore[assignment]
    test_get_json_sync = None  # type: ignore[assignment]
    test_get_sync = None  # type: ignore[assignment]
    test_set_sync = None  # type: ignore[assignment]
    test_delete_sync = None  # type: ignore[assignment]
    test_delete_sync_missing = None  # type: ignore[assignment]
    test_serializable_store = None  # type: ignore[assignment]
    test_store_read_only = None  # type: ignore[assignment]


def reference_store(collection: ac.Collection) -> MemoryStore:
    """The same groups and arrays written by zarr-python itself: uncompressed, the same
    chunks, fill values, dimension names and attributes, every chunk written."""
    store = MemoryStore()
    root = zarr.open_group(store, mode="w", zarr_format=3)
    with zarr.config.set({"array.write_empty_chunks": True}), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # variable-length bytes: "no Zarr v3 specification"
        for name in collection.names:
            dataset = collection[name]
            group = root.require_group(name)
            group.attrs.update({k: np.asarray(v).tolist() for k, v in dataset.attrs.items()})
            for array_name, array in dataset.arrays.items():
                data = array[...]
                dtype: Any = {"string": str, "binary": "bytes"}.get(array.tag, data.dtype)
                fill = array.fill_value
                if fill is None:
                    fill = {"string": "", "binary": b"", "timestamp_ns": np.datetime64("NaT")}.get(
                        array.tag, 0
                    )
                z = group.create_array(
                    array_name,
                    shape=array.shape,
                    chunks=array.chunks,
                    dtype=dtype,
                    fill_value=fill,
                    dimension_names=array.dims,
                    compressors=None,
                    attributes={k: np.asarray(v).tolist() for k, v in array.attrs.items()},
                )
                if data.size:
                    z[...] = data
    return store


def keys(store) -> list[str]:
    async def collect():
        return [k async for k in store.list()]

    return sorted(sync(collect()))


def test_the_view_is_what_zarr_python_writes_for_the_same_arrays(tmp_path):
    small_collection(tmp_path / "coll")
    view = AtlasStore(tmp_path / "coll")
    reference = reference_store(ac.open(tmp_path / "coll"))
    assert keys(view) == keys(reference)
    proto = default_buffer_prototype()
    for key in keys(reference):
        got = fetched(view, key)
        want = fetched(reference, key)
        if key.endswith("zarr.json"):
            got_doc, want_doc = json.loads(got), json.loads(want)
            want_doc.pop("consolidated_metadata", None)
            assert got_doc == want_doc, key
        else:
            assert got == want, key
        assert sync(view.exists(key)) and sync(view.getsize(key)) == len(got)
        # Byte ranges, as every store serves them.
        requests: list[tuple[Any, bytes]] = [
            (RangeByteRequest(1, 3), got[1:3]),
            (OffsetByteRequest(2), got[2:]),
            (SuffixByteRequest(2), got[-2:]),
        ]
        for request, part in requests:
            assert fetched(view, key, request) == part
        whole = view.get_sync(key)
        assert whole is not None and whole.to_bytes() == got
    for missing in ["nope/zarr.json", "a/t/c/3/0", "a/t/c/0", "a/t/c/0/0/0", "a/zarr", "a/n/c/01"]:
        assert sync(view.get(missing, proto)) is None and not sync(view.exists(missing))
        with pytest.raises(FileNotFoundError):
            sync(view.getsize(missing))
    with pytest.raises(ValueError, match="Unexpected byte_range"):
        sync(view.get("zarr.json", proto, byte_range=(0, 2)))  # type: ignore[arg-type]
    parts = sync(view.get_partial_values(proto, [("a/n/c/1", RangeByteRequest(0, 2)), ("x", None)]))
    assert parts[0] is not None and parts[1] is None
    assert parts[0].to_bytes() == np.arange(6, dtype="<i2")[4:].tobytes()[:2]


def test_listing(tmp_path):
    small_collection(tmp_path / "coll")
    view = AtlasStore(tmp_path / "coll")

    def listed(method, prefix):
        async def collect():
            return sorted([k async for k in getattr(view, method)(prefix)])

        return sync(collect())

    assert listed("list_dir", "") == ["a", "group", "zarr.json"]
    assert listed("list_dir", "a") == sorted(
        ["zarr.json", "t", "n", "s", "b", "when", "scalar", "empty"]
    )
    assert listed("list_dir", "a/t") == ["c", "zarr.json"]
    assert listed("list_dir", "a/t/c") == ["0", "1", "2"]
    assert listed("list_dir", "a/t/c/2/") == ["0", "1", "2"]
    assert listed("list_dir", "a/empty") == ["zarr.json"]
    assert listed("list_dir", "group") == ["child", "zarr.json"]
    assert listed("list_dir", "nothing") == []
    assert listed("list_prefix", "a/n/") == ["a/n/c/0", "a/n/c/1", "a/n/zarr.json"]
    assert listed("list_prefix", "group/") == [
        "group/child/v/c/0",
        "group/child/v/zarr.json",
        "group/child/zarr.json",
        "group/zarr.json",
    ]


def test_zarr_reads_groups_arrays_and_partial_selections(tmp_path):
    small_collection(tmp_path / "coll")
    c = ac.open(tmp_path / "coll")
    root = zarr.open_group(AtlasStore(tmp_path / "coll"), mode="r")
    assert sorted(root.group_keys()) == ["a", "group"]
    a = zgroup(root, "a")
    assert dict(a.attrs) == {"title": "small", "member": 1}
    t = zarray(a, "t")
    assert (t.shape, t.chunks) == ((5, 7), (2, 3))
    assert getattr(t.metadata, "dimension_names", None) == ("y", "x")
    assert t.fill_value == np.float32(-1.0) and t.attrs["units"] == "K"
    np.testing.assert_array_equal(t[1:4, 2:6], c["a"]["t"][1:4, 2:6])
    rows, cols = np.array([0, 4]), np.array([1, 6])
    np.testing.assert_array_equal(t.oindex[rows, cols], c["a"]["t"][[0, 4]][:, [1, 6]])
    assert values(a, "s").tolist() == ["a", "bcd", "", "é"]
    assert values(a, "b").tolist() == [b"x", b"", b"yz"]
    assert values(a, "scalar") == 2.5 and zarray(a, "empty").shape == (0, 3)
    assert values(root, "group/child/v").tolist() == [0.0, 1.0, 2.0]


def test_writes_are_refused_with_zarrs_read_only_error(tmp_path):
    small_collection(tmp_path / "coll")
    store = AtlasStore(tmp_path / "coll")
    with pytest.raises(ValueError, match="read-only"):
        zarr.open_group(store, mode="a")
    array = zarray(zarr.open_group(store, mode="r"), "a/t")
    with pytest.raises(ValueError, match="read-only"):
        array[0, 0] = 1.0
    with pytest.raises(ValueError, match="store was opened in read-only mode"):
        sync(store.set("a/t/c/0/0", cpu.Buffer.from_bytes(b"x")))
    with pytest.raises(ValueError, match="write-once"):
        AtlasStore(tmp_path / "coll", read_only=False)
    with pytest.raises(ac.StorageError, match="store options .* local directory"):
        _ = AtlasStore(tmp_path / "coll", aws_region="eu-west-1").collection


def _read_in_worker(store: AtlasStore) -> list[float]:
    return values(zarr.open_group(store, mode="r"), "a/t")[0, :3].tolist()


def test_deleted_datasets_are_absent_and_the_store_pickles_by_location(tmp_path):
    small_collection(tmp_path / "coll")
    ac.open(tmp_path / "coll").delete("group/child")
    store = AtlasStore(tmp_path / "coll")
    root = zarr.open_group(store, mode="r")
    assert sorted(root.group_keys()) == ["a"]
    assert sync(store.get("group/child/zarr.json", default_buffer_prototype())) is None
    copy = pickle.loads(pickle.dumps(store))
    assert copy == store and copy.read_only
    want = values(zarr.open_group(store, mode="r"), "a/t")[0, :3].tolist()
    with ProcessPoolExecutor(1) as pool:
        assert pool.submit(_read_in_worker, store).result() == want


def station(i: int) -> xr.Dataset:
    rng = np.random.default_rng(i)
    return xr.Dataset(
        {
            "tas": (("time",), rng.normal(280, 5, 365).astype("f4"), {"units": "K"}),
            "pr": (("time",), rng.gamma(1.0, 2.0, 365), {"units": "mm/day"}),
        },
        coords={
            "time": ("time", pd.date_range("2023-01-01", periods=365)),
            "lat": ((), 35.0 + (i % 200) * 0.1, {"units": "degrees_north"}),
            "station_name": ((), f"STATION-{i:05d}", {"cf_role": "timeseries_id"}),
        },
        attrs={"featureType": "timeSeries", "station": i},
    )


def assert_view_identical(location, names):
    store = AtlasStore(location)
    c = ac.open(location)
    for name in names:
        got = xr.open_zarr(store, group=name, consolidated=False).load()
        want = c.to_xarray(name).load()
        xr.testing.assert_identical(got, want)


def test_every_station_of_2000_opens_through_xarrays_zarr_backend_as_through_atlas(tmp_path):
    ac.write_xarray(tmp_path / "coll", {f"station_{i:05d}": station(i) for i in range(STATIONS)})
    names = ac.open(tmp_path / "coll").names
    assert len(names) == STATIONS
    assert_view_identical(tmp_path / "coll", names)


def test_the_calendar_corpus_opens_through_xarrays_zarr_backend_as_through_atlas(tmp_path):
    files = []
    for calendar in CALENDARS:
        if calendar == "none":
            continue  # xarray cannot decode it either way
        files.append(tmp_path / f"{calendar}.nc")
        write_calendar_file(files[-1], calendar)
    ac.import_netcdf(tmp_path / "coll", files, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_view_identical(tmp_path / "coll", [p.stem for p in files])
        store = AtlasStore(tmp_path / "coll")
        choices: list[dict[str, Any]] = [{"decode_times": False}, {"use_cftime": True}]
        for options in choices:
            got = xr.open_zarr(store, group="360_day", consolidated=False, **options)
            want = xr.open_dataset(tmp_path / "coll", engine="atlas", group="360_day", **options)
            xr.testing.assert_identical(got.load(), want.load())


def test_dask_reads_through_the_view(tmp_path):
    ac.write_xarray(tmp_path / "coll", {f"s{i}": station(i) for i in range(8)})
    store = AtlasStore(tmp_path / "coll")
    lazy = [
        xr.open_zarr(store, group=f"s{i}", chunks={}, consolidated=False)["tas"] for i in range(8)
    ]
    assert isinstance(lazy[0].data, dask.array.Array)
    means = dask.compute(*[v.mean() for v in lazy])
    c = ac.open(tmp_path / "coll")
    np.testing.assert_allclose(means, [c[f"s{i}"]["tas"][:].mean() for i in range(8)])


def test_an_open_costs_at_most_three_requests_on_s3(s3_prefix):
    small_collection(s3_prefix)
    store = AtlasStore(s3_prefix)
    root = zarr.open_group(store, mode="r")
    assert store.collection.request_count <= 3, store.collection.requests()
    assert sorted(root.group_keys()) == ["a", "group"]
    t = values(root, "a/t")
    np.testing.assert_array_equal(t, ac.open(s3_prefix)["a"]["t"][...])
