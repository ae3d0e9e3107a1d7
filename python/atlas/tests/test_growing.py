"""Growing collections from Python: ``Writer(location, mode="append")`` adds a part and a
version, ``open(location, version=N)`` (or ``tag=``) reads an old version exactly, a taken
name is refused before anything is written, a delete hides datasets in whichever part holds
them, appenders in several processes all land, and the layers above the collection (lookups,
``select``, the xarray backend) see every part as one collection."""

import multiprocessing
import os

import numpy as np
import pytest

import atlas_collections as ac
from atlas_collections import errors


def _values(name: str) -> np.ndarray:
    seed = sum(name.encode()) * 7
    return (np.arange(6, dtype="f4").reshape(2, 3) + seed) / 4


def _append(location: str, prefix: str, count: int) -> dict:
    with ac.Writer(location, mode="append") as writer:
        for i in range(count):
            name = f"{prefix}{i:03}"
            writer.write(name, {"temp": (("y", "x"), _values(name))}, attrs={"writer": prefix})
        return writer.finish()


def _files(root) -> dict:
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = f.read()
    return out


def test_append_versions_and_reads_across_parts(tmp_path):
    location = str(tmp_path / "grown")
    first = _append(location, "jan_", 3)
    assert (first["version"], first["datasets"], first["attempts"]) == (1, 3, 1)
    second = _append(location, "feb_", 2)
    assert second["version"] == 2
    c = ac.open(location)
    assert c.version == 2
    assert c.names == ["jan_000", "jan_001", "jan_002", "feb_000", "feb_001"]
    assert [entry["datasets"] for entry in c.log()] == [3, 2]
    for name in c.names:
        np.testing.assert_array_equal(c[name]["temp"][...], _values(name))
    assert c.select(attrs={"writer": "feb_"}) == ["feb_000", "feb_001"]
    old = ac.open(location, version=1)
    assert old.version == 1
    assert old.names == ["jan_000", "jan_001", "jan_002"]
    with pytest.raises(ac.AtlasError) as missing:
        ac.open(location, version=3)
    assert missing.value.kind == "growing"
    # A plain collection still opens as before, and has no versions.
    plain = tmp_path / "plain"
    with ac.Writer(str(plain)) as writer:
        writer.write("only", {"temp": _values("only")})
    assert ac.open(str(plain)).version is None
    assert ac.open(str(plain)).log() == []


def test_a_taken_name_is_refused_before_anything_is_written(tmp_path):
    location = str(tmp_path / "grown")
    _append(location, "jan_", 2)
    before = _files(location)
    writer = ac.Writer(location, mode="append")
    with pytest.raises(errors.DuplicateNameError) as taken:
        writer.write("jan_001", {"temp": _values("jan_001")})
    assert "jan_001" in str(taken.value) and taken.value.kind == "dataset name"
    writer.abort()
    assert _files(location) == before
    # A plain collection is not appended to.
    plain = str(tmp_path / "plain")
    with ac.Writer(plain) as w:
        w.write("only", {"temp": _values("only")})
    with pytest.raises(errors.CollectionExistsError):
        ac.Writer(plain, mode="append")


def test_delete_hides_datasets_in_whichever_part_holds_them(tmp_path):
    location = str(tmp_path / "grown")
    _append(location, "jan_", 3)
    _append(location, "feb_", 2)
    c = ac.open(location)
    assert c._native.deletes_with_local_lock()
    before = _files(location)
    with pytest.raises(errors.DatasetNotFoundError):
        c.delete(["jan_000", "mar_000"])
    assert _files(location) == before
    report = c.delete(["jan_001", "feb_000"])
    assert (report.newly_deleted, report.total_deleted) == (2, 2)
    assert c.names == ["jan_000", "jan_002", "feb_001"]
    assert ac.open(location).names == ["jan_000", "jan_002", "feb_001"]
    # Each part's own mask; deletes are not versioned, so version 1 sees jan's delete too.
    masks = sorted(path for path in _files(location) if path.endswith("deleted.mask"))
    assert len(masks) == 2 and all(path.startswith("parts") for path in masks)
    assert ac.open(location, version=1).names == ["jan_000", "jan_002"]
    assert c.delete("jan_001").newly_deleted == 0


def test_a_tag_opens_the_version_it_names(tmp_path):
    import pickle

    location = str(tmp_path / "grown")
    _append(location, "jan_", 2)
    _append(location, "feb_", 1)
    # `atlas tag grown january 1` writes this (docs/format/growing.md, "Tags").
    os.makedirs(os.path.join(location, "tags"))
    with open(os.path.join(location, "tags", "january"), "wb") as f:
        f.write(b"atlas-tag 1\n1\n")
    c = ac.open(location, tag="january")
    assert c.version == 1 and c.names == ["jan_000", "jan_001"]
    # A pickle reopens the version the tag named.
    assert pickle.loads(pickle.dumps(c)).names == ["jan_000", "jan_001"]
    with pytest.raises(ac.AtlasError) as missing:
        ac.open(location, tag="march")
    assert missing.value.kind == "growing" and "march" in str(missing.value)
    with pytest.raises(ValueError):
        ac.open(location, version=1, tag="january")


def test_appenders_in_several_processes_all_land(tmp_path):
    location = str(tmp_path / "grown")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        reports = pool.starmap(_append, [(location, f"p{i}_", 10) for i in range(4)])
    assert sorted(r["version"] for r in reports) == [1, 2, 3, 4]
    c = ac.open(location)
    assert sorted(c.names) == sorted(f"p{i}_{d:03}" for i in range(4) for d in range(10))


def test_the_xarray_backend_reads_a_dataset_of_a_later_part(tmp_path):
    xr = pytest.importorskip("xarray")
    location = str(tmp_path / "grown")
    _append(location, "jan_", 1)
    _append(location, "feb_", 1)
    ds = xr.open_dataset(location, engine="atlas", group="feb_000")
    np.testing.assert_array_equal(ds["temp"].values, _values("feb_000"))


def test_open_mfdataset_combines_datasets_of_every_part(tmp_path):
    pytest.importorskip("xarray")
    location = str(tmp_path / "grown")
    _append(location, "jan_", 2)
    _append(location, "feb_", 2)
    c = ac.open(location)
    combined = ac.open_mfdataset(c, combine="nested", concat_dim="run")
    assert combined["temp"].shape == (4, 2, 3)
    np.testing.assert_array_equal(combined["temp"].values[3], _values("feb_001"))


def test_the_manifest_names_the_collection_and_a_pickle_keeps_its_version(tmp_path):
    import pickle

    location = str(tmp_path / "grown")
    _append(location, "jan_", 2)
    by_manifest = ac.open(os.path.join(location, "collection.manifest"))
    assert by_manifest.version == 1 and by_manifest.names == ["jan_000", "jan_001"]
    c = ac.open(location)
    _append(location, "feb_", 1)
    again = pickle.loads(pickle.dumps(c))
    assert again.version == 1 and again.names == ["jan_000", "jan_001"]
    assert pickle.loads(pickle.dumps(ac.open(location))).version == 2


def test_a_new_collection_is_not_written_over_a_growing_one(tmp_path):
    location = str(tmp_path / "grown")
    _append(location, "jan_", 1)
    with pytest.raises(errors.CollectionExistsError) as refused:
        ac.Writer(location)
    assert 'mode="append"' in str(refused.value)
    assert ac.open(location).names == ["jan_000"]
