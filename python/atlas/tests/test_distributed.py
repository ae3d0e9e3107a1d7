"""A computation over many datasets on a dask.distributed cluster of worker processes: every
object the backend puts into the graph pickles by location and reopens in the worker, once per
process, and the numbers equal the in-process ones."""

import os

import numpy as np
import pytest
import xarray as xr
from distributed import Client, LocalCluster

import atlas_collections as ac

DATASETS = 200


def write_collection(location):
    rng = np.random.default_rng(3)
    with ac.Writer(location) as w:
        for i in range(DATASETS):
            t2m = rng.normal(280.0 + i / 10, 5.0, size=(6, 8)).astype("f4")
            w.write(f"station_{i:03}", {"t2m": (("time", "x"), t2m, {"units": "K"})})


def mean_of_every_dataset(location):
    parts = [
        xr.open_dataset(location, engine="atlas", group=f"station_{i:03}", chunks={})["t2m"]
        for i in range(DATASETS)
    ]
    return xr.concat(parts, dim="station").mean(dim=("station", "x"))


def opens_in_this_process():
    import atlas_collections._core as core

    return dict(core._REOPEN_OPENS)


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def check_cluster_mean(client, location):
    expected = mean_of_every_dataset(location).compute(scheduler="synchronous")
    lazy = mean_of_every_dataset(location)
    got = client.compute(lazy).result()
    np.testing.assert_array_equal(got.values, expected.values)
    assert got.dims == ("time",) and got.shape == (6,)
    # The workers read through collections they reopened from the pickled graph, each worker
    # process opening the collection once for all its tasks.
    opens = client.run(opens_in_this_process)
    key = location if "://" in location else os.path.abspath(location)
    assert any(key in per_worker for per_worker in opens.values()), opens
    assert all(per_worker.get(key, 0) <= 1 for per_worker in opens.values()), opens


def test_a_mean_over_200_datasets_on_worker_processes_equals_the_in_process_one(tmp_path, client):
    location = tmp_path / "coll"
    write_collection(location)
    check_cluster_mean(client, str(location))


def test_the_same_on_the_s3_test_server(client, s3_prefix):
    write_collection(s3_prefix)
    check_cluster_mean(client, s3_prefix)
