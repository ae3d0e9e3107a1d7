"""``pack_imagefolder``, ``pack_dir`` and ``pack_jsonl``: inputs into caches on several threads,
the same bytes for every number of threads, nothing left behind by a failure."""

import os
import random

import pytest

import datasetrt

CLASSES = ["tulip", "daisy", "rose", "iris"]


def image_folder(root, n):
    """``n`` files of 0-5000 random bytes over four classes, some in subdirectories."""
    rng = random.Random(7)
    files = {}
    for i in range(n):
        cls = CLASSES[i % len(CLASSES)]
        rel = f"{cls}/{'deep/' if i % 9 == 0 else ''}{i:05}.jpg"
        data = rng.randbytes(rng.randrange(5000))
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        files[rel] = data
    return files


def test_an_image_folder_packs_the_same_for_one_two_and_three_jobs(tmp_path, files_below):
    files = image_folder(tmp_path / "flowers", 400)
    caches = []
    for jobs in (1, 2, 3):
        out = tmp_path / f"c{jobs}"
        summary = datasetrt.pack_imagefolder(
            tmp_path / "flowers",
            out,
            source="flowers",
            compression="lz4",
            max_shard_bytes=100_000,
            jobs=jobs,
        )
        assert summary["samples"] == 400 and summary["shards"] > 3
        caches.append(files_below(out))
    assert caches[0] == caches[1] == caches[2]
    cache = datasetrt.Cache(tmp_path / "c2", validate_cache=True)
    classes = sorted(CLASSES)
    expected = sorted(files, key=lambda rel: (classes.index(rel.split("/")[0]), rel))
    assert len(cache) == len(expected)
    for i, rel in enumerate(expected):
        sample = cache[i]
        cls = rel.split("/")[0]
        assert sample.metadata == {"label": classes.index(cls), "class": cls, "path": rel}
        assert bytes(sample.payload) == files[rel]
    table = cache.metadata()
    assert table.column("label").to_pylist() == [classes.index(r.split("/")[0]) for r in expected]


def test_a_directory_packs_every_file_with_its_path_and_size(tmp_path, files_below):
    files = image_folder(tmp_path / "tree", 120)
    (tmp_path / "tree" / "top.bin").write_bytes(b"top")
    files["top.bin"] = b"top"
    one = datasetrt.pack_dir(tmp_path / "tree", tmp_path / "one", source="t", jobs=1)
    datasetrt.pack_dir(tmp_path / "tree", tmp_path / "three", source="t", jobs=3)
    assert one["samples"] == 121
    assert files_below(tmp_path / "one") == files_below(tmp_path / "three")
    cache = datasetrt.Cache(tmp_path / "one")
    got = {cache[i].metadata["path"]: bytes(cache[i].payload) for i in range(len(cache))}
    assert got == files
    assert all(cache[i].metadata["size"] == len(cache[i].payload) for i in range(len(cache)))


def test_a_failure_in_a_worker_leaves_nothing_behind(tmp_path):
    image_folder(tmp_path / "flowers", 300)
    # A name the utf8 `path` column cannot hold, in the last class: found mid-run by a worker,
    # after earlier units were written.
    last = tmp_path / "flowers" / "tulip"
    with open(os.path.join(os.fsencode(last), b"bad-\xff.jpg"), "wb") as f:
        f.write(b"x")
    out = tmp_path / "out"
    with pytest.raises(datasetrt.WriteError) as info:
        datasetrt.pack_imagefolder(tmp_path / "flowers", out, source="f", jobs=3)
    assert info.value.kind == "input" and "UTF-8" in info.value.reason
    assert "bad-" in str(info.value)
    assert not out.exists()
    # An existing empty directory stays, empty.
    out.mkdir()
    with pytest.raises(datasetrt.WriteError):
        datasetrt.pack_imagefolder(tmp_path / "flowers", out, source="f", jobs=2)
    assert out.exists() and not any(out.iterdir())


def test_packing_into_another_runs_unfinished_cache_leaves_its_files(tmp_path):
    # An interrupted earlier run's files (no manifest.json): not this run's to remove.
    image_folder(tmp_path / "tree", 4)
    out = tmp_path / "out"
    (out / "shards").mkdir(parents=True)
    for name in ["index.bin", "metadata.arrow", "shards/000000.bin"]:
        (out / name).write_bytes(b"an earlier run's")
    for pack in (datasetrt.pack_dir, datasetrt.pack_imagefolder):
        with pytest.raises(datasetrt.WriteError) as info:
            pack(tmp_path / "tree", out, source="t")
        assert info.value.kind == "target_not_empty"
        for name in ["index.bin", "metadata.arrow", "shards/000000.bin"]:
            assert (out / name).read_bytes() == b"an earlier run's"


def test_an_image_folder_with_a_stray_file_is_refused_before_anything_is_written(tmp_path):
    image_folder(tmp_path / "flowers", 8)
    (tmp_path / "flowers" / "README").write_text("?")
    with pytest.raises(datasetrt.WriteError) as info:
        datasetrt.pack_imagefolder(tmp_path / "flowers", tmp_path / "out", source="f")
    assert "README" in str(info.value) and "no class" in info.value.reason
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError):
        datasetrt.pack_imagefolder(
            tmp_path / "flowers", tmp_path / "o", source="f", compression="zip"
        )


def test_jsonl_packs_lines_with_inferred_types_the_same_for_every_jobs(tmp_path, files_below):
    import base64
    import json

    rng = random.Random(3)
    lines, payloads = [], []
    for i in range(700):
        data = rng.randbytes(rng.randrange(300))
        payloads.append(data)
        row = {"blob": base64.b64encode(data).decode(), "label": i % 7, "score": i / 4}
        if i % 5:
            row["caption"] = f"line {i}"
        lines.append(json.dumps(row))
        if i % 100 == 0:
            lines.append("")
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    caches = []
    for jobs in (1, 3):
        summary = datasetrt.pack_jsonl(
            tmp_path / "in.jsonl",
            tmp_path / f"c{jobs}",
            source="lines",
            payload_field="blob",
            payload_encoding="base64",
            max_shard_bytes=20_000,
            jobs=jobs,
        )
        assert summary["samples"] == 700 and summary["shards"] > 3
        caches.append(files_below(tmp_path / f"c{jobs}"))
    assert caches[0] == caches[1]
    cache = datasetrt.Cache(tmp_path / "c1", validate_cache=True)
    assert [(f.name, str(f.type), f.nullable) for f in cache.schema] == [
        ("label", "int64", False),
        ("score", "double", False),
        ("caption", "string", True),
    ]
    assert bytes(cache[12].payload) == payloads[12]
    assert cache[10].metadata == {"label": 3, "score": 2.5, "caption": None}


def test_jsonl_refuses_a_bad_line_naming_it_and_leaves_nothing(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"A")
    (tmp_path / "in.jsonl").write_text('{"p": "a.txt", "n": 1}\n{"p": "a.txt", "n": "x"}\n')
    for schema in (None, {"n": "int64"}):
        with pytest.raises(datasetrt.WriteError) as refused:
            datasetrt.pack_jsonl(
                tmp_path / "in.jsonl",
                tmp_path / "out",
                source="s",
                payload_field="p",
                schema=schema,
            )
        assert refused.value.kind == "input" and "in.jsonl, line 2: " in str(refused.value)
        assert not (tmp_path / "out").exists()
    (tmp_path / "ok.jsonl").write_text('{"p": "a.txt", "n": "1"}\n{"p": "a.txt", "n": "x"}\n')
    summary = datasetrt.pack_jsonl(
        tmp_path / "ok.jsonl", tmp_path / "out", source="s", payload_field="p", schema={"n": "utf8"}
    )
    assert summary["samples"] == 2
    assert [bytes(s.payload) for s in datasetrt.Cache(tmp_path / "out").read_many([0, 1])] == [
        b"A",
        b"A",
    ]
