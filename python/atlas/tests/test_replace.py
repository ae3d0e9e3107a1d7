"""Appends that replace datasets: ``Writer(location, mode="append", replace=True)`` and
``python -m atlas_collections import --append --replace`` hide the old dataset of a name in the
commit that adds the new one, so the new version has each name once with the new data, older
versions read the old data, and ``log()`` counts what each version hid."""

import subprocess
import sys

import numpy as np
import pytest

import atlas_collections as ac
from atlas_collections import errors


def _write(location: str, values: dict, **options) -> dict:
    with ac.Writer(location, mode="append", **options) as writer:
        for name, value in values.items():
            writer.write(name, {"temp": (("x",), np.full(3, value, dtype="f4"))})
        return writer.finish()


def test_replace_hides_the_old_dataset_in_the_same_version(tmp_path):
    location = str(tmp_path / "grown")
    _write(location, {"a": 1.0, "b": 2.0, "c": 3.0})
    with pytest.raises(errors.DuplicateNameError):
        _write(location, {"b": 20.0})
    report = _write(location, {"b": 20.0, "d": 40.0}, replace=True)
    assert (report["version"], report["datasets"], report["replaced"]) == (2, 2, 1)

    c = ac.open(location)
    assert c.names == ["a", "c", "b", "d"]
    np.testing.assert_array_equal(c["b"]["temp"][...], np.full(3, 20.0, "f4"))
    log = c.log()
    assert [(e["kind"], e["datasets"], e["hidden"]) for e in log] == [
        ("append", 3, 0),
        ("replace", 2, 1),
    ]
    old = ac.open(location, version=1)
    assert old.names == ["a", "b", "c"]
    np.testing.assert_array_equal(old["b"]["temp"][...], np.full(3, 2.0, "f4"))

    # A delete of the replaced name hides the new dataset; version 1 keeps the old one.
    c.delete(["b"])
    assert ac.open(location).names == ["a", "c", "d"]
    assert ac.open(location, version=1).names == ["a", "b", "c"]


def test_replace_needs_append_mode(tmp_path):
    with pytest.raises(ValueError):
        ac.Writer(str(tmp_path / "new"), replace=True)


def test_import_append_replace(tmp_path):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("netCDF4")
    out = tmp_path / "grown"

    def nc(directory, stem, value):
        directory.mkdir(exist_ok=True)
        path = directory / f"{stem}.nc"
        xr.Dataset({"v": (("x",), np.full(4, value, dtype="f4"))}).to_netcdf(path)
        return str(path)

    first = [nc(tmp_path / "one", "jan", 1.0), nc(tmp_path / "one", "feb", 2.0)]
    summary = ac.import_netcdf(out, first, progress=False, append=True)
    assert (summary.version, summary.replaced) == (1, 0)
    fixed = nc(tmp_path / "two", "feb", 20.0)
    command = [sys.executable, "-m", "atlas_collections", "import", str(out), fixed]
    refused = subprocess.run(
        command + ["--no-progress", "--append"], capture_output=True, text=True
    )
    assert refused.returncode == 1, refused.stderr
    done = subprocess.run(
        command + ["--no-progress", "--append", "--replace"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "as version 2, replacing 1" in done.stdout
    c = ac.open(str(out))
    assert c.names == ["jan", "feb"]
    np.testing.assert_array_equal(c["feb"]["v"][...], np.full(4, 20.0, "f4"))
    usage = subprocess.run(command + ["--no-progress", "--replace"], capture_output=True)
    assert usage.returncode == 2
