"""``compact``: a growing collection of 20 parts (with deletes) rewritten as one part reads
exactly as before through every layer above the collection:
``open_mfdataset`` with and without dask, ``select`` on attributes and statistics, lookups;
the version before the compaction still reads its parts; ``log`` names the compaction; a
location that is not a growing collection is refused."""

import numpy as np
import pytest
import xarray as xr

import atlas_collections as ac

PARTS = 20
PER_PART = 5


def _station(part: int, index: int) -> xr.Dataset:
    rng = np.random.default_rng(part * 100 + index)
    temp = rng.normal(10 + part, 3, size=(6, 4)).astype("f4")
    return xr.Dataset(
        {
            "temp": (("time", "level"), temp, {"units": "degC"}),
            "flag": (("time",), (np.arange(6) + index) % 3),
        },
        coords={"time": np.arange(6, dtype="i8"), "level": np.array([1000, 850, 500, 250])},
        attrs={"region": ["north", "south", "east"][(part + index) % 3], "part": part},
    )


def _grow(location: str) -> list[str]:
    for part in range(PARTS):
        with ac.Writer(location, mode="append") as writer:
            for index in range(PER_PART):
                writer.write_xarray(f"s{part:02}_{index}", _station(part, index))
            writer.finish()
    gone = ["s00_1", "s07_0", "s07_4", "s19_2"]
    ac.open(location).delete(gone)
    return gone


def _views(location, **open_options):
    c = ac.open(location, **open_options)
    nested = {"combine": "nested", "concat_dim": "station"}
    eager = ac.open_mfdataset(c, **nested).load()
    lazy = ac.open_mfdataset(c, **nested, chunks={"station": 7})
    mean = lazy["temp"].mean(dim=("time", "level")).compute()
    selected = (
        c.select(attrs={"region": "north"}),
        c.select(where=[("temp", "max", ">", 25.0)]),
        c.select(attrs={"region": ["south", "east"]}, where=[("flag", "min", "==", 0)]),
    )
    return c, eager, lazy, mean, selected


def test_a_compacted_collection_reads_as_its_parts_did(tmp_path):
    location = str(tmp_path / "grown")
    gone = _grow(location)
    before, eager, lazy, mean, selected = _views(location)
    assert before.version == PARTS
    assert len(before.names) == PARTS * PER_PART - len(gone)
    assert lazy["temp"].data.numblocks[0] > 1  # dask really splits the stations

    report = ac.compact(location)
    assert isinstance(report, ac.CompactReport)
    assert (report.version, report.replaced_parts) == (PARTS + 1, PARTS)
    assert (report.datasets, report.attempts, report.carried_deletes) == (len(before.names), 1, 0)

    after, eager2, lazy2, mean2, selected2 = _views(location)
    assert after.version == PARTS + 1
    assert after.names == before.names
    xr.testing.assert_identical(eager2, eager)
    xr.testing.assert_identical(lazy2.compute(), lazy.compute())
    xr.testing.assert_identical(mean2, mean)
    assert selected2 == selected
    assert all(selected), selected  # each condition matches something
    for name in ("s03_2", "s19_4"):
        np.testing.assert_array_equal(after[name]["temp"][...], before[name]["temp"][...])
        assert after[name].attrs == before[name].attrs
    log = after.log()
    assert [entry["kind"] for entry in log] == ["append"] * PARTS + ["compact"]
    assert log[-1]["datasets"] == len(before.names) and log[-1]["part"] == report.part

    # The version before the compaction reads its 20 parts as before, until gc.
    old, eager_old, _, mean_old, selected_old = _views(location, version=PARTS)
    assert old.names == before.names
    xr.testing.assert_identical(eager_old, eager)
    xr.testing.assert_identical(mean_old, mean)
    assert selected_old == selected


def test_compact_refuses_what_is_not_a_growing_collection(tmp_path):
    plain = str(tmp_path / "plain")
    ac.write_xarray(plain, {"only": _station(0, 0)})
    with pytest.raises(ac.CollectionExistsError) as refused:
        ac.compact(plain)
    assert refused.value.kind == "plain_collection"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ac.NotACollectionError) as missing:
        ac.compact(str(empty))
    assert missing.value.kind == "not_growing"
