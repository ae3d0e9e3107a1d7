"""``datasetrt.ray``: a Ray Dataset written into one cache by write tasks on a local 2-CPU
cluster and committed by the driver, read back as a Ray Dataset split by shards."""

import os
import tempfile
import urllib.parse

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
import ray
import ray.data

import datasetrt
import datasetrt.ray as dsrt_ray

ROWS = 10_000


@pytest.fixture(scope="module", autouse=True)
def cluster():
    # Workers unpickle this module's functions and classes by name, so they import it too.
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    context = ray.data.DataContext.get_current()
    preserve = context.execution_options.preserve_order
    context.execution_options.preserve_order = True
    yield
    context.execution_options.preserve_order = preserve
    ray.shutdown()


def rows(n=ROWS):
    """A table of ``n`` rows: payloads of 10-600 bytes, and nullable and typed metadata."""
    payload = [bytes([i % 256]) * (10 + (i * 7919) % 590) for i in range(n)]
    return pa.table(
        {
            "image": pa.array(payload, pa.binary()),
            "label": pa.array([i % 1000 for i in range(n)], pa.int32()),
            "score": pa.array([None if i % 11 == 0 else i / 3 for i in range(n)], pa.float32()),
            "caption": pa.array([None if i % 13 == 0 else f"row {i}" for i in range(n)]),
            "keep": pa.array([i % 2 == 0 for i in range(n)]),
        }
    )


def expected_of(table):
    """Each row as (payload, metadata) the cache must hold (float32 widened to float64)."""
    cols = {name: table.column(name).to_pylist() for name in table.column_names}
    return [
        (
            cols["image"][i],
            {
                "label": cols["label"][i],
                "score": None
                if cols["score"][i] is None
                else float(pa.scalar(cols["score"][i], pa.float32()).as_py()),
                "caption": cols["caption"][i],
                "keep": cols["keep"][i],
            },
        )
        for i in range(table.num_rows)
    ]


def test_a_dataset_written_through_write_tasks_reads_back_identical(tmp_path):
    table = rows()
    ds = ray.data.from_arrow(table).repartition(8)
    out = tmp_path / "cache"
    summary = dsrt_ray.write_cache(
        ds, out, payload_column="image", source="ray-rows", max_shard_bytes=200_000
    )
    assert summary["samples"] == ROWS
    cache = datasetrt.Cache(out, validate_cache=True)
    assert len(cache) == ROWS
    got = [(bytes(cache[i].payload), cache[i].metadata) for i in range(ROWS)]
    assert got == expected_of(table)
    schema = {c["name"]: (c["type"], c["nullable"]) for c in cache.manifest["metadata_schema"]}
    assert schema["label"][0] == "int64" and schema["score"] == ("float64", True)
    # Shards end at task boundaries: at least one per task, and nothing but the cache is left.
    assert summary["shards"] >= 8
    assert sorted(os.listdir(out)) == ["index.bin", "manifest.json", "metadata.arrow", "shards"]

    back = dsrt_ray.read_cache(out)
    assert back.count() == ROWS
    assert back.schema().names == ["payload", "label", "score", "caption", "keep"]
    read = back.take_all()
    assert [
        (r["payload"], {k: r[k] for k in ("label", "score", "caption", "keep")}) for r in read
    ] == [(p, m) for p, m in expected_of(table)]
    # Split by shards: more than one read task, none of them crossing a shard.
    assert back.materialize().num_blocks() > 1


def test_reading_several_caches_keeps_their_order(tmp_path):
    first = tmp_path / "a"
    second = tmp_path / "b"
    dsrt_ray.write_cache(ray.data.from_arrow(rows(300)), first, payload_column="image", source="a")
    dsrt_ray.write_cache(ray.data.from_arrow(rows(500)), second, payload_column="image", source="b")
    back = dsrt_ray.read_cache([first, second]).take_all()
    assert [r["payload"] for r in back] == rows(300).column("image").to_pylist() + rows(500).column(
        "image"
    ).to_pylist()


def test_a_column_a_cache_cannot_hold_is_refused_by_name(tmp_path):
    table = rows(100).append_column("tags", pa.array([["a", "b"]] * 100))
    out = tmp_path / "c"
    with pytest.raises(Exception, match='column "tags": type List.* has no cache column type'):
        dsrt_ray.write_cache(ray.data.from_arrow(table), out, payload_column="image", source="s")
    assert not out.exists()
    with pytest.raises(Exception, match='column "picture": no such column'):
        dsrt_ray.write_cache(
            ray.data.from_arrow(rows(10)), out, payload_column="picture", source="s"
        )
    assert not out.exists()
    # Choosing the columns leaves the list out.
    summary = dsrt_ray.write_cache(
        ray.data.from_arrow(table),
        out,
        payload_column="image",
        source="s",
        metadata_columns=["label"],
    )
    assert summary["samples"] == 100
    assert datasetrt.Cache(out)[5].metadata == {"label": 5}


class _DiesInTask2(dsrt_ray.CacheDatasink):
    """A datasink whose task 2 dies (the worker process exits, as under the OOM killer) after
    writing part of its cache; with a ``marker``, only on the attempt that creates it."""

    def __init__(self, *args, marker=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.marker = marker

    def write(self, blocks, ctx):
        if ctx.task_idx == 2 and not (self.marker and os.path.exists(self.marker)):
            assert self.schema is not None, "on_write_start set the schema"
            part = os.path.join(self.staging, f"{ctx.task_idx:06}")
            writer = datasetrt.CacheWriter(part, source=self.source, schema=self.schema)
            writer.add(b"half", {c: None for c in self.schema})
            if self.marker:
                open(self.marker, "w").close()
            os._exit(9)
        return super().write(blocks, ctx)


def test_a_task_killed_mid_write_publishes_nothing_and_leaves_nothing(tmp_path):
    table = rows(2_000).drop_columns(["label", "keep"])  # every column nullable: the half row fits
    out = tmp_path / "cache"
    sink = _DiesInTask2(out, payload_column="image", source="s")
    with pytest.raises(ray.exceptions.RayError, match="(?i)worker|died|crash|exit"):
        ray.data.from_arrow(table).repartition(4).write_datasink(
            sink, ray_remote_args={"max_retries": 0}
        )
    assert not out.exists()


def test_a_retried_task_rewrites_its_part_and_the_cache_is_whole(tmp_path):
    table = rows(2_000).drop_columns(["label", "keep"])
    out = tmp_path / "cache"
    sink = _DiesInTask2(out, payload_column="image", source="s", marker=str(tmp_path / "died"))
    ray.data.from_arrow(table).repartition(4).write_datasink(sink)
    assert os.path.exists(tmp_path / "died")
    cache = datasetrt.Cache(out, validate_cache=True)
    assert [bytes(cache[i].payload) for i in range(len(cache))] == table.column("image").to_pylist()
    assert sorted(os.listdir(out)) == ["index.bin", "manifest.json", "metadata.arrow", "shards"]


def _s3():
    """The S3 test server as a pyarrow file system (the tests' view of the bucket)."""
    endpoint = urllib.parse.urlparse(os.environ["AWS_ENDPOINT_URL"])
    return pafs.S3FileSystem(
        access_key=os.environ["AWS_ACCESS_KEY_ID"],
        secret_key=os.environ["AWS_SECRET_ACCESS_KEY"],
        endpoint_override=endpoint.netloc,
        scheme=endpoint.scheme,
        region=os.environ.get("AWS_REGION", "us-east-1"),
    )


def objects_below(url):
    """Every object below the prefix ``url`` (relative name -> bytes)."""
    fs = _s3()
    root = url.removeprefix("s3://")
    infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    out = {}
    for info in infos:
        if info.type == pafs.FileType.File:
            with fs.open_input_stream(info.path) as f:
                out[info.path[len(root) + 1 :]] = f.read()
    return out


def test_a_dataset_written_to_an_object_store_reads_back_identical_with_the_local_bytes(
    tmp_path, s3_prefix, files_below
):
    table = rows()
    ds = ray.data.from_arrow(table).repartition(8)
    summary = dsrt_ray.write_cache(
        ds, s3_prefix, payload_column="image", source="ray-rows", max_shard_bytes=200_000
    )
    assert summary["samples"] == ROWS and summary["path"] == s3_prefix
    assert summary["manifest_atomic"] is True and summary["shards"] >= 8
    # The same dataset written to a local directory: the same files, byte for byte, and no
    # staging object left on the store.
    local = tmp_path / "local"
    local_summary = dsrt_ray.write_cache(
        ds, local, payload_column="image", source="ray-rows", max_shard_bytes=200_000
    )
    assert {k: v for k, v in summary.items() if k not in ("path", "manifest_atomic")} == {
        k: v for k, v in local_summary.items() if k != "path"
    }
    stored = objects_below(s3_prefix)
    assert stored == files_below(local)
    assert not [name for name in stored if ".dsrt-parts-" in name]

    cache = datasetrt.Cache(s3_prefix, cache_dir=tmp_path / "read", validate_cache=True)
    assert cache.is_remote and len(cache) == ROWS
    got = [(bytes(cache[i].payload), cache[i].metadata) for i in range(ROWS)]
    assert got == expected_of(table)
    # read_cache takes the URL: read tasks open the remote cache where they run.
    back = dsrt_ray.read_cache(s3_prefix).take_all()
    assert [
        (r["payload"], {k: r[k] for k in ("label", "score", "caption", "keep")}) for r in back
    ] == expected_of(table)


def test_an_object_store_target_with_a_manifest_is_refused_before_any_task_runs(
    tmp_path, s3_prefix
):
    dsrt_ray.write_cache(
        ray.data.from_arrow(rows(50)), s3_prefix, payload_column="image", source="s"
    )
    before = objects_below(s3_prefix)
    sink = _CountsTasks(s3_prefix, payload_column="image", source="s", marker=str(tmp_path / "ran"))
    with pytest.raises(datasetrt.RemoteError, match="already published") as raised:
        ray.data.from_arrow(rows(50)).write_datasink(sink)
    assert raised.value.kind == "already_published" and raised.value.url == s3_prefix
    assert not os.path.exists(tmp_path / "ran"), "no write task ran"
    assert objects_below(s3_prefix) == before


class _CountsTasks(dsrt_ray.CacheDatasink):
    """A datasink whose write tasks leave a ``marker`` file behind."""

    def __init__(self, *args, marker, **kwargs):
        super().__init__(*args, **kwargs)
        self.marker = marker

    def write(self, blocks, ctx):
        open(self.marker, "w").close()
        return super().write(blocks, ctx)


class _DiesInTask2AfterUploading(dsrt_ray.CacheDatasink):
    """A datasink on a store whose task 2 uploads a whole part (manifest included) under the
    staging prefix, then dies (the worker process exits, as under the OOM killer)."""

    def write(self, blocks, ctx):
        if ctx.task_idx == 2:
            assert self.schema is not None, "on_write_start set the schema"
            local = tempfile.mkdtemp()
            part = os.path.join(local, "cache")
            with datasetrt.CacheWriter(part, source=self.source, schema=self.schema) as writer:
                writer.add(b"half", {c: None for c in self.schema})
            datasetrt.publish(part, f"{self.staging}/{ctx.task_idx:06}")
            os._exit(9)
        return super().write(blocks, ctx)


def test_a_task_killed_mid_write_to_a_store_publishes_nothing_and_leaves_nothing(s3_prefix):
    table = rows(2_000).drop_columns(["label", "keep"])  # every column nullable: the half row fits
    sink = _DiesInTask2AfterUploading(s3_prefix, payload_column="image", source="s")
    with pytest.raises(ray.exceptions.RayError, match="(?i)worker|died|crash|exit"):
        ray.data.from_arrow(table).repartition(4).write_datasink(
            sink, ray_remote_args={"max_retries": 0}
        )
    # No manifest, no shard, no staging object: nothing at all under the target.
    assert objects_below(s3_prefix) == {}
