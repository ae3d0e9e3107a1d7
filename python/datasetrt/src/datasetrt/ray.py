"""Ray Data: a ``ray.data.Dataset`` into one cache, and caches back as a ``ray.data.Dataset``.

:func:`write_cache` writes through :class:`CacheDatasink`: each write task packs its blocks
into a whole cache of its own (a *part*, in a staging directory beside the target), and the
driver joins the parts in task order once every task has finished
(``datasetrt._native._merge_parts``, the Rust ``join_parts``: the parts' shards are moved,
not copied; index, metadata and the manifest are written last). A failed job publishes no
manifest and removes what its tasks wrote; a retried task rewrites its own part.

:func:`read_cache` reads caches through :class:`CacheDatasource`: one read task per group of
shards, one row per sample with ``payload`` and the metadata columns.

The target of :func:`write_cache` is a directory every node can reach (a shared file system),
where the parts are renamed into place, or an object-store URL (``s3://bucket/prefix``, any
URL :class:`Cache` opens), where each task packs its part in a local temporary directory,
uploads it under ``<url>/.dsrt-parts-<id>/<task>/`` (as :func:`publish` does) and removes it;
the driver then joins the parts on the store (the same ``_merge_parts``, which for a prefix
is the Rust ``merge_remote_parts``: each part shard is copied by the store to its final name, no
payload byte passes through the driver; index and metadata are uploaded, then manifest.json
with a conditional PUT, so an existing manifest is never overwritten) and deletes the staging
prefix. The joined cache has the bytes a local :func:`write_cache` of the dataset writes.
Needs the ``ray`` extra: ``pip install "datasetrt[ray]"``.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import ray.data
from ray.data.block import Block, BlockAccessor, BlockMetadata
from ray.data.datasource import Datasink, Datasource, ReadTask, WriteResult

from . import DEFAULT_MAX_SHARD_BYTES, Cache, CacheWriter, WriteError, _native, _parts

__all__ = ["CacheDatasink", "CacheDatasource", "read_cache", "write_cache"]


def _store_url(location: str | os.PathLike[str]) -> str | None:
    """The object-store URL ``location`` names (without a trailing ``/``), or None for a local
    directory: a path, or a ``file://`` URL (read as the Rust ``StoreLocation`` reads them)."""
    if not isinstance(location, str) or "://" not in location:
        return None
    if location.startswith("file://"):
        return None
    return location.rstrip("/")


def _local_path(location: str | os.PathLike[str]) -> str:
    if isinstance(location, str) and location.startswith("file://"):
        location = urllib.request.url2pathname(urllib.parse.urlparse(location).path)
    return os.path.abspath(os.fspath(location))


def _cache_schema(
    schema: pa.Schema, payload_column: str, metadata_columns: Sequence[str] | None
) -> dict[str, str]:
    """The cache columns a dataset of ``schema`` is written with: the rule ``pack_parquet``
    applies to a Parquet file's columns (``datasetrt::pack::table_schema``), so a Ray dataset
    and the same table in Parquet become the same cache columns."""
    columns = None if metadata_columns is None else list(metadata_columns)
    try:
        return dict(_native._cache_schema(schema.serialize().to_pybytes(), payload_column, columns))
    except WriteError as refused:
        raise ValueError(str(refused)) from refused


class CacheDatasink(Datasink):
    """The datasink :func:`write_cache` writes with (see the module's documentation)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        payload_column: str,
        source: str,
        metadata_columns: Sequence[str] | None = None,
        compression: str = "none",
        max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
    ) -> None:
        #: The target's object-store URL, or None for a local directory (``path``).
        self.url = _store_url(path)
        self.path = self.url if self.url is not None else _local_path(path)
        self.payload_column = payload_column
        self.source = source
        self.metadata_columns = None if metadata_columns is None else list(metadata_columns)
        self.compression = compression
        self.max_shard_bytes = max_shard_bytes
        self.schema: dict[str, str] | None = None
        staging = _parts.staging_name()
        if self.url is not None:
            self.staging = f"{self.url}/{staging}"
        else:
            self.staging = os.path.join(self.path, staging)
        self.created = False
        self.summary: dict[str, Any] | None = None

    def get_name(self) -> str:
        return "DatasetRTCache"

    def on_write_start(self, schema: pa.Schema | None = None) -> None:
        if schema is not None:
            self.schema = _cache_schema(schema, self.payload_column, self.metadata_columns)
        if self.url is not None:
            # Refuses a prefix with a manifest.json (RemoteError "already_published") or any
            # other object ("prefix_not_empty"), naming it, before a task writes anything.
            _native._check_publish_target(self.url)
            return
        try:
            entries = os.listdir(self.path)
        except FileNotFoundError:
            self.created = True
        else:
            if entries:
                raise FileExistsError(
                    f"{self.path}: target directory is not empty; a cache is written into an "
                    "empty or new directory"
                )
        os.makedirs(self.staging)

    def write(self, blocks: Iterable[Block], ctx: Any) -> dict[str, Any]:
        if self.url is None:
            return self._write_part(
                blocks, ctx, os.path.join(self.staging, _parts.part_name(ctx.task_idx))
            )
        # The part is packed on this node, then uploaded; a retried task uploads its part
        # again over what an earlier attempt left.
        local = tempfile.mkdtemp(prefix=".dsrt-part-")
        try:
            written = self._write_part(blocks, ctx, os.path.join(local, "cache"))
            if written["path"] is not None:
                part = f"{self.staging}/{_parts.part_name(ctx.task_idx)}"
                _native.publish(written["path"], part, overwrite_partial=True)
                written["path"] = part
            return written
        finally:
            shutil.rmtree(local, ignore_errors=True)

    def _write_part(self, blocks: Iterable[Block], ctx: Any, part: str) -> dict[str, Any]:
        # A retried task starts its part again; nothing else writes there.
        shutil.rmtree(part, ignore_errors=True)
        writer: CacheWriter | None = None
        schema = self.schema
        try:
            for block in blocks:
                table = BlockAccessor.for_block(block).to_arrow()
                if schema is None:
                    schema = _cache_schema(table.schema, self.payload_column, self.metadata_columns)
                if writer is None:
                    writer = self._writer(part, schema)
                _add_table(writer, table, self.payload_column, list(schema))
            if writer is None:
                if schema is None:
                    return {"task": ctx.task_idx, "path": None, "payload_bytes": 0}
                writer = self._writer(part, schema)
            summary = writer.finish()
        except BaseException:
            if writer is not None:
                writer.abort(remove=True)
            raise
        return {
            "task": ctx.task_idx,
            "path": part,
            "payload_bytes": summary["payload_bytes"],
            "schema": schema,
        }

    def _writer(self, part: str, schema: Mapping[str, str]) -> CacheWriter:
        return CacheWriter(
            part,
            source=self.source,
            schema=dict(schema),
            compression=self.compression,
            max_shard_bytes=self.max_shard_bytes,
        )

    def on_write_complete(self, write_result: WriteResult) -> None:
        returns = sorted(
            (r for r in write_result.write_returns if r["path"] is not None),
            key=lambda r: r["task"],
        )
        schema = self.schema or (returns[0]["schema"] if returns else None)
        if schema is None:
            raise ValueError(
                "the dataset has no rows and no schema: nothing says what the cache's columns are"
            )
        parts = [(r["path"], r["payload_bytes"]) for r in returns]
        try:
            self.summary = _native._merge_parts(
                self.url if self.url is not None else self.path,
                parts,
                source=self.source,
                schema=schema,
            )
        except BaseException:
            self._remove_written()
            raise
        self._remove_staging()

    def on_write_failed(self, error: Exception) -> None:
        self._remove_written()

    def _remove_staging(self) -> None:
        if self.url is not None:
            _native._remove_remote_prefix(self.staging)
        else:
            shutil.rmtree(self.staging, ignore_errors=True)

    def _remove_written(self) -> None:
        self._remove_staging()
        _native._remove_unpublished(self.url if self.url is not None else self.path, self.created)


def _add_table(
    writer: CacheWriter, table: pa.Table, payload_column: str, columns: list[str]
) -> None:
    payloads = table.column(payload_column)
    if pa.types.is_struct(payloads.type):
        # Hugging Face's Image and Audio features: the payload is the struct's `bytes`.
        payloads = pa.chunked_array([chunk.field("bytes") for chunk in payloads.chunks])
    if pa.types.is_string(payloads.type) or pa.types.is_large_string(payloads.type):
        payloads = payloads.cast(pa.large_binary())
    values = [table.column(c).to_pylist() for c in columns]
    for row, payload in enumerate(payloads.to_pylist()):
        if payload is None:
            raise ValueError(f"payload column {payload_column!r} is null in a row")
        writer.add(payload, {c: v[row] for c, v in zip(columns, values)})


def write_cache(
    ds: ray.data.Dataset,
    path_or_url: str | os.PathLike[str],
    *,
    payload_column: str,
    source: str,
    metadata_columns: Sequence[str] | None = None,
    compression: str = "none",
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
    ray_remote_args: dict[str, Any] | None = None,
    concurrency: int | None = None,
) -> dict[str, Any]:
    """Writes ``ds`` into a new cache at ``path_or_url``: a directory (new or empty, on a file
    system every node reaches) or an object-store URL (``s3://bucket/prefix``, holding no
    object yet; the nodes upload their parts there, the driver joins them on the store, see
    the module's documentation), one sample per row: ``payload_column`` (binary or string) is
    the payload, the other columns (or ``metadata_columns``) the metadata, typed from the
    dataset's schema by the rule :func:`datasetrt.pack_parquet` applies (bool; integers,
    uint64 included, as int64; floats as float64; strings and dictionaries of strings as utf8;
    nullable as Arrow says). A column a cache cannot hold is refused by name before anything is
    written.

    Samples go in the dataset's order when its execution preserves order
    (``DataContext.get_current().execution_options.preserve_order = True``); otherwise in the
    order Ray's write tasks are numbered. Shards end at every task's end. Returns the summary
    dict :meth:`CacheWriter.finish` gives (for a URL, its ``path`` is the URL, and
    ``manifest_atomic`` says whether the store made the manifest's create-if-absent atomic).
    A failed job publishes no manifest and leaves nothing at ``path_or_url``.
    """
    sink = CacheDatasink(
        path_or_url,
        payload_column=payload_column,
        source=source,
        metadata_columns=metadata_columns,
        compression=compression,
        max_shard_bytes=max_shard_bytes,
    )
    ds.write_datasink(sink, ray_remote_args=ray_remote_args, concurrency=concurrency)
    assert sink.summary is not None, "Ray finished the write without committing it"
    return sink.summary


class CacheDatasource(Datasource):
    """The datasource :func:`read_cache` reads with: the caches' shards split into read tasks,
    each opening its cache where it runs."""

    def __init__(
        self,
        paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        rows_per_block: int = 4096,
    ) -> None:
        super().__init__()
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        self.paths = [os.fspath(p) for p in paths]
        self.rows_per_block = rows_per_block
        # (cache, start, stop, bytes) per shard run, in cache and sample order.
        self.runs: list[tuple[str, int, int, int]] = []
        schemas = []
        for path in self.paths:
            cache = Cache(path)
            shard_bytes = [s["byte_len"] for s in cache.manifest["shards"]]
            for shard, start, stop in cache.shard_runs():
                share = shard_bytes[shard] * (stop - start) // max(1, len(cache))
                self.runs.append((path, start, stop, share))
            schemas.append(cache.schema)
        self.schema = pa.unify_schemas(
            [pa.schema([pa.field("payload", pa.large_binary(), False)])] + schemas
        )

    def estimate_inmemory_data_size(self) -> int:
        return sum(run[3] for run in self.runs)

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None
    ) -> list[ReadTask]:
        parallelism = max(1, min(parallelism, len(self.runs)))
        tasks = []
        for k in range(parallelism):
            runs = self.runs[
                k * len(self.runs) // parallelism : (k + 1) * len(self.runs) // parallelism
            ]
            if not runs:
                continue
            rows = sum(stop - start for _, start, stop, _ in runs)
            metadata = BlockMetadata(
                num_rows=rows,
                size_bytes=sum(run[3] for run in runs),
                exec_stats=None,
                input_files=tuple(sorted({run[0] for run in runs})),
            )
            tasks.append(
                ReadTask(
                    functools.partial(_read_runs, runs, self.rows_per_block),
                    metadata,
                    schema=self.schema,
                    per_task_row_limit=per_task_row_limit,
                )
            )
        return tasks


def _read_runs(runs: list[tuple[str, int, int, int]], rows_per_block: int) -> Iterator[pa.Table]:
    opened: dict[str, Cache] = {}
    for path, start, stop, _ in runs:
        cache = opened.get(path) or opened.setdefault(path, Cache(path))
        for first in range(start, stop, rows_per_block):
            batch = cache.read_arrow(first, min(stop, first + rows_per_block))
            yield pa.Table.from_batches([pa.record_batch(batch)])


def read_cache(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    rows_per_block: int = 4096,
    override_num_blocks: int | None = None,
    ray_remote_args: dict[str, Any] | None = None,
) -> ray.data.Dataset:
    """The samples of one cache or several (in order; directories or object-store URLs, as
    :class:`Cache` opens them) as a ``ray.data.Dataset``: one row per sample, ``payload``
    (large_binary) then the metadata columns. Read tasks split the caches by shards (each task
    reads whole runs of a shard); blocks hold at most ``rows_per_block`` rows."""
    return ray.data.read_datasource(
        CacheDatasource(paths, rows_per_block=rows_per_block),
        override_num_blocks=override_num_blocks,
        ray_remote_args=ray_remote_args,
    )
