"""Test 3: every refused NetCDF import names the file (and variable) and leaves nothing."""

import os

import numpy as np
import pytest
import xarray as xr

import atlas_collections as ac


def good(path):
    xr.Dataset({"v": (("x",), np.arange(4, dtype="f4"))}, attrs={"a": "b"}).to_netcdf(path)
    return path


def assert_nothing_left(out):
    assert not (out / "data.atlas").exists()
    assert not out.exists() or not any(out.iterdir())
    with pytest.raises(ac.NotACollectionError):
        ac.open(out)


def refused(out, files, **kwargs):
    with pytest.raises(ac.ImportRefusedError) as info:
        ac.import_netcdf(out, files, progress=False, **kwargs)
    assert_nothing_left(out)
    return info.value


def test_an_unreadable_file_is_refused_by_name(tmp_path):
    ok = good(tmp_path / "ok.nc")
    bad = tmp_path / "broken.nc"
    bad.write_bytes(b"this is not netcdf at all" * 10)
    error = refused(tmp_path / "out", [ok, bad])
    assert error.file == str(bad) and "broken.nc" in str(error)
    assert "cannot be read" in str(error)


def test_a_missing_file_is_refused_by_name(tmp_path):
    error = refused(tmp_path / "out", [good(tmp_path / "ok.nc"), tmp_path / "missing.nc"])
    assert "missing.nc" in str(error)


def test_a_dtype_the_format_cannot_hold_names_file_variable_and_mapping(tmp_path):
    path = tmp_path / "flags.nc"
    xr.Dataset(
        {"ok": (("x",), np.zeros(2, "f4")), "flag": (("x",), np.array([1 + 2j, 3j]))}
    ).to_netcdf(path, engine="h5netcdf", invalid_netcdf=True)
    error = refused(tmp_path / "out", [good(tmp_path / "a.nc"), path], engine="h5netcdf")
    assert error.file == str(path) and error.variable == "flag"
    assert "flags.nc" in str(error) and "'flag'" in str(error)
    assert "complex" in str(error) and "the format holds" in str(error)


def test_a_user_defined_compound_type_names_file_variable_and_reason(tmp_path):
    import netCDF4

    path = tmp_path / "obs.nc"
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("x", 2)
        pair = nc.createCompoundType(np.dtype([("count", "i4"), ("mean", "f8")]), "pair_t")
        obs = nc.createVariable("obs", pair, ("x",))
        obs[:] = np.array([(1, 2.5), (3, 4.5)], dtype=[("count", "i4"), ("mean", "f8")])
        nc.createVariable("ok", "f4", ("x",))[:] = [1, 2]
    error = refused(tmp_path / "out", [good(tmp_path / "a.nc"), path])
    assert error.file == str(path) and error.variable == "obs"
    assert "structured/void arrays have no Atlas element type" in error.reason


def test_an_attribute_of_no_atlas_type_names_file_variable_and_attribute(tmp_path):
    path = tmp_path / "attrs.nc"
    xr.Dataset({"v": (("x",), np.zeros(2, "f4"), {"z": 1 + 2j, "units": "1"})}).to_netcdf(
        path, engine="h5netcdf", invalid_netcdf=True
    )
    error = refused(tmp_path / "out", [good(tmp_path / "a.nc"), path], engine="h5netcdf")
    assert error.file == str(path) and error.variable == "v"
    assert error.reason.startswith("attribute 'z': cannot store a value of type complex128")
    # A global attribute HDF5 holds but NetCDF has no type for: a 2-D array.
    import h5py

    grid = good(tmp_path / "grid.nc")
    with h5py.File(grid, "a") as f:
        f.attrs["grid"] = np.zeros((2, 2))
    error = refused(tmp_path / "out2", [grid], engine="h5netcdf")
    assert error.file == str(grid) and error.variable is None
    assert error.reason.startswith("attribute 'grid': cannot store a 2-D array")


def test_an_invalid_dataset_name_is_refused_before_anything_is_read(tmp_path):
    path = good(tmp_path / "_private.nc")
    error = refused(tmp_path / "out", [path])
    assert error.file == str(path) and "'_private'" in str(error) and "reserved" in str(error)


def test_a_repeated_dataset_name_is_refused(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one, two = good(tmp_path / "a" / "run.nc"), good(tmp_path / "b" / "run.nc")
    error = refused(tmp_path / "out", [one, two])
    assert error.file == str(two) and "repeats" in str(error) and str(one) in str(error)


def test_an_invalid_variable_name_is_refused(tmp_path):
    path = tmp_path / "names.nc"
    xr.Dataset({"_hidden": (("x",), np.zeros(2, "f4"))}).to_netcdf(path)
    error = refused(tmp_path / "out", [path])
    assert error.variable == "_hidden" and "names.nc" in str(error)
    assert "a leading '_' is reserved" in error.reason


def test_an_existing_collection_is_not_overwritten(tmp_path):
    out = tmp_path / "out"
    ac.import_netcdf(out, [good(tmp_path / "a.nc")], progress=False)
    with pytest.raises(ac.CollectionExistsError):
        ac.import_netcdf(out, [good(tmp_path / "b.nc")], progress=False)
    assert ac.open(out).names == ["a"]


def test_the_command_reports_a_refusal_and_exits_non_zero(tmp_path):
    import subprocess
    import sys

    bad = tmp_path / "broken.nc"
    bad.write_bytes(b"nope")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "atlas_collections",
            "import",
            str(tmp_path / "out"),
            str(bad),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert "broken.nc" in done.stderr and "refused" in done.stderr
    assert not (tmp_path / "out" / "data.atlas").exists()


def test_the_command_without_the_netcdf_extra_names_it_and_exits_2(tmp_path):
    """In an environment without tqdm (or xarray, netCDF4, h5netcdf) the command says which
    extra to install instead of failing with an ImportError."""
    import subprocess
    import sys

    # A directory on the path whose `tqdm` module cannot be imported, as if not installed.
    blocker = tmp_path / "blocked"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\nsys.modules['tqdm'] = None\n"
        "import importlib.machinery, importlib.util\n"
        "_find = importlib.util.find_spec\n"
        "def find_spec(name, package=None):\n"
        "    return None if name == 'tqdm' else _find(name, package)\n"
        "importlib.util.find_spec = find_spec\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{blocker}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    command = [sys.executable, "-m", "atlas_collections", "import", str(tmp_path / "out")]
    done = subprocess.run(command + ["x.nc"], capture_output=True, text=True, env=env)
    assert done.returncode == 2, done.stderr
    assert "tqdm" in done.stderr and "atlas-collections[netcdf]" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
    # Without a progress bar tqdm is not needed: the command goes on (and refuses x.nc).
    done = subprocess.run(
        command + ["x.nc", "--no-progress"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 1 and "x.nc" in done.stderr, done.stderr


def test_a_variable_repeating_a_dimension_is_refused(tmp_path):
    import netCDF4

    path = tmp_path / "square.nc"
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("time", 2)
        nc.createVariable("temp", "f8", ("time", "time"))[:] = np.eye(2)
    error = refused(tmp_path / "out", [path])
    assert error.variable == "temp" and "repeat a dimension" in error.reason


@pytest.mark.parametrize("dims", [("x", "y"), ("x",), ()], ids=["2-d", "1-d", "scalar"])
def test_a_variable_length_type_is_refused_not_crashed(tmp_path, dims):
    # netCDF-C's dap4 test files (test_vlen1.nc .. test_vlen8.nc): netCDF4 hands a vlen
    # variable over as an object array of arrays, and a scalar one as its single element's
    # array under no dimensions (which xarray's cftime check and the writer both tripped on).
    import netCDF4

    path = tmp_path / "ragged.nc"
    with netCDF4.Dataset(path, "w") as nc:
        ragged = nc.createVLType(np.int32, "ragged_t")
        nc.createDimension("x", 2)
        nc.createDimension("y", 1)
        v = nc.createVariable("v", ragged, dims)
        rows = [np.array([1, 3, 5, 7], "i4"), np.array([17, 19], "i4")]
        if dims == ():
            v[0] = rows[0]
        for i, row in enumerate(rows[: 2 if dims else 0]):
            v[(i, 0) if len(dims) == 2 else i] = row
        nc.createVariable("ok", "f4", ("x",))[:] = [1, 2]
    error = refused(tmp_path / "out", [good(tmp_path / "a.nc"), path])
    assert error.file == str(path) and error.variable == "v"
    assert "dtype vlen of int32 cannot be stored" in error.reason
    assert "variable-length (vlen) elements have no Atlas element type" in error.reason
    # A writer given such a variable (xarray's reading of it) refuses it too.
    ds = xr.open_dataset(path).load()
    with ac.Writer(tmp_path / "direct") as w:
        if dims:
            with pytest.raises(ac.UnsupportedDTypeError, match="variable-length"):
                w.write("d", {"v": ds["v"]})
        else:
            # No dimensions for data of one axis: not written under invented ones.
            with pytest.raises(ac.LayoutError, match="0 dimension names for 1 axes"):
                w.write("d", {"v": ds["v"]})
        with pytest.raises(ac.UnsupportedDTypeError, match="variable-length"):
            w.write("d", *ac.xarray_backend.encode_dataset(ds))
        w.write("d", {"ok": ds["ok"]})
