"""Test 2: NetCDF files written by xarray -> import -> the "atlas" backend gives back the same
Dataset (data, dims, coordinates, attributes); the same over the whole collection as a
DataTree; a dask-chunked open computes the same."""

import subprocess
import sys
import warnings
from typing import Any

import dask.array
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import atlas_collections as ac

ENGINES = ["netcdf4", "h5netcdf"]


def source_dataset(i: int) -> xr.Dataset:
    rng = np.random.default_rng(100 + i)
    ds = xr.Dataset(
        {
            "t2m": (
                ("time", "y", "x"),
                (rng.standard_normal((3, 24, 32)) + 280).astype("float32"),
                {
                    "units": "K",
                    "long_name": "2 m temperature",
                    "valid_range": np.array([150, 350], "f4"),
                },
            ),
            "count": (
                ("y", "x"),
                rng.integers(0, 1000, (24, 32)).astype("int32"),
                {"flag": np.int8(1)},
            ),
            "mask": (("y", "x"), rng.integers(0, 2, (24, 32)).astype("uint8")),
            "station": (("s",), np.array(["north", "south-east"], dtype=object)),
        },
        coords={
            "time": pd.date_range("2024-01-01", periods=3, freq="D") + pd.Timedelta(days=i),
            "y": np.linspace(-10, 10, 24),
            "x": np.arange(32, dtype="int64"),
            "lat": (("y", "x"), rng.random((24, 32))),
        },
        attrs={
            "title": f"member {i}",
            "member": np.int32(i),
            "levels": np.array([1.0, 2.5]),
            "institution": "pytest",
        },
    )
    return ds


def write_netcdf(tmp_path, engine, n=3):
    paths = []
    for i in range(n):
        path = tmp_path / f"member_{i:02d}.nc"
        source_dataset(i).to_netcdf(path, engine=engine)
        paths.append(path)
    return paths


@pytest.mark.parametrize("engine", ENGINES)
def test_import_then_open_dataset_is_identical(tmp_path, engine):
    paths = write_netcdf(tmp_path, engine)
    out = tmp_path / "coll"
    summary = ac.import_netcdf(out, paths, engine=engine, progress=False)
    assert summary.datasets == 3
    for path in paths:
        with xr.open_dataset(path, engine=engine) as source:
            got = xr.open_dataset(out, engine="atlas", group=path.stem)
            xr.testing.assert_identical(got.load(), source.load())
            assert "lat" in got.coords and "lat" not in got.data_vars


@pytest.mark.parametrize("engine", ENGINES)
def test_open_datatree_has_one_node_per_dataset(tmp_path, engine):
    paths = write_netcdf(tmp_path, engine)
    out = tmp_path / "coll"
    ac.import_netcdf(out, paths, engine=engine, progress=False)
    tree = xr.open_datatree(out, engine="atlas")
    assert sorted(tree.children) == [p.stem for p in paths]
    for path in paths:
        with xr.open_dataset(path, engine=engine) as source:
            xr.testing.assert_identical(tree[path.stem].to_dataset().load(), source.load())


def test_dask_chunked_open_computes_the_same(tmp_path):
    paths = write_netcdf(tmp_path, "netcdf4", n=1)
    out = tmp_path / "coll"
    ac.import_netcdf(out, paths, progress=False)
    lazy = xr.open_dataset(out, engine="atlas", group=paths[0].stem, chunks={})
    assert isinstance(lazy["t2m"].data, dask.array.Array)
    with xr.open_dataset(paths[0]) as source:
        xr.testing.assert_identical(lazy.compute(), source.load())
        xr.testing.assert_identical(
            lazy["t2m"].isel(time=1, y=slice(3, 20, 4)).compute(),
            source["t2m"].isel(time=1, y=slice(3, 20, 4)).load(),
        )
    rechunked = xr.open_dataset(out, engine="atlas", group=paths[0].stem, chunks={"y": 5})
    assert rechunked["t2m"].data.chunks[1][0] == 5
    np.testing.assert_array_equal(rechunked["t2m"].values, lazy["t2m"].values)


def test_lazy_selection_reads_through_the_backend_array(tmp_path):
    path = tmp_path / "c"
    data = np.arange(100 * 40, dtype="float64").reshape(100, 40)
    with ac.Writer(path) as w:
        w.write("big", {"v": {"data": data, "dims": ("a", "b"), "chunks": (10, 40)}})
    ds = xr.open_dataset(path, engine="atlas")  # one dataset: no group needed
    sel = ds["v"].isel(a=slice(10, 20), b=slice(None, None, 2))
    np.testing.assert_array_equal(sel.values, data[10:20, ::2])
    np.testing.assert_array_equal(ds["v"][[3, 50, 7], 5].values, data[[3, 50, 7], 5])


def test_write_xarray_and_open_round_trip_without_netcdf(tmp_path):
    datasets = {f"m{i}": source_dataset(i) for i in range(2)}
    ac.write_xarray(tmp_path / "c", datasets)
    for name, ds in datasets.items():
        xr.testing.assert_identical(
            xr.open_dataset(tmp_path / "c", engine="atlas", group=name).load(), ds
        )
    assert ac.open(tmp_path / "c")["m1"].to_xarray().attrs["member"] == 1


def test_open_dataset_without_group_on_many_datasets_says_how(tmp_path):
    paths = write_netcdf(tmp_path, "netcdf4", n=2)
    ac.import_netcdf(tmp_path / "c", paths, progress=False)
    with pytest.raises(ValueError, match="group="):
        xr.open_dataset(tmp_path / "c", engine="atlas")
    with pytest.raises(ac.DatasetNotFoundError):
        xr.open_dataset(tmp_path / "c", engine="atlas", group="nope")


def test_the_engine_is_registered_as_an_entry_point():
    assert "atlas" in xr.backends.list_engines()


def test_the_import_command(tmp_path):
    paths = write_netcdf(tmp_path, "h5netcdf", n=2)
    out = tmp_path / "cli"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "atlas_collections",
            "import",
            str(out),
            *map(str, paths),
            "--engine",
            "h5netcdf",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "imported 2 datasets" in done.stdout
    assert "2/2" in done.stderr and "file" in done.stderr  # the tqdm progress bar, both files
    assert ac.open(out).names == [p.stem for p in paths]


@pytest.mark.parametrize("engine", ["netcdf4", "h5netcdf"])
def test_scalar_variables_and_coordinates_stay_0_d(tmp_path, engine):
    """A station file in the CF discrete-sampling shape: 0-d `lat`, `lon`, `height` and a 0-d
    string `station_name` come back 0-d, not as 1-element arrays on a new dimension."""
    source = xr.Dataset(
        {"t2m": (("time",), np.arange(4, dtype="f4"), {"units": "K"})},
        coords={
            "lat": ((), 45.07, {"units": "degrees_north"}),
            "lon": ((), 7.69, {"units": "degrees_east"}),
            "height": ((), np.int16(240)),
            "station_name": ((), "Torino"),
        },
        attrs={"featureType": "timeSeries"},
    )
    path = tmp_path / "torino.nc"
    source.to_netcdf(path, engine=engine)
    ac.import_netcdf(tmp_path / "coll", [path], progress=False)
    back = xr.open_dataset(tmp_path / "coll", engine="atlas", group="torino")
    assert back["lat"].dims == () and "dim0" not in back.dims
    with xr.open_dataset(path, engine=engine) as expected:
        xr.testing.assert_identical(back, expected.load())
        lazy = xr.open_dataset(tmp_path / "coll", engine="atlas", group="torino", chunks={})
        xr.testing.assert_identical(lazy.compute(), expected)
    # And through the Writer directly.
    with ac.Writer(tmp_path / "direct") as w:
        w.write("d", {"x": ((), np.float32(1.5)), "n": ((), np.uint8(7))})
    d = ac.open(tmp_path / "direct")["d"]
    assert d["x"].shape == () and d["x"][()] == np.float32(1.5) and d["n"][()] == 7


def test_char_arrays_unsigned_missing_values_packing_and_bounds_read_as_xarray_reads_them(
    tmp_path,
):
    """NetCDF-3 char arrays (S1 with a string dimension), `_Unsigned` bytes, `missing_value`,
    integers packed with `scale_factor`/`add_offset` (int16 with float32 factors, uint8 with
    float64 ones and a `_FillValue`) and a bounds variable: the collection holds what
    `xr.open_dataset` shows."""
    import netCDF4

    chars = tmp_path / "chars.nc"
    with netCDF4.Dataset(chars, "w", format="NETCDF3_CLASSIC") as nc:
        nc.createDimension("station", 3)
        nc.createDimension("name_strlen", 6)
        names = nc.createVariable("station_name", "S1", ("station", "name_strlen"))
        names[:] = netCDF4.stringtochar(np.array(["Torino", "Milano", "Roma"], dtype="S6"))
        nc.createVariable("t", "f4", ("station",))[:] = [1, 2, 3]
    packed = tmp_path / "packed.nc"
    with netCDF4.Dataset(packed, "w") as nc:
        nc.createDimension("x", 5)
        u = nc.createVariable("u", "i1", ("x",))
        u._Unsigned = "true"
        u.set_auto_maskandscale(False)
        u[:] = np.array([-1, 0, 1, 2, -128], dtype="i1")
        m = nc.createVariable("m", "f4", ("x",))
        m.missing_value = np.float32(-999)
        m.set_auto_maskandscale(False)
        m[:] = np.array([1, -999, 3, 4, 5], dtype="f4")
        k = nc.createVariable("k", "i2", ("x",))
        k.scale_factor = np.float32(0.5)
        k.add_offset = np.float32(10)
        k.set_auto_maskandscale(False)
        k[:] = np.arange(5, dtype="i2")
        k8 = nc.createVariable("k8", "u1", ("x",), fill_value=np.uint8(255))
        k8.scale_factor = 0.1
        k8.add_offset = 1.0
        k8.set_auto_maskandscale(False)
        k8[:] = np.array([0, 1, 255, 3, 4], dtype="u1")
    bounds = tmp_path / "bounds.nc"
    xr.Dataset(
        {
            "v": (("lat",), np.arange(3.0)),
            "lat_bnds": (("lat", "nv"), np.arange(6.0).reshape(3, 2)),
        },
        coords={"lat": ("lat", [0.5, 1.5, 2.5], {"bounds": "lat_bnds"})},
    ).to_netcdf(bounds)
    paths = [chars, packed, bounds]
    ac.import_netcdf(tmp_path / "coll", paths, progress=False)
    for path in paths:
        back = xr.open_dataset(tmp_path / "coll", engine="atlas", group=path.stem)
        with xr.open_dataset(path) as expected:
            xr.testing.assert_identical(back, expected.load())
    stations = xr.open_dataset(tmp_path / "coll", engine="atlas", group="chars")["station_name"]
    assert stations.dims == ("station",)
    assert stations.values.tolist() == [b"Torino", b"Milano", b"Roma"]


def write_strings_with_missing_entries(path, format="NETCDF4"):
    """The shapes of netCDF-C's ref_tst_string_data.nc (a `string` variable with
    `_FillValue` "" and entries never written) and tst_charfill.nc (a `char` array with
    `_FillValue` and rows never written), plus a `missing_value` string."""
    import netCDF4

    with netCDF4.Dataset(path, "w", format=format) as nc:
        nc.createDimension("line", 5)
        nc.createDimension("strlen", 4)
        code = nc.createVariable("code", "S1", ("line", "strlen"), fill_value=b"\0")
        code[0] = netCDF4.stringtochar(np.array(["AB12"], "S4"))[0]
        code[3] = netCDF4.stringtochar(np.array(["XY"], "S4"))[0]
        code.long_name = "station code"
        nc.createVariable("t", "f4", ("line",))[:] = np.arange(5)
        if format != "NETCDF4":
            return
        description = nc.createVariable("description", str, ("line",), fill_value="")
        description[0] = "first"
        description[1] = "second"
        description[4] = 'last "string"'
        label = nc.createVariable("label", str, ("line",))
        label.missing_value = "N/A"
        label[:] = np.array(["a", "N/A", "c", "d", "N/A"], dtype=object)


@pytest.mark.parametrize(
    "engine, format",
    [("netcdf4", "NETCDF4"), ("h5netcdf", "NETCDF4"), ("netcdf4", "NETCDF3_CLASSIC")],
)
def test_strings_with_missing_entries_read_back_as_xarray_reads_them(tmp_path, engine, format):
    """A string variable with a `_FillValue` or `missing_value` has missing entries, which CF
    decoding turns into NaN (an object array of str and float, which no Atlas type holds):
    it is stored as the file holds it, fill value and attribute included, and the backend's
    CF decoding masks it as xarray masks the file, with every decoding option."""
    path = tmp_path / "names.nc"
    write_strings_with_missing_entries(path, format)
    ac.import_netcdf(tmp_path / "coll", [path], engine=engine, progress=False)
    option_sets: list[dict[str, Any]] = [{}, {"mask_and_scale": False}, {"decode_times": False}]
    for options in option_sets:
        back = xr.open_dataset(tmp_path / "coll", engine="atlas", **options).load()
        with xr.open_dataset(path, engine=engine, **options) as expected:
            xr.testing.assert_identical(back, expected.load())
    back = xr.open_dataset(tmp_path / "coll", engine="atlas")
    code = back["code"].values
    assert code[0] == b"AB12" and code[3] == b"XY" and pd.isna(code[[1, 2, 4]]).all()
    with xr.open_dataset(path, engine=engine) as expected:
        fill = expected["code"].encoding["_FillValue"]  # b"\0" (b"" through h5netcdf)
    assert back["code"].encoding["_FillValue"] == fill
    # The Array API reads what is stored: the fill value in place, the attribute kept.
    stored = ac.open(tmp_path / "coll")["names"]
    assert stored["code"][:].tolist() == [b"AB12", b"", b"", b"XY", b""]
    assert stored["code"].attrs["_FillValue"] == fill
    if format == "NETCDF4":
        assert back["description"].values.tolist()[:2] == ["first", "second"]
        assert pd.isna(back["description"].values[2]) and pd.isna(back["label"].values[1])
        assert stored["description"][:].tolist() == ["first", "second", "", "", 'last "string"']
        assert stored["description"].attrs["_FillValue"] == ""
        assert stored["label"].attrs["missing_value"] == "N/A"
    # The Zarr view opens it: a string's _FillValue is the Zarr array's fill_value (xarray's
    # Zarr backend cannot decode a string _FillValue attribute of a Zarr v3 array), and the
    # missing entries show as that fill value.
    from atlas_collections.zarr import AtlasStore

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # variable-length bytes: "no Zarr v3 specification"
        z = xr.open_zarr(AtlasStore(ac.open(tmp_path / "coll")), group="names", consolidated=False)
        assert z["code"].values.tolist() == [b"AB12", b"", b"", b"XY", b""]
        assert z["code"].encoding["fill_value"] == fill and "_FillValue" not in z["code"].attrs
        if format == "NETCDF4":
            assert z["description"].encoding["fill_value"] == ""
            assert pd.isna(z["label"].values[1])  # missing_value: an ordinary attribute
