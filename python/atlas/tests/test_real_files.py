"""Point 4 of issue 42: what served and archived NetCDF files carry. Files written here in the
shapes of THREDDS products (Unidata `_Coordinate*` attributes, `_ChunkSizes`) and of files with
unlimited dimensions not yet written, imported and read back identical (the real corpus is in
``benchmarks/corpus.py`` and docs/python-atlas.md, "Real files")."""

import itertools

import netCDF4
import numpy as np
import xarray as xr

import atlas_collections as ac
from atlas_collections.zarr import AtlasStore


def assert_reads_back(path, out, name=None):
    name = name or path.stem
    with xr.open_dataset(path) as want:
        want = want.load()
    got = xr.open_dataset(out, engine="atlas", group=name).load()
    xr.testing.assert_identical(got, want)
    zarr_view = xr.open_zarr(AtlasStore(out), group=name, consolidated=False).load()
    xr.testing.assert_identical(zarr_view, got)
    return got


def test_underscore_attributes_of_a_thredds_product_keep_their_names(tmp_path):
    path = tmp_path / "ncss_subset.nc"
    with netCDF4.Dataset(path, "w") as nc:
        nc._CoordSysBuilder = "ucar.nc2.dataset.conv.CF1Convention"
        nc.Conventions = "CF-1.6"
        nc.createDimension("time", 2)
        nc.createDimension("y", 3)
        nc.createDimension("x", 4)
        t = nc.createVariable("time", "f8", ("time",))
        t.units, t.calendar = "hours since 2024-01-01T00:00:00Z", "proleptic_gregorian"
        t._CoordinateAxisType = "Time"
        t._ChunkSizes = np.int32(1)
        t[:] = [0, 6]
        for axis, n in (("y", 3), ("x", 4)):
            v = nc.createVariable(axis, "f4", (axis,))
            v.units = "km"
            v._CoordinateAxisType = "GeoY" if axis == "y" else "GeoX"
            v[:] = np.arange(n)
        proj = nc.createVariable("LambertConformal_Projection", "i4")
        proj.grid_mapping_name = "lambert_conformal_conic"
        proj._CoordinateTransformType = "Projection"
        proj._CoordinateAxes = "y x"
        temp = nc.createVariable("Temperature", "f4", ("time", "y", "x"), fill_value=np.nan)
        temp.units = "K"
        temp.grid_mapping = "LambertConformal_Projection"
        temp._ChunkSizes = np.array([1, 3, 4], "i4")
        temp[:] = np.arange(24, dtype="f4").reshape(2, 3, 4)
    ac.import_netcdf(tmp_path / "coll", [path], progress=False)
    got = assert_reads_back(path, tmp_path / "coll")
    assert got["x"].attrs["_CoordinateAxisType"] == "GeoX"
    assert got["LambertConformal_Projection"].attrs["_CoordinateTransformType"] == "Projection"
    np.testing.assert_array_equal(got["Temperature"].attrs["_ChunkSizes"], [1, 3, 4])
    assert got.attrs["_CoordSysBuilder"] == "ucar.nc2.dataset.conv.CF1Convention"
    # The names as stored, and as a raw open (mask_and_scale=False) shows `_FillValue`.
    stored = ac.open(tmp_path / "coll")["ncss_subset"]
    assert stored["time"].attrs["_CoordinateAxisType"] == "Time"
    with xr.open_dataset(path, mask_and_scale=False) as raw:
        assert np.isnan(raw["Temperature"].attrs["_FillValue"])


def test_zero_length_dimensions_of_any_rank_import_and_read_back(tmp_path):
    """An unlimited dimension with no records yet, in every position of arrays of rank 1 to 4,
    of numbers, strings and encoded times; and `open_mfdataset` over two such files."""
    files = []
    for f in range(2):
        path = tmp_path / f"empty_{f}.nc"
        with netCDF4.Dataset(path, "w") as nc:
            nc.createDimension("rec", None)
            for axis, n in (("a", 2), ("b", 3), ("c", 1)):
                nc.createDimension(axis, n)
            t = nc.createVariable("rec", "f8", ("rec",))
            t.units, t.calendar = "days since 2000-01-01", "standard"
            nc.createVariable("label", str, ("rec",))
            for rank in range(1, 5):
                others = ["a", "b", "c"][: rank - 1]
                for at in range(rank):
                    dims = [*others[:at], "rec", *others[at:]]
                    nc.createVariable(f"v{rank}_{at}", "f4", tuple(dims))
            nc.createVariable("fixed", "i2", ("a",))[:] = [1, 2]
        files.append(path)
    ac.import_netcdf(tmp_path / "coll", files, progress=False)
    got = assert_reads_back(files[0], tmp_path / "coll")
    for rank, at in itertools.chain.from_iterable(((r, a) for a in range(r)) for r in range(1, 5)):
        assert got[f"v{rank}_{at}"].shape[at] == 0 and got[f"v{rank}_{at}"].ndim == rank
    combined = ac.open_mfdataset(tmp_path / "coll", combine="nested", concat_dim="file").load()
    assert combined["v4_3"].shape == (2, 2, 3, 1, 0)


def test_booleans_written_by_xarray_import_and_read_back(tmp_path):
    path = tmp_path / "flags.nc"
    xr.Dataset({"wet": (("x",), np.array([True, False, True]))}).to_netcdf(path)
    ac.import_netcdf(tmp_path / "coll", [path], progress=False)
    got = assert_reads_back(path, tmp_path / "coll")
    assert got["wet"].dtype == bool
    stored = ac.open(tmp_path / "coll")["flags"]["wet"]
    assert stored.dtype == np.int8 and stored.attrs["dtype"] == "bool"
