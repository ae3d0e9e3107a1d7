"""Test 1 of issue 42, groups: a NetCDF-4 file with groups imports as one dataset per group,
named ``<stem>/<group path>``; ``xr.open_datatree(collection, engine="atlas")`` gives, under
the stem, the tree ``xr.open_datatree(file)`` gives; ``group=`` opens one node; and a path
holding ``data.atlas`` opens without naming the engine (``guess_can_open``)."""

import warnings
from typing import Any

import netCDF4
import numpy as np
import pytest
import xarray as xr

import atlas_collections as ac


def write_nested(path) -> None:
    """Three levels below the root, dimensions defined in parents and used below them, an
    unlimited dimension, attributes at every level, a time coordinate in a non-standard
    calendar in a subgroup, a group holding only attributes and an empty leaf group."""
    with netCDF4.Dataset(path, "w") as nc:
        nc.Conventions = "CF-1.8"
        nc.title = "nested groups"
        nc.createDimension("time", None)
        nc.createDimension("x", 4)
        t = nc.createVariable("time", "f8", ("time",))
        t.units, t.calendar = "hours since 2000-01-01", "360_day"
        t[:] = [0, 6, 12]
        nc.createVariable("x", "f4", ("x",))[:] = np.arange(4)
        ocean = nc.createGroup("ocean")
        ocean.realm = "ocean"
        ocean.createDimension("depth", 2)
        sst = ocean.createVariable("sst", "f4", ("time", "x"), fill_value=np.float32(-1))
        sst.units = "K"
        sst[:] = np.arange(12, dtype="f4").reshape(3, 4)
        ice = ocean.createGroup("ice")
        ice.note = "attributes only"
        profiles = ice.createGroup("profiles")
        temp = profiles.createVariable("temp", "f8", ("depth", "x"))  # both from parents
        temp[:] = np.arange(8.0).reshape(2, 4)
        profiles.createDimension("obs", 3)
        when = profiles.createVariable("obs_time", "i4", ("obs",))
        when.units, when.calendar = "days since 1850-01-01", "noleap"
        when[:] = [0, 31, 59]
        nc.createGroup("empty")


def tree_without_name(tree: xr.DataTree) -> xr.DataTree:
    """``tree`` as a root of its own: a subtree keeps its name, a file's root has none."""
    copy = tree.copy()
    copy.orphan()
    copy.name = None
    return copy


@pytest.fixture
def nested(tmp_path):
    path = tmp_path / "radar.nc"
    write_nested(path)
    out = tmp_path / "coll"
    summary = ac.import_netcdf(out, [path], progress=False)
    return path, out, summary


def test_each_group_is_a_dataset_named_by_stem_and_path(nested):
    path, out, summary = nested
    c = ac.open(out)
    assert c.names == [
        "radar",
        "radar/ocean",
        "radar/ocean/ice",
        "radar/ocean/ice/profiles",
        "radar/empty",
    ]
    assert summary.datasets == 5 and summary.files == 1
    assert c["radar/ocean/ice"].keys() == [] and c["radar/ocean/ice"].attrs == {
        "note": "attributes only"
    }
    profiles = c["radar/ocean/ice/profiles"]
    assert profiles["temp"].dims == ("depth", "x"), "dimensions inherited from the parents"


@pytest.mark.parametrize(
    "options", [{}, {"decode_times": False}, {"use_cftime": True}], ids=["defaults", "raw", "cf"]
)
def test_the_datatree_under_the_stem_is_the_files_tree(nested, options):
    path, out, _ = nested
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with xr.open_datatree(path, **options) as want:
            want = want.load()
        got = xr.open_datatree(out, engine="atlas", **options).load()
        xr.testing.assert_identical(tree_without_name(got["radar"]), want)
        # group= opens a subtree, and one node.
        sub = xr.open_datatree(out, engine="atlas", group="radar/ocean", **options).load()
        with xr.open_datatree(path, group="ocean", **options) as want_sub:
            xr.testing.assert_identical(sub, want_sub.load())
        node = xr.open_dataset(out, engine="atlas", group="radar/ocean/ice/profiles", **options)
        with xr.open_dataset(path, group="ocean/ice/profiles", **options) as one:
            xr.testing.assert_identical(node.load(), one.load())
    assert sorted(got["radar"].children) == ["empty", "ocean"]


def test_a_path_holding_a_collection_opens_without_an_engine(nested, tmp_path):
    path, out, _ = nested
    with xr.open_dataset(path, group="ocean") as want:
        want = want.load()
    got = xr.open_dataset(out, group="radar/ocean")
    xr.testing.assert_identical(got.load(), want)
    tree = xr.open_datatree(out)
    assert set(tree.children) == {"radar"}
    got = xr.open_dataset(str(out / "data.atlas"), group="radar/ocean")
    xr.testing.assert_identical(got.load(), want)
    backend = xr.backends.list_engines()["atlas"]
    collection: Any = ac.open(out)
    assert backend.guess_can_open(out) and backend.guess_can_open(collection)
    assert backend.guess_can_open(f"file://{out}")
    assert not backend.guess_can_open(tmp_path) and not backend.guess_can_open(path)
    assert not backend.guess_can_open(f"file://{tmp_path}/nothing-here")


def test_a_missing_group_names_what_the_collection_holds(nested):
    _, out, _ = nested
    with pytest.raises(ac.DatasetNotFoundError):
        xr.open_dataset(out, engine="atlas", group="radar/nope")
    with pytest.raises(ac.DatasetNotFoundError, match="nope"):
        xr.open_datatree(out, engine="atlas", group="nope")


def test_an_fm301_like_radar_volume(tmp_path):
    """The shape of a CfRadial2 / FM301 volume: root metadata and scalar variables, one group
    per sweep with its own time and range coordinates, and a parameters group."""
    path = tmp_path / "volume.nc"
    with netCDF4.Dataset(path, "w") as nc:
        nc.Conventions = "Cf/Radial"
        nc.version = "2.0"
        nc.instrument_name = "TEST"
        nc.createDimension("sweep", 2)
        names = nc.createVariable("sweep_group_name", str, ("sweep",))
        names[:] = np.array(["sweep_0", "sweep_1"], dtype=object)
        nc.createVariable("latitude", "f8")[:] = 45.0
        nc.createVariable("longitude", "f8")[:] = 7.6
        start = nc.createVariable("time_coverage_start", "S1", ("sweep",))
        start[:] = np.array([b"2", b"0"])
        params = nc.createGroup("radar_parameters")
        params.createVariable("radar_beam_width_h", "f4")[:] = 1.0
        for s in range(2):
            sweep = nc.createGroup(f"sweep_{s}")
            sweep.createDimension("time", 6)
            sweep.createDimension("range", 5)
            t = sweep.createVariable("time", "f8", ("time",))
            t.units = "seconds since 2024-05-01T12:00:00Z"
            t[:] = np.arange(6) * 2.0
            r = sweep.createVariable("range", "f4", ("range",))
            r.units = "meters"
            r[:] = np.arange(5) * 250.0
            az = sweep.createVariable("azimuth", "f4", ("time",))
            az[:] = np.arange(6) * 60.0
            dbz = sweep.createVariable("DBZH", "i2", ("time", "range"), fill_value=np.int16(-32768))
            dbz.scale_factor, dbz.add_offset, dbz.units = 0.01, 0.0, "dBZ"
            dbz.coordinates = "elevation azimuth range"
            dbz[:] = np.arange(30, dtype="f8").reshape(6, 5)
            el = sweep.createVariable("elevation", "f4", ("time",))
            el[:] = 0.5 + s
    ac.import_netcdf(tmp_path / "coll", [path], progress=False)
    with xr.open_datatree(path) as want:
        want = want.load()
    got = xr.open_datatree(tmp_path / "coll").load()
    xr.testing.assert_identical(tree_without_name(got["volume"]), want)
