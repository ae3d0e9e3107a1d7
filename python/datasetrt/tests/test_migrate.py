"""update_manifests(version=3) on mixed v2/v3 lists: the report, the ids, and collisions."""

import json

import pytest

import datasetrt

from conftest import payload, write_cache


def manifests(paths):
    return [(p / "manifest.json").read_bytes() for p in paths]


@pytest.fixture
def mixed(tmp_path):
    # positions: 0 v2, 1 v3, 2 v2, 3 v3
    return [
        write_cache(tmp_path / "a", 5, version=2),
        write_cache(tmp_path / "b", 6, version=3, source="src-b"),
        write_cache(tmp_path / "c", 7, version=2, compression="lz4"),
        write_cache(tmp_path / "d", 8, version=3, source="src-d"),
    ]


def test_dataset_update_manifests_reports_and_keeps_ids(mixed):
    dataset = datasetrt.Dataset(mixed)
    ids_before = dataset.cache_ids
    assert ids_before == [
        0,
        datasetrt.cache_id_for_source("src-b"),
        2,
        datasetrt.cache_id_for_source("src-d"),
    ]
    keys = [(cid, 3) for cid in ids_before]
    before = [bytes(dataset[k].payload) for k in keys]

    report = dataset.update_manifests(version=3)
    assert isinstance(report, datasetrt.ManifestUpdateReport)
    assert [e["outcome"] for e in report.entries] == [
        "updated",
        "unchanged",
        "updated",
        "unchanged",
    ]
    assert [e["cache_id"] for e in report.entries] == ids_before
    assert [e["path"] for e in report.entries] == [str(p) for p in mixed]
    assert report.updated == [str(mixed[0]), str(mixed[2])]
    assert report.unchanged == [str(mixed[1]), str(mixed[3])]
    assert report.durability_unknown == []
    assert all(e["error"] is None for e in report.entries)

    # Every manifest is v3 now, with the id the Rust API resolved; keys still name the same samples.
    for p, cid in zip(mixed, ids_before):
        m = json.loads((p / "manifest.json").read_bytes())
        assert m["format_version"] == 3 and m["cache_id"] == cid
    reopened = datasetrt.Dataset(mixed, validate_cache=True)
    assert reopened.cache_ids == ids_before
    assert [bytes(reopened[k].payload) for k in keys] == before == [payload(3)] * 4

    # Running it again changes nothing.
    again = datasetrt.update_manifests(mixed, version=3)
    assert [e["outcome"] for e in again.entries] == ["unchanged"] * 4


def test_a_collision_raises_and_writes_nothing(mixed, tmp_path):
    # A v3 cache whose stored id is 2 collides with the v2 cache at position 2.
    clash = tmp_path / "clash"
    write_cache(clash, 3, version=3)
    m = json.loads((clash / "manifest.json").read_bytes())
    m["cache_id"] = 2
    (clash / "manifest.json").write_text(json.dumps(m, indent=2))
    paths = mixed + [clash]
    before = manifests(paths)
    with pytest.raises(datasetrt.ManifestUpdateError) as err:
        datasetrt.update_manifests(paths, version=3)
    e = err.value
    assert isinstance(e, datasetrt.Error)
    assert e.kind == "duplicate_id" and e.done == []
    assert e.path == str(clash) and e.failed == str(clash)
    assert set(e.causes) == {str(mixed[2]), str(clash)}
    assert all("cache id 2" in reason for reason in e.causes.values())
    assert manifests(paths) == before


def test_a_duplicate_source_and_a_broken_manifest_raise_and_write_nothing(mixed, tmp_path):
    twin = write_cache(tmp_path / "twin", 2, version=3, source="src-b")
    paths = mixed + [twin]
    before = manifests(paths)
    with pytest.raises(datasetrt.ManifestUpdateError) as err:
        datasetrt.update_manifests(paths)
    assert err.value.kind == "duplicate_id"
    assert manifests(paths) == before

    (mixed[3] / "manifest.json").write_bytes(b"{")
    before = manifests(mixed)
    with pytest.raises(datasetrt.ManifestUpdateError) as err:
        datasetrt.update_manifests(mixed)
    assert err.value.kind == "manifest" and err.value.failed == str(mixed[3])
    assert set(err.value.causes) == {str(mixed[3])}
    assert manifests(mixed) == before


def test_only_version_3_is_a_target(mixed):
    with pytest.raises(datasetrt.ManifestUpdateError) as err:
        datasetrt.Dataset(mixed).update_manifests(version=4)
    assert err.value.kind == "unsupported_target" and err.value.failed is None


def test_dataset_lookup_select_and_sample_tables(mixed, tmp_path):
    dataset = datasetrt.Dataset(mixed)
    assert len(dataset) == 5 + 6 + 7 + 8
    assert [c.cache_id for c in dataset.caches] == dataset.cache_ids
    assert len(dataset.cache(dataset.cache_ids[1])) == 6
    with pytest.raises(KeyError):
        dataset[(12345, 0)]
    with pytest.raises(IndexError):
        dataset[(0, 5)]
    s = dataset[(2, 4)]
    assert s.key == (2, 4) and s.cache_id == 2 and bytes(s.payload) == payload(4)
    got = dataset.read_many([(0, 1), (2, 6), (dataset.cache_ids[3], 7)])
    assert [x.key for x in got] == [(0, 1), (2, 6), (dataset.cache_ids[3], 7)]

    table = dataset.select(lambda m: m["label"] == 3)
    assert table.keys() == [(cid, 3) for cid in dataset.cache_ids]
    assert dataset.select(label=3) == table
    flagged = dataset.select(lambda m, key: m["flag"] and key[0] == 0)
    assert flagged.keys() == [(0, 0), (0, 3)]
    table.save(tmp_path / "t.arrow")
    loaded = datasetrt.SampleTable.load(tmp_path / "t.arrow")
    assert loaded == table and list(loaded) == table.keys() and len(loaded) == 4
    assert datasetrt.SampleTable([(1, 2)])[0] == (1, 2)
    with pytest.raises(datasetrt.DatasetError) as err:
        datasetrt.SampleTable.load(mixed[0] / "manifest.json")
    assert err.value.path == str(mixed[0] / "manifest.json")

    with pytest.raises(ZeroDivisionError):
        dataset.select(lambda m: 1 / 0)

    with pytest.raises(datasetrt.DatasetError) as err:
        datasetrt.Dataset([mixed[1], mixed[1]])
    assert err.value.kind == "duplicate_path"
