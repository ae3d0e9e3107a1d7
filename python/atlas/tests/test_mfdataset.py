"""open_mfdataset: many datasets of a collection as one xarray Dataset, identical to
``xr.open_mfdataset`` over the NetCDF files they were imported from, with dask blocks that
each read a run of datasets (few tasks, few requests), on local disk, on the S3 test server and
on dask.distributed worker processes."""

import os
import uuid
import warnings
from concurrent.futures import ProcessPoolExecutor

import dask
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from distributed import Client, LocalCluster

import atlas_collections as ac
from atlas_collections.mfdataset import RunBackendArray

STATIONS = 2000
DAYS = pd.date_range("2023-01-01", "2023-12-31", freq="D")  # 365 daily values


def station(i: int) -> xr.Dataset:
    """A CF discrete-sampling station file: three daily variables, 0-d lat/lon/name."""
    rng = np.random.default_rng(i)
    n = len(DAYS)
    return xr.Dataset(
        {
            "tas": (("time",), rng.normal(280 + i / 100, 5, n).astype("f4"), {"units": "K"}),
            "pr": (("time",), rng.gamma(1.0, 2.0, n), {"units": "mm/day"}),
            "valid": (("time",), rng.integers(0, 2, n).astype("i2"), {"flag_values": "0 1"}),
        },
        coords={
            "time": ("time", DAYS, {"standard_name": "time"}),
            "lat": ((), 35.0 + (i % 200) * 0.1, {"units": "degrees_north"}),
            "lon": ((), -10.0 + (i // 200) * 0.5, {"units": "degrees_east"}),
            "station_name": ((), f"STATION-{i:05d}", {"cf_role": "timeseries_id"}),
        },
        attrs={"featureType": "timeSeries", "Conventions": "CF-1.8", "source": f"gauge {i}"},
    )


def write_station(i: int, path) -> None:
    station(i).to_netcdf(path)


def xr_open_mfdataset(files, **kwargs):
    """What ``xr.open_mfdataset`` gives, loaded, its files closed again: netCDF4 shares one
    HDF5 handle between opens of a file, and a handle left open by one test while another
    test imports the same file has crashed HDF5."""
    # xarray warns that its combine defaults will change; the comparison uses today's.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with xr.open_mfdataset(files, **kwargs) as ds:
            return ds.load()


def s3_location(tag: str) -> str:
    missing = [v for v in ("AWS_ENDPOINT_URL", "ATLAS_S3_TEST_BUCKET") if not os.environ.get(v)]
    if missing:
        pytest.fail(
            f"the S3 tests need {', '.join(missing)}: start the test server with "
            "`bash .ci/s3-server.sh start /tmp/s3 && source /tmp/s3/env`"
        )
    bucket = os.environ["ATLAS_S3_TEST_BUCKET"]
    return f"s3://{bucket}/pytest-mfdataset/{tag}-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def stations(tmp_path_factory):
    """2,000 station files and their collection (imported by the import path), local and S3."""
    root = tmp_path_factory.mktemp("stations")
    files = [root / f"station_{i:05d}.nc" for i in range(STATIONS)]
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(write_station, range(STATIONS), files, chunksize=100))
    local = root / "coll"
    ac.import_netcdf(local, files, progress=False)
    # The same datasets on S3, written from memory (a second import would read every file
    # again); the identity check below holds them to the files all the same.
    s3 = s3_location("stations")
    with ac.Writer(s3) as w:
        for i in range(STATIONS):
            w.write_xarray(f"station_{i:05d}", station(i))
    expected = xr_open_mfdataset(files, combine="nested", concat_dim="station")
    return {"files": files, "local": str(local), "s3": s3, "expected": expected}


def assert_same(got: xr.Dataset, want: xr.Dataset) -> None:
    xr.testing.assert_identical(got, want)
    for name, var in want.variables.items():
        assert got[name].dtype == var.dtype, (name, got[name].dtype, var.dtype)
        assert got[name].dims == var.dims, name
        assert got[name].attrs == var.attrs, name
    assert got.attrs == want.attrs


def test_2000_stations_nested_along_a_new_dim_equal_xarray_over_the_files(stations):
    got = ac.open_mfdataset(stations["local"], combine="nested", concat_dim="station")
    want = stations["expected"]
    assert_same(got, want)
    assert got.sizes == {"station": STATIONS, "time": 365}
    # Lazy: the data variables are run arrays, read only when indexed.
    assert isinstance(got["tas"].variable._data.array, RunBackendArray)
    picks = [3, STATIONS - 1, STATIONS // 4]
    sel = got["tas"].isel(station=picks, time=slice(10, 20))
    np.testing.assert_array_equal(
        sel.values, want["tas"].isel(station=picks, time=slice(10, 20)).values
    )
    np.testing.assert_array_equal(got["pr"][7].values, station(7)["pr"].values)
    assert got["station_name"].values[42] == "STATION-00042"


def test_a_subset_of_names_in_a_given_order(stations):
    picks = [17, 3, STATIONS * 3 // 4, STATIONS // 2]
    names = [f"station_{i:05d}" for i in picks]
    got = ac.open_mfdataset(stations["local"], names, combine="nested", concat_dim="station")
    want = xr_open_mfdataset(
        [stations["files"][i] for i in picks], combine="nested", concat_dim="station"
    )
    assert_same(got, want)


def test_with_chunks_a_mean_over_all_stations_is_few_tasks_and_few_requests(stations):
    c = ac.open(stations["local"])
    ds = ac.open_mfdataset(
        c, combine="nested", concat_dim="station", chunks={"station": STATIONS // 8}
    )
    assert ds["tas"].data.numblocks == (8, 1)
    mean = ds["tas"].mean("station")
    tasks = len(dict(mean.data.__dask_graph__()))
    assert tasks < STATIONS / 50, tasks
    c.reset_requests()
    got = mean.compute(scheduler="threads")
    requests = c.request_count
    want = stations["expected"]["tas"].mean("station").compute()
    xr.testing.assert_allclose(got, want, rtol=1e-5)
    blocks, variables = 8, 1
    assert requests <= blocks * variables, c.requests()
    # All three variables: still bounded by blocks x variables.
    c2 = ac.open(stations["local"])
    ds2 = ac.open_mfdataset(
        c2, combine="nested", concat_dim="station", chunks={"station": STATIONS // 8}
    )
    c2.reset_requests()
    means = ds2[["tas", "pr", "valid"]].mean("station").compute()
    assert c2.request_count <= blocks * 3, c2.requests()
    xr.testing.assert_allclose(
        means, stations["expected"][["tas", "pr", "valid"]].mean("station").compute(), rtol=1e-5
    )


def test_on_the_s3_test_server(stations):
    c = ac.open(stations["s3"])
    got = ac.open_mfdataset(c, combine="nested", concat_dim="station")
    assert_same(got, stations["expected"])
    ds = ac.open_mfdataset(
        c, combine="nested", concat_dim="station", chunks={"station": STATIONS // 4}
    )
    mean = ds["tas"].mean("station")
    assert len(dict(mean.data.__dask_graph__())) < STATIONS / 50
    c.reset_requests()
    got_mean = mean.compute(scheduler="threads")
    assert c.request_count <= 4 * 1, c.requests()
    xr.testing.assert_allclose(
        got_mean, stations["expected"]["tas"].mean("station").compute(), rtol=1e-5
    )


def test_deleted_datasets_are_left_out(stations, tmp_path):
    files = stations["files"][:30]
    location = tmp_path / "coll"
    ac.import_netcdf(location, files, progress=False)
    ac.open(location).delete(["station_00004", "station_00020"])
    got = ac.open_mfdataset(location, combine="nested", concat_dim="station")
    keep = [f for i, f in enumerate(files) if i not in (4, 20)]
    assert_same(got, xr_open_mfdataset(keep, combine="nested", concat_dim="station"))
    with pytest.raises(ac.DatasetNotFoundError, match="station_00004"):
        ac.open_mfdataset(
            location, ["station_00001", "station_00004"], combine="nested", concat_dim="station"
        ).load()


@pytest.fixture(scope="module")
def months(tmp_path_factory):
    """One station's year as 12 monthly files (28-31 days each), imported out of order."""
    root = tmp_path_factory.mktemp("months")
    year = station(7)
    files = []
    for m in range(1, 13):
        path = root / f"month_{m:02d}.nc"
        part = year.sel(time=year.time.dt.month == m)
        part.attrs["month"] = m
        part.to_netcdf(path)
        files.append(path)
    shuffled = [files[i] for i in (6, 0, 11, 3, 1, 2, 4, 5, 7, 8, 9, 10)]
    local = root / "coll"
    ac.import_netcdf(local, shuffled, progress=False)
    return {"files": files, "shuffled": shuffled, "local": str(local)}


def test_12_months_by_coords_along_time_equal_xarray_over_the_files(months):
    got = ac.open_mfdataset(months["local"], combine="by_coords")
    want = xr_open_mfdataset(months["shuffled"], combine="by_coords")
    assert_same(got, want)
    assert got.sizes == {"time": 365}
    assert pd.Index(got.time.values).is_monotonic_increasing
    assert isinstance(got["tas"].variable._data.array, RunBackendArray)
    np.testing.assert_array_equal(
        got["tas"].isel(time=slice(25, 40)).values, want["tas"].isel(time=slice(25, 40)).values
    )
    chunked = ac.open_mfdataset(months["local"], combine="by_coords", chunks={"time": 100})
    assert chunked["pr"].data.chunks == ((100, 100, 100, 65),)
    xr.testing.assert_identical(chunked.compute(), want.compute())
    # The same with xarray's coming defaults.
    with xr.set_options(use_new_combine_kwarg_defaults=True):
        assert_same(
            ac.open_mfdataset(months["local"], combine="by_coords"),
            xr_open_mfdataset(months["shuffled"], combine="by_coords"),
        )


def test_nested_along_the_existing_time_dim_in_collection_order(months):
    got = ac.open_mfdataset(months["local"], combine="nested", concat_dim="time")
    want = xr_open_mfdataset(months["shuffled"], combine="nested", concat_dim="time")
    assert_same(got, want)
    for options in (
        {"data_vars": "minimal", "coords": "minimal", "compat": "override"},
        {"data_vars": "all", "coords": "all", "join": "exact"},
    ):
        assert_same(
            ac.open_mfdataset(months["local"], combine="nested", concat_dim="time", **options),
            xr_open_mfdataset(months["shuffled"], combine="nested", concat_dim="time", **options),
        )


def test_shapes_the_fast_path_does_not_cover_fall_back_to_xarray(tmp_path):
    # Ragged: stations with different periods (join="outer" aligns their time indexes) and
    # one station without "valid".
    files = []
    for i in range(6):
        ds = station(i).isel(time=slice(i * 10, 200 + i * 5))
        if i == 4:
            ds = ds.drop_vars("valid")
        path = tmp_path / f"s{i}.nc"
        ds.to_netcdf(path)
        files.append(path)
    ac.import_netcdf(tmp_path / "coll", files, progress=False)
    got = ac.open_mfdataset(tmp_path / "coll", combine="nested", concat_dim="station")
    # The fallback: one dask block per dataset, combined by xarray.
    assert dask.is_dask_collection(got["tas"]) and got["tas"].data.numblocks[0] == 6
    assert_same(got, xr_open_mfdataset(files, combine="nested", concat_dim="station"))
    attrs = ac.open_mfdataset(
        tmp_path / "coll", combine="nested", concat_dim="station", combine_attrs="drop_conflicts"
    )
    assert_same(
        attrs,
        xr_open_mfdataset(
            files, combine="nested", concat_dim="station", combine_attrs="drop_conflicts"
        ),
    )
    # What xarray refuses, this refuses too, with xarray's error.
    with pytest.raises(ValueError, match="compat='override'"):
        ac.open_mfdataset(
            tmp_path / "coll",
            combine="nested",
            concat_dim="station",
            compat="override",
            coords="different",
        )


def test_a_run_read_through_the_collection(stations):
    c = ac.open(stations["local"])
    names = ["station_00010", "station_00002", f"station_{STATIONS - 1:05d}"]
    (tag, flat), shapes = c._native.read_run("tas", names)
    assert tag == "float32" and shapes == [[365]] * 3
    np.testing.assert_array_equal(
        np.asarray(flat).reshape(3, 365),
        np.stack([station(i)["tas"].values for i in (10, 2, STATIONS - 1)]),
    )
    with pytest.raises(ac.DatasetNotFoundError):
        c._native.read_run("tas", ["station_00010", "nope"])
    with pytest.raises(ac.ArrayNotFoundError):
        c._native.read_run("nope", names)
    assert dask.is_dask_collection(
        ac.open_mfdataset(c, names, combine="nested", concat_dim="s", chunks={})["tas"]
    )


def test_on_dask_distributed_worker_processes(stations):
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        for location in (stations["local"], stations["s3"]):
            ds = ac.open_mfdataset(
                location, combine="nested", concat_dim="station", chunks={"station": STATIONS // 5}
            )
            got = client.compute(ds["pr"].mean("station")).result()
            want = ds["pr"].mean("station").compute(scheduler="synchronous")
            np.testing.assert_array_equal(got.values, want.values)


def test_xr_open_mfdataset_with_engine_atlas_over_datasets_of_a_collection(stations):
    c = ac.open(stations["local"])
    datasets = list(c.datasets())[:40]
    via_xarray = xr_open_mfdataset(datasets, engine="atlas", combine="nested", concat_dim="station")
    fast = ac.open_mfdataset(c, [d.name for d in datasets], combine="nested", concat_dim="station")
    xr.testing.assert_identical(via_xarray, fast)
    xr.testing.assert_identical(
        fast, xr_open_mfdataset(stations["files"][:40], combine="nested", concat_dim="station")
    )
