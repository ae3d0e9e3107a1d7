"""``pack_parquet`` and ``pack_webdataset``: Parquet written by pyarrow, Hugging Face datasets
saved by ``datasets`` itself, and tars written by ``tarfile``, into caches whose every payload
and metadata value reads back as the source holds it, the same for every number of jobs;
refusals name the file and column or the tar and key, and leave nothing behind."""

import io
import json
import random
import tarfile

import datasets  # type: ignore[import-untyped]
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import datasetrt


def rows(start, n, rng):
    """``n`` rows of every mapped type, with nulls."""
    ids = range(start, start + n)
    return {
        "image": [rng.randbytes(rng.randrange(3000)) for _ in ids],
        "label": [None if i % 7 == 3 else i % 10 for i in ids],
        "count": [i * 3_000_000_000 for i in ids],
        "score": [None if i % 5 == 0 else i / 8 for i in ids],
        "name": [None if i % 4 == 1 else f"n{i}-ß" for i in ids],
        "flag": [None if i % 6 == 2 else i % 2 == 0 for i in ids],
        "split": [["train", "val"][i % 2] for i in ids],
    }


SCHEMA = pa.schema(
    [
        ("image", pa.binary()),
        ("label", pa.int8()),
        ("count", pa.uint64()),
        ("score", pa.float32()),
        ("name", pa.string()),
        ("flag", pa.bool_()),
        ("split", pa.dictionary(pa.int32(), pa.string())),
    ]
)


def expected_metadata(table):
    """What the cache reads back for each row of ``table``: int8 and uint64 as int, float32 as
    the float64 it widens to, the dictionary as its strings."""
    columns = [c for c in table.column_names if c != "image"]
    return [{c: table.column(c)[i].as_py() for c in columns} for i in range(table.num_rows)]


def write_parquet_dir(root, rng):
    root.mkdir()
    tables = []
    start = 0
    for name, n in (("part-b.parquet", 140), ("part-a.parquet", 230), ("part-c.parquet", 37)):
        table = pa.Table.from_pydict(rows(start, n, rng), schema=SCHEMA)
        pq.write_table(table, root / name, row_group_size=40)
        tables.append((name, table))
        start += n
    tables.sort()
    return pa.concat_tables([t for _, t in tables])


def test_parquet_files_pack_every_value_the_same_for_one_two_and_three_jobs(tmp_path, files_below):
    source = write_parquet_dir(tmp_path / "pq", random.Random(3))
    assert pq.ParquetFile(tmp_path / "pq" / "part-a.parquet").num_row_groups == 6
    caches = []
    for jobs in (1, 2, 3):
        out = tmp_path / f"c{jobs}"
        summary = datasetrt.pack_parquet(
            tmp_path / "pq",
            out,
            source="pq",
            payload_column="image",
            compression="lz4",
            max_shard_bytes=50_000,
            jobs=jobs,
        )
        assert summary["samples"] == source.num_rows and summary["shards"] > 3
        assert "skipped" not in summary
        caches.append(files_below(out))
    assert caches[0] == caches[1] == caches[2]
    cache = datasetrt.Cache(tmp_path / "c3", validate_cache=True)
    assert [(f.name, str(f.type), f.nullable) for f in cache.schema] == [
        ("label", "int64", True),
        ("count", "int64", True),
        ("score", "double", True),
        ("name", "string", True),
        ("flag", "bool", True),
        ("split", "string", True),
    ]
    metadata = expected_metadata(source)
    payloads = source.column("image").to_pylist()
    assert len(cache) == source.num_rows
    for i in range(len(cache)):
        sample = cache[i]
        assert bytes(sample.payload) == payloads[i], i
        assert sample.metadata == metadata[i], i
    table = cache.metadata()
    assert (
        table.column("score").to_pylist() == source.column("score").cast(pa.float64()).to_pylist()
    )


def test_chosen_metadata_columns_leave_the_others_out(tmp_path):
    source = write_parquet_dir(tmp_path / "pq", random.Random(4))
    files = [tmp_path / "pq" / "part-c.parquet", str(tmp_path / "pq" / "part-a.parquet")]
    datasetrt.pack_parquet(
        files,
        tmp_path / "c",
        source="pq",
        payload_column="image",
        metadata_columns=["name", "label"],
    )
    cache = datasetrt.Cache(tmp_path / "c")
    assert cache.schema.names == ["name", "label"]
    assert len(cache) == 37 + 230
    part_c = pq.read_table(tmp_path / "pq" / "part-c.parquet")
    assert cache[0].metadata == {
        "name": part_c["name"][0].as_py(),
        "label": part_c["label"][0].as_py(),
    }
    assert bytes(cache[36].payload) == part_c["image"][36].as_py()
    assert source.num_rows == 407


def test_a_list_column_is_refused_naming_file_and_column_and_nothing_is_written(tmp_path):
    table = pa.table(
        {
            "image": pa.array([b"a", b"b"], pa.large_binary()),
            "label": [1, 2],
            "tags": pa.array([["x"], None], pa.list_(pa.string())),
        }
    )
    pq.write_table(table, tmp_path / "t.parquet")
    out = tmp_path / "c"
    with pytest.raises(datasetrt.WriteError) as refused:
        datasetrt.pack_parquet(tmp_path / "t.parquet", out, source="s", payload_column="image")
    error = refused.value
    assert error.kind == "column" and error.column == "tags"
    assert error.input == str(tmp_path / "t.parquet")
    assert "list" in error.reason.lower()
    assert not out.exists()
    with pytest.raises(datasetrt.WriteError) as missing:
        datasetrt.pack_parquet(tmp_path / "t.parquet", out, source="s", payload_column="jpg")
    assert missing.value.column == "jpg" and "no such column" in missing.value.reason
    assert not out.exists()
    summary = datasetrt.pack_parquet(
        tmp_path / "t.parquet", out, source="s", payload_column="image", metadata_columns=["label"]
    )
    assert summary["samples"] == 2


def test_a_null_payload_is_refused_naming_its_row(tmp_path):
    table = pa.table({"image": pa.array([b"a", None, b"c"]), "n": [1, 2, 3]})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=2)
    with pytest.raises(datasetrt.WriteError) as refused:
        datasetrt.pack_parquet(
            tmp_path / "t.parquet", tmp_path / "c", source="s", payload_column="image"
        )
    assert refused.value.kind == "input"
    assert refused.value.input == f"{tmp_path / 't.parquet'} row 1"
    assert not (tmp_path / "c").exists()


def save_hf(path, n):
    """A dataset saved by ``datasets`` itself, in several data files: an Image-like struct
    payload (``{"bytes", "path"}``, what ``datasets.Image`` stores), a ClassLabel, a string and
    a nullable int32."""
    rng = random.Random(9)
    features = datasets.Features(
        {
            "image": {"bytes": datasets.Value("binary"), "path": datasets.Value("string")},
            "label": datasets.ClassLabel(names=["cat", "dog", "emu"]),
            "caption": datasets.Value("string"),
            "width": datasets.Value("int32"),
        }
    )
    data = {
        "image": [{"bytes": rng.randbytes(rng.randrange(1, 2000)), "path": None} for _ in range(n)],
        "label": [i % 3 for i in range(n)],
        "caption": [None if i % 9 == 0 else f"photo {i}" for i in range(n)],
        "width": [None if i % 4 == 0 else 100 + i for i in range(n)],
    }
    dataset = datasets.Dataset.from_dict(data, features=features)
    dataset.save_to_disk(str(path), max_shard_size=150_000)
    return data


def test_a_hugging_face_save_to_disk_dataset_packs_row_by_row(tmp_path, monkeypatch, files_below):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data = save_hf(tmp_path / "hf", 400)
    state = json.loads((tmp_path / "hf" / "state.json").read_text())
    assert len(state["_data_files"]) > 1 and (tmp_path / "hf" / "dataset_info.json").exists()
    caches = []
    for jobs in (1, 3):
        out = tmp_path / f"c{jobs}"
        summary = datasetrt.pack_parquet(
            tmp_path / "hf",
            out,
            source="hf",
            payload_column="image",
            max_shard_bytes=60_000,
            jobs=jobs,
        )
        assert summary["samples"] == 400
        caches.append(files_below(out))
    assert caches[0] == caches[1]
    cache = datasetrt.Cache(tmp_path / "c1", validate_cache=True)
    assert cache.schema.names == ["label", "caption", "width"]
    for i in range(400):
        sample = cache[i]
        assert bytes(sample.payload) == data["image"][i]["bytes"], i
        assert sample.metadata == {
            "label": data["label"][i],
            "caption": data["caption"][i],
            "width": data["width"][i],
        }, i
    # Its Parquet export is plain Parquet, and packs to the same samples.
    datasets.load_from_disk(str(tmp_path / "hf")).to_parquet(str(tmp_path / "hf.parquet"))
    datasetrt.pack_parquet(
        tmp_path / "hf.parquet", tmp_path / "from-parquet", source="hf", payload_column="image"
    )
    exported = datasetrt.Cache(tmp_path / "from-parquet")
    assert [exported[i].metadata for i in range(400)] == [cache[i].metadata for i in range(400)]
    assert all(bytes(exported[i].payload) == bytes(cache[i].payload) for i in range(400))


def add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def write_shards(root, shards, per_shard, bad_keys=()):
    """WebDataset shards as ``webdataset.ShardWriter`` lays them out; returns the expected
    samples (key, payload, metadata) in order."""
    rng = random.Random(5)
    root.mkdir()
    expected = []
    paths = []
    i = 0
    for s in range(shards):
        path = root / f"shard-{s:06}.tar"
        with tarfile.open(path, "w") as tar:
            for _ in range(per_shard):
                key = f"{i:08}"
                payload = rng.randbytes(rng.randrange(2500))
                if key not in bad_keys:
                    add(tar, f"{key}.jpg", payload)
                add(tar, f"{key}.cls", str(i % 11).encode())
                if i % 3:
                    add(tar, f"{key}.txt", f"a caption {i} ✓".encode())
                meta = {
                    "height": 32 + i,
                    "aspect": 1.5 if i % 2 else 2,
                    "lang": None if i % 5 == 0 else "en",
                }
                add(tar, f"{key}.json", json.dumps(meta).encode())
                add(tar, f"{key}.depth.png", b"ignored")
                if key not in bad_keys:
                    expected.append(
                        (
                            payload,
                            {
                                "key": key,
                                "cls": i % 11,
                                "txt": f"a caption {i} ✓" if i % 3 else None,
                                "aspect": float(meta["aspect"]),  # type: ignore[arg-type]
                                "height": meta["height"],
                                "lang": meta["lang"],
                            },
                        )
                    )
                i += 1
        paths.append(path)
    return paths, expected


def test_webdataset_shards_pack_every_member_the_same_for_any_jobs(tmp_path, files_below):
    tars, expected = write_shards(tmp_path / "wds", 4, 60)
    caches = []
    for jobs in (1, 2, 3):
        out = tmp_path / f"c{jobs}"
        summary = datasetrt.pack_webdataset(
            tars, out, source="wds", payload_ext=["png", "jpg"], max_shard_bytes=40_000, jobs=jobs
        )
        assert summary["samples"] == 240 and summary["skipped"] == 0 and summary["shards"] > 3
        caches.append(files_below(out))
    assert caches[0] == caches[1] == caches[2]
    cache = datasetrt.Cache(tmp_path / "c2", validate_cache=True)
    assert [(f.name, str(f.type), f.nullable) for f in cache.schema] == [
        ("key", "string", False),
        ("cls", "int64", False),
        ("txt", "string", True),
        ("aspect", "double", False),
        ("height", "int64", False),
        ("lang", "string", True),
    ]
    for i, (payload, metadata) in enumerate(expected):
        assert bytes(cache[i].payload) == payload, i
        assert cache[i].metadata == metadata, i


def test_a_key_without_payload_is_refused_or_skipped_and_counted(tmp_path):
    tars, expected = write_shards(tmp_path / "wds", 2, 30, bad_keys={"00000041"})
    out = tmp_path / "c"
    with pytest.raises(datasetrt.WriteError) as refused:
        datasetrt.pack_webdataset(tars, out, source="wds", payload_ext="jpg")
    error = refused.value
    assert error.kind == "bad_sample" and error.key == "00000041"
    assert error.input == str(tars[1]) and "no payload member" in error.reason
    assert not out.exists()
    summary = datasetrt.pack_webdataset(
        tars, out, source="wds", payload_ext="jpg", skip_bad=True, jobs=2
    )
    assert summary["samples"] == 59 and summary["skipped"] == 1
    cache = datasetrt.Cache(out)
    assert [cache[i].metadata for i in range(len(cache))] == [m for _, m in expected]
    assert [bytes(cache[i].payload) for i in range(len(cache))] == [p for p, _ in expected]


def test_a_nested_json_field_is_refused_naming_tar_key_and_field(tmp_path):
    path = tmp_path / "s.tar"
    with tarfile.open(path, "w") as tar:
        add(tar, "a/1.jpg", b"1")
        add(tar, "a/1.json", b'{"box": [1, 2, 3, 4]}')
    with pytest.raises(datasetrt.WriteError) as refused:
        datasetrt.pack_webdataset(path, tmp_path / "c", source="s", payload_ext="jpg")
    assert refused.value.key == "a/1" and refused.value.input == str(path)
    assert '"box" is an array' in refused.value.reason
    assert not (tmp_path / "c").exists()
