"""Test 1: NumPy -> Atlas -> NumPy for every dtype the format holds, slices included; attributes
of every type; the refused dtypes."""

import numpy as np
import pytest

import atlas_collections as ac

SHAPE = (7, 9)


def values(dtype: str) -> np.ndarray:
    n = SHAPE[0] * SHAPE[1]
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        base = np.linspace(info.min // 2, info.max // 2, n, dtype=np.float64)
        out = base.astype(dtype)
        out[0], out[-1] = info.min, info.max
        return out.reshape(SHAPE)
    if dtype.startswith("float"):
        out = np.linspace(-1e3, 1e3, n).astype(dtype)
        out[3] = np.nan
        out[4] = np.inf
        out[5] = -np.inf
        return out.reshape(SHAPE)
    if dtype == "datetime64[ns]":
        out = np.arange(n, dtype="int64") * 86_400_000_000_123 + 1_600_000_000_000_000_000
        arr = out.view("datetime64[ns]").copy()
        arr[2] = np.datetime64("NaT")
        return arr.reshape(SHAPE)
    if dtype == "str":
        return np.array([f"s{i}-é" * (i % 3) for i in range(n)]).reshape(SHAPE)
    if dtype == "bytes":
        return np.array([bytes([i % 256]) * (i % 4) for i in range(n)], dtype=object).reshape(SHAPE)
    raise AssertionError(dtype)


NUMERIC = [
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
]
ALL = NUMERIC + ["datetime64[ns]", "str", "bytes"]
SLICES = [
    (slice(None), slice(None)),
    (slice(2, 5), slice(None, None, 2)),
    (slice(None, None, -1), slice(1, 8, 3)),
    (3, slice(None)),
    (Ellipsis, -1),
    (slice(6, 2, -2), [0, 8, 4]),
    (np.array([True, False] * 3 + [True]), 2),
    (slice(5, 5), slice(None)),
]


def expected_read(dtype: str, data: np.ndarray) -> np.ndarray:
    if dtype in ("str", "bytes"):
        return data.astype(object)
    return data


def outer(data: np.ndarray, key) -> np.ndarray:
    """NumPy's answer for an outer (orthogonal) index."""
    out = data
    axis = 0
    for k in key if key[0] is not Ellipsis else (slice(None),) * (data.ndim - 1) + key[1:]:
        if isinstance(k, (int, np.integer)):
            out = np.take(out, k, axis=axis)
            continue
        if isinstance(k, slice):
            out = out[(slice(None),) * axis + (k,)]
        else:
            idx = np.asarray(k)
            if idx.dtype == bool:
                idx = np.nonzero(idx)[0]
            out = np.take(out, idx, axis=axis)
        axis += 1
    return out


@pytest.fixture(scope="module")
def typed_collection(tmp_path_factory):
    path = tmp_path_factory.mktemp("typed") / "coll"
    with ac.Writer(path) as w:
        w.write("all", {f"a_{d}": (("y", "x"), values(d)) for d in ALL})
        w.write(
            "chunked",
            {f"a_{d}": {"data": values(d), "dims": ("y", "x"), "chunks": (2, 4)} for d in ALL},
        )
    return ac.open(path)


@pytest.mark.parametrize("dataset", ["all", "chunked"])
@pytest.mark.parametrize("dtype", ALL)
def test_every_dtype_round_trips_whole_and_sliced(typed_collection, dataset, dtype):
    data = expected_read(dtype, values(dtype))
    arr = typed_collection[dataset][f"a_{dtype}"]
    assert arr.dtype == data.dtype
    assert arr.shape == SHAPE
    assert arr.dims == ("y", "x")
    whole = np.asarray(arr)
    assert isinstance(whole, np.ndarray) and whole.dtype == data.dtype
    np.testing.assert_array_equal(whole, data)
    for key in SLICES:
        got = arr[key]
        assert isinstance(got, np.ndarray)
        want = outer(data, key)
        assert got.shape == want.shape, key
        np.testing.assert_array_equal(got, want, err_msg=str(key))


def test_chunked_layout_is_reported(typed_collection):
    assert typed_collection["chunked"]["a_float32"].chunks == (2, 4)
    assert typed_collection["all"]["a_float32"].chunks == SHAPE


def test_datetimes_of_other_units_are_stored_as_nanoseconds(tmp_path):
    days = np.array(["2020-01-01", "2024-02-29"], dtype="datetime64[D]")
    with ac.Writer(tmp_path / "c") as w:
        w.write("d", {"t": days})
    got = ac.open(tmp_path / "c")["d"]["t"][:]
    assert got.dtype == np.dtype("datetime64[ns]")
    np.testing.assert_array_equal(got, days.astype("datetime64[ns]"))


ATTRS = {
    "b": True,
    "i8": np.int8(-5),
    "i16": np.int16(-300),
    "i32": np.int32(70000),
    "i64": -(2**40),
    "u8": np.uint8(200),
    "u16": np.uint16(60000),
    "u32": np.uint32(4_000_000_000),
    "u64": 2**64 - 1,
    "f32": np.float32(1.5),
    "f64": 2.25,
    "s": "kelvin é",
    "bin": b"\x00\xff",
    "bl": [True, False],
    "i16l": np.array([1, -2], dtype="int16"),
    "u8l": np.array([0, 255], dtype="uint8"),
    "il": [1, 2, 3],
    "fl": [0.5, 1],
    "f32l": np.array([0.25], dtype="float32"),
    "sl": ["a", "b"],
    "binl": [b"x", b""],
}


def test_attributes_of_every_type_round_trip(tmp_path):
    with ac.Writer(tmp_path / "c") as w:
        w.write("d", {"v": (("x",), np.zeros(3, "f4"), ATTRS)}, attrs=ATTRS)
    ds = ac.open(tmp_path / "c")["d"]
    for got in (ds.attrs, ds["v"].attrs):
        assert set(got) == set(ATTRS)
        for key, want in ATTRS.items():
            value = got[key]
            if isinstance(want, np.ndarray):
                assert value.dtype == want.dtype, key
                np.testing.assert_array_equal(value, want)
            elif isinstance(want, np.generic):
                assert type(value) is type(want), key
                assert value == want
            elif key == "fl":
                np.testing.assert_array_equal(value, [0.5, 1.0])
            elif key == "il":
                np.testing.assert_array_equal(value, want)
                assert value.dtype == np.int64
            elif key == "bl":
                np.testing.assert_array_equal(value, want)
            else:
                assert value == want, key


@pytest.mark.parametrize(
    "data, words",
    [
        (np.array([True, False]), "bool"),
        (np.zeros(2, dtype="float16"), "float16"),
        (np.zeros(2, dtype="complex64"), "complex"),
        (np.array([1, 2], dtype="timedelta64[s]"), "timedelta64"),
        (np.array([1, "a"], dtype=object), "object array"),
    ],
)
def test_dtypes_the_format_cannot_hold_are_refused_with_the_mapping(tmp_path, data, words):
    with ac.Writer(tmp_path / "c") as w:
        with pytest.raises(ac.UnsupportedDTypeError) as info:
            w.write("d", {"v": data})
        assert words in str(info.value)
        assert "array 'v'" in str(info.value)
        assert "the format holds" in str(info.value)
        w.write("ok", {"v": np.zeros(2, "f4")})  # the writer is unharmed
    assert ac.open(tmp_path / "c").names == ["ok"]


def test_stats_match_numpy(collection_dir):
    from conftest import small_dataset

    c = ac.open(collection_dir)
    all_t2m = [small_dataset(i)["t2m"][1] for i in range(len(c))]
    stats = c.stats("t2m")
    assert stats.datasets == 5
    assert stats.min == min(a.min() for a in all_t2m)
    assert stats.max == max(a.max() for a in all_t2m)
    assert stats.row_count == 5 * 24 * 32
    rows = c.stats_by_dataset("count")
    assert [r.dataset for r in rows] == c.names
    assert rows[2].min == np.int16(2) and rows[2].max == np.int16(24 * 32 - 1 + 2)
    one = c["ds_001"].stats("t2m")
    assert one.max == all_t2m[1].max()
    assert c.attributes_by_dataset("member") == {n: i for i, n in enumerate(c.names)}


def test_open_and_a_first_read_cost_three_requests(collection_dir):
    c = ac.open(collection_dir)
    assert c.request_count == 2  # the tail of data.atlas, deleted.mask
    ds = c["ds_002"]
    assert c.request_count == 2  # schema lookups are answered from the footer
    ds["t2m"][0:2, 0:2]
    assert c.request_count == 3, c.requests()  # the whole (small) t2m segment
    c["ds_004"]["t2m"][:]
    assert c.request_count == 3, c.requests()  # served from the kept segment


def test_deletes_hide_datasets_locally_and_survive_reopen(collection_dir):
    c = ac.open(collection_dir)
    report = c.delete(["ds_001", "ds_003"])
    assert (report.newly_deleted, report.total_deleted) == (2, 2)
    assert "ds_001" not in c and len(c) == 3
    again = ac.open(collection_dir)
    assert again.names == ["ds_000", "ds_002", "ds_004"]
    assert again.stats("t2m").datasets == 3
    with pytest.raises(ac.DatasetNotFoundError) as info:
        again.delete(["nope"])
    assert info.value.name == "nope"
    with pytest.raises(KeyError):
        again["ds_001"]


def test_writer_refusals_are_typed_and_leave_the_writer_usable(tmp_path):
    path = tmp_path / "c"
    with ac.Writer(path) as w:
        with pytest.raises(ac.InvalidNameError) as info:
            w.write("_hidden", {"v": np.zeros(1, "f4")})
        assert info.value.name == "_hidden" and "reserved" in info.value.reason
        with pytest.raises(ac.InvalidNameError):
            w.write("d", {"_v": np.zeros(1, "f4")})
        with pytest.raises(ac.InvalidNameError):
            w.write("d", {"v": np.zeros(1, "f4")}, attrs={"": 1})
        w.write("d", {"v": np.zeros(1, "f4")})
        with pytest.raises(ac.DuplicateNameError) as dup:
            w.write("d", {"v": np.zeros(1, "f4")})
        assert dup.value.name == "d"
        with pytest.raises(ac.LayoutError):
            w.write("e", {"v": {"data": np.zeros((2, 2), "f4"), "dims": ("a",)}})
    with pytest.raises(ac.CollectionExistsError):
        ac.Writer(path)


def test_an_aborted_writer_leaves_nothing(tmp_path):
    path = tmp_path / "new"
    with pytest.raises(RuntimeError):
        with ac.Writer(path) as w:
            w.write("d", {"v": np.zeros(1, "f4")})
            raise RuntimeError("stop")
    assert not path.exists()
    with pytest.raises(ac.NotACollectionError):
        ac.open(path)


def test_concurrent_local_deletes_from_processes_lose_nothing(tmp_path):
    from concurrent_deletes import run_concurrent_deletes

    path = tmp_path / "c"
    names = [f"d{i:03d}" for i in range(40)]
    with ac.Writer(path) as w:
        for name in names:
            w.write(name, {"v": np.zeros(2, "f4")})
    run_concurrent_deletes(str(path), names[:32], processes=4)
    assert ac.open(path).names == names[32:]


def test_read_many_reads_one_array_of_every_dataset(collection_dir):
    from conftest import small_dataset

    c = ac.open(collection_dir)
    got = c.read_many("t2m")
    assert list(got) == c.names
    for i, name in enumerate(c.names):
        np.testing.assert_array_equal(got[name], small_dataset(i)["t2m"][1])
    assert list(c.read_many("count", ["ds_003"])) == ["ds_003"]
