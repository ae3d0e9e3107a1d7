"""Test 4: on the S3-compatible server (SeaweedFS, started by cargo xtask test): write, open, read,
stats, attributes, the xarray backend, and concurrent deletes from several processes, none lost
(on a plain collection and across the parts of a growing one).
Without the server's environment these tests fail (see conftest.s3_prefix), never skip."""

import numpy as np
import xarray as xr

import atlas_collections as ac

from concurrent_deletes import _delete_each, run_concurrent_deletes
from conftest import small_dataset, write_collection


def test_write_open_read_stats_on_s3(s3_prefix):
    names = write_collection(s3_prefix, 6)
    c = ac.open(s3_prefix)
    assert c.request_count <= 3
    assert c.names == names
    assert not c._native.deletes_with_local_lock()
    want = small_dataset(4)["t2m"][1]
    np.testing.assert_array_equal(c["ds_004"]["t2m"][:], want)
    np.testing.assert_array_equal(c["ds_004"]["t2m"][5:9, ::3], want[5:9, ::3])
    assert c["ds_004"].attrs == {"member": 4, "source": "pytest"}
    assert c["ds_004"]["precip"].attrs["units"] == "mm"
    stats = c.stats("t2m")
    assert stats.datasets == 6
    assert stats.max == max(small_dataset(i)["t2m"][1].max() for i in range(6))
    ds = xr.open_dataset(s3_prefix, engine="atlas", group="ds_002")
    np.testing.assert_array_equal(ds["count"].values, small_dataset(2)["count"][1])


def test_a_collection_is_write_once_on_s3(s3_prefix):
    write_collection(s3_prefix, 1)
    try:
        ac.Writer(s3_prefix)
    except ac.CollectionExistsError as e:
        assert s3_prefix in str(e)
    else:
        raise AssertionError("a second writer was allowed")


def test_a_missing_collection_on_s3_is_not_a_collection(s3_prefix):
    try:
        ac.open(s3_prefix + "/nothing-here")
    except ac.NotACollectionError as e:
        assert e.path is not None and e.path.startswith(s3_prefix)
    else:
        raise AssertionError("opened nothing")


def test_concurrent_deletes_from_processes_lose_nothing_on_s3(s3_prefix):
    names = [f"d{i:03d}" for i in range(48)]
    with ac.Writer(s3_prefix) as w:
        for name in names:
            w.write(name, {"v": np.full(3, len(name), "f4")})
    run_concurrent_deletes(s3_prefix, names[:40], processes=4)  # checks each delete's report
    c = ac.open(s3_prefix)
    assert c.names == names[40:]
    assert c.stats("v").datasets == 8


def test_an_aborted_writer_publishes_nothing_on_s3(s3_prefix):
    w = ac.Writer(s3_prefix)
    w.write("d", {"v": np.zeros(2, "f4")})
    w.abort()
    try:
        ac.open(s3_prefix)
    except ac.NotACollectionError:
        pass
    else:
        raise AssertionError("an aborted write was published")


def test_appenders_in_several_processes_all_land_on_s3(s3_prefix):
    import multiprocessing

    from test_growing import _append, _values

    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        reports = pool.starmap(_append, [(s3_prefix, f"p{i}_", 5) for i in range(4)])
    assert sorted(r["version"] for r in reports) == [1, 2, 3, 4]
    c = ac.open(s3_prefix)
    assert c.version == 4 and len(c.names) == 20
    np.testing.assert_array_equal(c["p2_004"]["temp"][...], _values("p2_004"))
    first = ac.open(s3_prefix, version=1)
    assert len(first.names) == 5 and first.request_count == 1 + 2


def test_concurrent_deletes_across_parts_lose_nothing_on_s3(s3_prefix):
    import multiprocessing

    from test_growing import _append

    for prefix in ("jan_", "feb_", "mar_"):
        _append(s3_prefix, prefix, 4)
    names = ac.open(s3_prefix).names
    doomed = names[:10]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(3) as pool:
        reports = [
            r
            for part in pool.starmap(_delete_each, [(s3_prefix, doomed[i::3]) for i in range(3)])
            for r in part
        ]
    # Each delete hid its one name: none lost to a racing deleter, none counted twice.
    assert sorted((name, newly) for name, newly, _, _ in reports) == [
        (n, 1) for n in sorted(doomed)
    ]
    c = ac.open(s3_prefix)
    assert c.names == names[10:]
    assert c.version == 3
