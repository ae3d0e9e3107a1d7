"""Collections, datasets and lazy arrays; the writer."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from . import _atlas
from .dtypes import (
    attr_from_native,
    attr_to_atlas,
    fill_from_native,
    fill_to_atlas,
    from_native,
    numpy_dtype,
    stat_from_native,
    to_atlas,
)
from .errors import ArrayNotFoundError, DatasetNotFoundError, LayoutError, SelectionError

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["Collection", "Dataset", "Array", "Writer", "Stats", "DatasetStats", "open"]


def _location(location: PathLike) -> str:
    text = os.fspath(location)
    if text.endswith("/data.atlas") or text == "data.atlas":
        text = text[: -len("data.atlas")].rstrip("/") or "."
    return text


@dataclass(frozen=True)
class Stats:
    """An array's stored statistics folded over every live dataset that has it."""

    datasets: int
    min: Any
    max: Any
    null_count: int
    row_count: int


@dataclass(frozen=True)
class DatasetStats:
    """One dataset's stored statistics for one array."""

    dataset: str
    ordinal: int
    min: Any
    max: Any
    null_count: int
    row_count: int


@dataclass(frozen=True)
class DeleteReport:
    """What a delete did."""

    newly_deleted: int
    total_deleted: int
    attempts: int


@dataclass(frozen=True)
class CompactReport:
    """What a compaction did (``compact``)."""

    version: int
    part: str
    datasets: int
    replaced_parts: int
    container_bytes: int
    carried_deletes: int
    attempts: int


def compact(location: PathLike, **store_options: str) -> CompactReport:
    """Compacts the growing collection at ``location``: the live datasets of every part of its
    latest version, in order, rewritten as one part (byte for byte what ``Writer`` writing them
    fresh makes, bar the creation time) and committed as a new version, which reads them as
    before. Older versions read their parts until ``atlas gc --keep-versions`` removes them.
    ``store_options`` as for ``open``. A collection that keeps gaining appends while it runs
    raises :class:`StorageError` (``kind`` ``"compact_conflict"``, retryable); a location that
    is not a growing collection :class:`NotACollectionError`."""
    options = sorted((str(k), str(v)) for k, v in store_options.items()) or None
    return CompactReport(**_atlas.compact(_location(location), options))


def open(  # noqa: A001 - mirrors builtins.open / xr.open_*
    location: PathLike, *, version: int | None = None, tag: str | None = None, **store_options: str
) -> Collection:
    """Opens the collection at ``location``: a directory, ``file://`` URL, or ``s3://bucket/prefix``
    (configured from ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
    ``AWS_REGION``, ``AWS_ALLOW_HTTP``, like the ``atlas`` command, and from ``store_options``,
    object_store's option names such as ``aws_endpoint``, which take precedence). At most three
    requests for a plain collection.

    A growing collection (one that ``Writer(location, mode="append")`` adds to) opens as one
    collection of every part; ``version`` opens that version as its commit left it instead of
    the latest (``Collection.log()`` lists them), ``tag`` the version a tag names (``atlas tag``
    writes one)."""
    return Collection(location, store_options=store_options or None, version=version, tag=tag)


#: The collections this process reopened from a pickle, by location (and store options): a
#: dask worker unpickles many tasks that name one collection, and opens it once.
_REOPENED: dict[Any, Collection] = {}
_REOPENED_PID = 0
#: How many times this process opened each location for an unpickled collection (tests check
#: it is once).
_REOPEN_OPENS: dict[str, int] = {}


def _reopen(
    location: str, store_options: Mapping[str, str] | None = None, version: int | None = None
) -> Collection:
    """The collection at ``location``, opened once per process (how a pickled collection, and
    every dataset and array pickled with it, comes back in a dask worker)."""
    global _REOPENED_PID
    if _REOPENED_PID != os.getpid():
        # A forked child inherits its parent's table, and with it collections whose runtime
        # threads did not survive the fork: start its own.
        _REOPENED.clear()
        _REOPEN_OPENS.clear()
        _REOPENED_PID = os.getpid()
    key = (location, tuple(sorted((store_options or {}).items())), version)
    collection = _REOPENED.get(key)
    if collection is None:
        collection = _REOPENED[key] = Collection(
            location, store_options=store_options, version=version
        )
        _REOPEN_OPENS[location] = _REOPEN_OPENS.get(location, 0) + 1
    return collection


class Collection:
    """An open Atlas collection. Thread-safe; every request runs with the GIL released.

    Pickles by location: unpickled in another process (a ``dask.distributed`` worker) it is
    opened there, once per process and location however many tasks carry it."""

    def __init__(
        self,
        location: PathLike,
        *,
        store_options: Mapping[str, str] | None = None,
        version: int | None = None,
        tag: str | None = None,
    ) -> None:
        if version is not None and tag is not None:
            raise ValueError("open a version or a tag, not both")
        self.store_options = {str(k): str(v) for k, v in (store_options or {}).items()}
        self._native = _atlas.Collection.open(
            _location(location), sorted(self.store_options.items()) or None, version, tag
        )

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        location = self.location
        if "://" not in location:
            # Another process may run in another directory.
            location = os.path.abspath(location)
        # A growing collection reopens at the version open here, so a worker sees the same
        # datasets as the process that pickled it, whatever was appended since.
        version = self.version
        if version is not None:
            return (_reopen, (location, self.store_options or None, version))
        if self.store_options:
            return (_reopen, (location, self.store_options))
        return (_reopen, (location,))

    @property
    def location(self) -> str:
        return self._native.location

    @property
    def version(self) -> int | None:
        """The version open of a growing collection; ``None`` for a plain collection."""
        return self._native.version

    def log(self) -> list[dict[str, Any]]:
        """The versions of a growing collection up to the one open, oldest first: each its
        ``version``, ``kind`` (``"append"``; ``"replace"`` for an append that hid the
        datasets it replaced; ``"compact"`` for a compaction, whose part replaced the others),
        ``created_unix_ms``, ``datasets`` (in its part), ``hidden`` (datasets of earlier parts
        it hid) and ``part``. Empty for a plain collection."""
        return [
            {
                "version": v,
                "kind": k,
                "created_unix_ms": t,
                "datasets": n,
                "hidden": h,
                "part": p,
            }
            for v, t, n, p, k, h in self._native.log()
        ]

    # -- datasets ---------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        """Live dataset names (deleted ones hidden), in the order they were written."""
        return self._native.names()

    def __len__(self) -> int:
        return self._native.dataset_count()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._native.contains(name)

    def __getitem__(self, name: str) -> Dataset:
        return self.dataset(name)

    def dataset(self, name: str) -> Dataset:
        """The live dataset ``name`` (:class:`DatasetNotFoundError`, a ``KeyError``, if none)."""
        if not self._native.contains(name):
            raise DatasetNotFoundError(
                f"{self.location}: no dataset named '{name}'",
                path=self.location,
                reason="no live dataset of this name",
                name=name,
            )
        return Dataset(self, name)

    def datasets(self) -> Iterator[Dataset]:
        """Every live dataset, in order."""
        for name in self.names:
            yield Dataset(self, name)

    def keys(self) -> list[str]:
        return self.names

    @property
    def variables(self) -> list[str]:
        """Every array name in the collection (one segment each), in container order."""
        return [v for v in self._native.variables() if not v.startswith("_")]

    def read_many(self, array: str, names: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """``array`` read whole from each dataset in ``names`` (default: every live dataset), in
        one call with the GIL released throughout: ``{dataset: ndarray}``."""
        names = self.names if names is None else list(names)
        return {n: from_native(t) for n, t in zip(names, self._native.read_many(names, array))}

    # -- statistics and attributes ----------------------------------------------------------
    def _tag_of(self, array: str) -> str | None:
        for name in self._native.names():
            arrays, _ = self._native.schema(name)
            for a, tag, _ in arrays:
                if a == array:
                    return tag
        return None

    def stats(self, array: str) -> Stats:
        """``array``'s min, max, null and row counts over every live dataset, from the statistics
        stored at write time (one segment open, no data read)."""
        raw = self._native.stats(array)
        tag = self._tag_of(array)
        return Stats(
            datasets=raw["datasets"],
            min=stat_from_native(raw["min"], tag),
            max=stat_from_native(raw["max"], tag),
            null_count=raw["null_count"],
            row_count=raw["row_count"],
        )

    def stats_by_dataset(self, array: str) -> list[DatasetStats]:
        """One row per live dataset that has ``array``."""
        tag = self._tag_of(array)
        return [_dataset_stats(row, tag) for row in self._native.stats_by_dataset(array)]

    def attributes_by_dataset(self, key: str) -> dict[str, Any]:
        """Dataset attribute ``key`` of every live dataset that has it: ``{dataset: value}``."""
        return {name: attr_from_native(v) for name, v in self._native.attributes_by_dataset(key)}

    def select(
        self,
        *,
        attrs: Mapping[str, Any] | None = None,
        where: Sequence[tuple[str, str, str, Any]] | None = None,
    ) -> list[str]:
        """Names of the live datasets meeting every condition, in collection order, from the
        attributes and statistics stored at write time (no array data is read).

        ``attrs``: ``{key: value or [accepted values]}``, dataset-level attributes. ``where``:
        ``[(array, stat, op, value)]``, ``stat`` one of ``min``, ``max``, ``null_count`` and
        ``op`` one of ``<``, ``<=``, ``>``, ``>=``, ``==``, ``!=``. A dataset lacking the
        attribute, the array or the statistic (all fill, a dtype with no order) does not match.

        :class:`QueryError` (a ``ValueError``), before any request, for an unknown ``stat`` or
        ``op``, an attribute key or array that no dataset declares, or a value that cannot
        compare with the declared type; ``TypeError`` for a value of no comparable type.

        A date (``datetime64``, ``datetime``, a ``cftime`` date) compared with times stored as
        CF-encoded numbers (what NetCDF import keeps) is encoded with each dataset's own
        ``units`` and ``calendar`` and compared with the stored statistics in that encoding;
        a date a dataset's calendar does not have is a :class:`QueryError`, and a dataset whose
        array holds no dates (no such units, calendar ``none``) does not match."""
        from ._select import select

        return select(self._native, attrs, where)

    # -- deletes ----------------------------------------------------------------------------
    def delete(self, names: str | Sequence[str]) -> DeleteReport:
        """Hides the named datasets. Lossless under concurrency: a local directory commits under
        an advisory lock, S3 with conditional PUT, retried on conflict. Unknown names are
        refused before anything is written. On a growing collection each name is hidden in the
        mask of the part that holds it; deletes are not versioned, so every version that has
        the part (``open(location, version=N)`` too) stops showing the dataset."""
        if isinstance(names, str):
            names = [names]
        raw = self._native.delete(list(names))
        return DeleteReport(**raw)

    # -- requests ---------------------------------------------------------------------------
    @property
    def request_count(self) -> int:
        """Requests sent to the store since the open (or :meth:`reset_requests`)."""
        return self._native.request_count()

    def requests(self) -> list[tuple[str, str]]:
        """The most recent of those requests (at most 1,024, oldest first) as ``(kind, object
        path)``; :attr:`request_count` counts every one."""
        return self._native.requests()

    def reset_requests(self) -> None:
        self._native.reset_requests()

    def to_xarray(self, name: str, *, chunks: Any = None, **decoders: Any) -> Any:
        """Dataset ``name`` as a lazy ``xarray.Dataset`` (the ``"atlas"`` backend), CF-decoded
        as ``xr.open_dataset`` decodes: ``decoders`` are its ``mask_and_scale``,
        ``decode_times``, ``decode_timedelta``, ``use_cftime``, ``concat_characters`` and
        ``decode_coords``."""
        from .xarray_backend import dataset_from_collection

        ds = dataset_from_collection(self, name, **decoders)
        return ds if chunks is None else ds.chunk(chunks)

    def to_datatree(self, **decoders: Any) -> Any:
        """The collection as an ``xarray.DataTree``, one node per dataset (a name with ``/``
        nests: a NetCDF file's groups under its stem)."""
        from .xarray_backend import datatree_from_collection

        return datatree_from_collection(self, **decoders)

    def __enter__(self) -> Collection:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __repr__(self) -> str:
        if not hasattr(self, "_native"):
            return "<atlas_collections.Collection (not open)>"
        return f"<atlas_collections.Collection {self.location!r}: {len(self)} datasets>"


def _dataset_stats(row: Mapping[str, Any], tag: str | None) -> DatasetStats:
    return DatasetStats(
        dataset=row["dataset"],
        ordinal=row["ordinal"],
        min=stat_from_native(row["min"], tag),
        max=stat_from_native(row["max"], tag),
        null_count=row["null_count"],
        row_count=row["row_count"],
    )


class Dataset:
    """One live dataset: its arrays (lazy) and attributes. Schema lookups make no request."""

    def __init__(self, collection: Collection, name: str) -> None:
        self.collection = collection
        self.name = name
        arrays, attr_keys = collection._native.schema(name)
        self._schema = {a: (tag, keys) for a, tag, keys in arrays}
        self._attr_keys = attr_keys
        self._attrs: dict[str, Any] | None = None

    @property
    def arrays(self) -> dict[str, Array]:
        """``{name: Array}`` in the order they were written."""
        return {name: Array(self, name, tag) for name, (tag, _) in self._schema.items()}

    def keys(self) -> list[str]:
        return list(self._schema)

    def __iter__(self) -> Iterator[str]:
        return iter(self._schema)

    def __len__(self) -> int:
        return len(self._schema)

    def __contains__(self, name: object) -> bool:
        return name in self._schema

    def __getitem__(self, name: str) -> Array:
        try:
            tag, _ = self._schema[name]
        except KeyError:
            raise ArrayNotFoundError(
                f"{self.collection.location}: dataset '{self.name}' has no array '{name}'",
                path=self.collection.location,
                reason=f"dataset '{self.name}' declares no such array",
                dataset=self.name,
                name=name,
            ) from None
        return Array(self, name, tag)

    @property
    def attrs(self) -> dict[str, Any]:
        """Dataset-level attributes (read once, then cached)."""
        if self._attrs is None:
            if self._attr_keys:
                raw = self.collection._native.attributes(self.name)
                self._attrs = {k: attr_from_native(v) for k, v in raw}
            else:
                self._attrs = {}
        return dict(self._attrs)

    def stats(self, array: str) -> DatasetStats:
        """This dataset's stored statistics for ``array``."""
        tag = self[array].tag
        return _dataset_stats(self.collection._native.dataset_stats(self.name, array), tag)

    def to_xarray(self, *, chunks: Any = None, **decoders: Any) -> Any:
        """This dataset as a lazy ``xarray.Dataset`` (see :meth:`Collection.to_xarray`)."""
        return self.collection.to_xarray(self.name, chunks=chunks, **decoders)

    def __repr__(self) -> str:
        return f"<atlas_collections.Dataset {self.name!r}: {', '.join(self._schema)}>"


def _axis_plan(key: Any, length: int, axis: int) -> tuple[int, int, Any, bool]:
    """``(start, count, post, drop)`` for one axis: read ``count`` elements from ``start``, then
    index the block with ``post`` (a slice or an integer array), dropping the axis if ``drop``."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
        i = int(key)
        if i < 0:
            i += length
        if not 0 <= i < length:
            raise SelectionError(
                f"index {int(key)} is out of bounds for axis {axis} of length {length}",
                reason="index out of bounds",
            )
        return i, 1, slice(None), True
    if isinstance(key, slice):
        start, stop, step = key.indices(length)
        positions = range(start, stop, step)
        if len(positions) == 0:
            return 0, 0, slice(None), False
        lo, hi = min(positions[0], positions[-1]), max(positions[0], positions[-1]) + 1
        if step == 1:
            return lo, hi - lo, slice(None), False
        if step > 0:
            return lo, hi - lo, slice(None, None, step), False
        return lo, hi - lo, np.arange(positions[0] - lo, positions[-1] - lo - 1, step), False
    index = np.asarray(key)
    if index.dtype.kind == "b":
        if index.shape != (length,):
            raise SelectionError(
                f"boolean index of shape {index.shape} does not match axis {axis} "
                f"of length {length}",
                reason="boolean index shape",
            )
        index = np.nonzero(index)[0]
    if index.dtype.kind not in "iu" or index.ndim != 1:
        raise SelectionError(
            f"axis {axis}: index must be an integer, a slice, or a 1-D integer or boolean array",
            reason="unsupported index",
        )
    index = index.astype(np.int64)
    index = np.where(index < 0, index + length, index)
    if index.size and (index.min() < 0 or index.max() >= length):
        raise SelectionError(
            f"axis {axis}: index out of bounds for length {length}", reason="index out of bounds"
        )
    if index.size == 0:
        return 0, 0, index, False
    lo, hi = int(index.min()), int(index.max()) + 1
    return lo, hi - lo, index - lo, False


class Array:
    """A lazy array of one dataset. ``arr[10:20, ::2]`` returns a ``numpy.ndarray`` and reads
    only the chunks covering the selection's bounding box (the step is applied afterwards).

    Indexing is orthogonal ("outer", like xarray and zarr's ``oindex``): each axis takes an
    integer, a slice (any step), or a 1-D integer or boolean array, independently."""

    def __init__(self, dataset: Dataset, name: str, tag: str) -> None:
        self.dataset = dataset
        self.name = name
        self.tag = tag
        self._layout: tuple[Any, ...] | None = None
        self._attrs: dict[str, Any] | None = None

    @property
    def _native(self) -> Any:
        return self.dataset.collection._native

    @property
    def dtype(self) -> np.dtype:
        """NumPy dtype of what a read returns (see the dtype mapping)."""
        return numpy_dtype(self.tag)

    def _get_layout(self) -> tuple[Any, ...]:
        if self._layout is None:
            self._layout = tuple(self._native.layout(self.dataset.name, self.name))
        return self._layout

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self._get_layout()[1])

    @property
    def chunks(self) -> tuple[int, ...]:
        """Chunk extent along each axis."""
        return tuple(int(n) for n in self._get_layout()[2])

    @property
    def dims(self) -> tuple[str, ...]:
        """Dimension names, one per axis."""
        return tuple(self._get_layout()[3])

    @property
    def fill_value(self) -> Any:
        return fill_from_native(self._get_layout()[4], self.tag)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    @property
    def attrs(self) -> dict[str, Any]:
        """The array's attributes (read once, then cached)."""
        if self._attrs is None:
            keys = self.dataset._schema[self.name][1]
            if keys:
                raw = self._native.array_attributes(self.dataset.name, self.name)
                self._attrs = {k: attr_from_native(v) for k, v in raw}
            else:
                self._attrs = {}
        return dict(self._attrs)

    def stats(self) -> DatasetStats:
        return self.dataset.stats(self.name)

    def read(
        self, start: Sequence[int] | None = None, shape: Sequence[int] | None = None
    ) -> np.ndarray:
        """Reads a box: ``shape`` elements from ``start`` (both omitted: the whole array)."""
        if start is None and shape is None:
            return from_native(self._native.read(self.dataset.name, self.name, [], []))
        if start is None or shape is None:
            raise ValueError("give both start and shape, or neither")
        start, shape = [int(s) for s in start], [int(n) for n in shape]
        if any(n == 0 for n in shape) and len(shape) == self.ndim:
            return np.empty(shape, dtype=self.dtype)
        return from_native(self._native.read(self.dataset.name, self.name, start, shape))

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        data = self.read()
        return data if dtype is None else data.astype(dtype, copy=False)

    def __getitem__(self, key: Any) -> np.ndarray:
        return self.oindex(key)

    def oindex(self, key: Any) -> np.ndarray:
        """Outer indexing (what ``arr[key]`` does)."""
        shape = self.shape
        ndim = len(shape)
        if not isinstance(key, tuple):
            key = (key,)
        if any(k is None for k in key):
            raise SelectionError(
                "np.newaxis is not supported; index, then expand", reason="newaxis"
            )
        ellipses = [i for i, k in enumerate(key) if k is Ellipsis]
        if len(ellipses) > 1:
            raise SelectionError("an index can only have a single ellipsis", reason="ellipsis")
        if ellipses:
            i = ellipses[0]
            key = key[:i] + (slice(None),) * (ndim - len(key) + 1) + key[i + 1 :]
        if len(key) > ndim:
            raise SelectionError(
                f"too many indices: the array is {ndim}-dimensional, {len(key)} were given",
                reason="too many indices",
            )
        key = key + (slice(None),) * (ndim - len(key))
        plans = [_axis_plan(k, n, axis) for axis, (k, n) in enumerate(zip(key, shape))]
        starts = [p[0] for p in plans]
        counts = [p[1] for p in plans]
        if ndim == 0:
            block = self.read()
        elif any(c == 0 for c in counts):
            block = np.empty(counts, dtype=self.dtype)
        elif counts == list(shape):
            block = self.read()
        else:
            block = self.read(starts, counts)
        for axis, (_, _, post, _) in enumerate(plans):
            if isinstance(post, np.ndarray):
                block = np.take(block, post, axis=axis)
        basic = tuple(
            0 if drop else (post if isinstance(post, slice) else slice(None))
            for (_, _, post, drop) in plans
        )
        out = block[basic] if basic else block
        return np.asarray(out)

    def __repr__(self) -> str:
        return f"<atlas_collections.Array {self.dataset.name}/{self.name}: {self.dtype}>"


# ---- writing ------------------------------------------------------------------------------

ArrayInput = Any  # ndarray | (dims, data) | (dims, data, attrs) | dict | xarray.Variable/DataArray


def _array_tuple(name: str, value: ArrayInput, dataset: str) -> tuple[Any, ...]:
    dims: Sequence[str] | None = None
    attrs: Mapping[str, Any] = {}
    chunks: Sequence[int] | None = None
    fill: Any = None
    if isinstance(value, Mapping):
        data = value["data"]
        dims = value.get("dims")
        attrs = value.get("attrs", {}) or {}
        chunks = value.get("chunks")
        fill = value.get("fill_value")
    elif isinstance(value, tuple):
        if len(value) == 2:
            dims, data = value
        elif len(value) == 3:
            dims, data, attrs = value
        else:
            raise ValueError(f"array '{name}': a tuple is (dims, data) or (dims, data, attrs)")
    elif hasattr(value, "dims") and hasattr(value, "values") and hasattr(value, "attrs"):
        dims, data, attrs = value.dims, value.values, value.attrs
    else:
        data = value
    what = f"dataset '{dataset}', array '{name}'"
    tag, payload, shape = to_atlas(data, what)
    if dims is None:
        # Only when none were given: a variable's empty dims under data of some shape (as
        # netCDF4 hands over a scalar vlen variable) are refused by the writer, not renamed.
        dims = [f"dim{i}" for i in range(len(shape))]
    elif isinstance(dims, str):
        dims = [dims]
    else:
        dims = [str(d) for d in dims]
    if len(dims) != len(shape):
        # The writer takes no names for none given: refused here, not written without names.
        raise LayoutError(
            f"array '{name}' of dataset '{dataset}': {len(dims)} dimension names for "
            f"{len(shape)} axes",
            reason=f"{len(dims)} dimension names for {len(shape)} axes",
            dataset=dataset,
            name=name,
        )
    attr_pairs = [(str(k), attr_to_atlas(v, f"{what}, attribute '{k}'")) for k, v in attrs.items()]
    chunk_list = None if chunks is None else [int(c) for c in chunks]
    return (name, tag, payload, shape, dims, chunk_list, fill_to_atlas(fill, tag), attr_pairs)


def _dataset_items(
    name: str, arrays: Mapping[str, ArrayInput], attrs: Mapping[str, Any] | None
) -> tuple[list[Any], list[Any]]:
    """``(items, pairs)`` for the native ``write_dataset``: every array checked and converted to
    its payload, every attribute to its tagged value. Plain data, so it pickles."""
    items = [_array_tuple(str(k), v, name) for k, v in arrays.items()]
    pairs = [
        (str(k), attr_to_atlas(v, f"dataset '{name}', attribute '{k}'"))
        for k, v in (attrs or {}).items()
    ]
    return items, pairs


class Writer:
    """Writes a new collection; nothing is published until :meth:`finish`.

    ``mode="append"`` adds the datasets to the growing collection at ``location`` (an empty or
    new location becomes one) as one new part, committed as a new version by :meth:`finish`; a
    dataset name the collection already holds live is refused (``DuplicateNameError``) before
    anything is written, and appenders running at once all land. With ``replace=True`` such a
    name replaces the old dataset instead: the commit that adds the new part hides the old one,
    so a reader sees one or the other, never both nor neither, and older versions still read the
    old one (``docs/format/growing.md``, "Replacing"). A plain collection (a ``data.atlas`` at
    ``location``) is not appended to (``CollectionExistsError``).

    Use it as a context manager: a clean exit finishes, an exception aborts (no ``data.atlas``
    is left behind, and a directory the writer created is removed while still empty)::

        with atlas_collections.Writer("out/") as w:
            w.write("jan", {"t2m": (("y", "x"), np.zeros((24, 32), "f4"), {"units": "K"})},
                    attrs={"station": "north"})
    """

    def __init__(
        self,
        location: PathLike,
        *,
        mode: str = "create",
        codec: str = "zstd",
        zstd_level: int = 3,
        block_target_size: int | None = None,
        created_unix_ms: int = 0,
        replace: bool = False,
    ) -> None:
        self._native = _atlas.Writer(
            _location(location),
            mode=mode,
            codec=codec,
            zstd_level=zstd_level,
            block_target_size=block_target_size,
            created_unix_ms=created_unix_ms,
            replace=replace,
        )

    @property
    def location(self) -> str:
        return self._native.location

    def write(
        self,
        name: str,
        arrays: Mapping[str, ArrayInput],
        attrs: Mapping[str, Any] | None = None,
    ) -> int:
        """Writes dataset ``name`` and returns its ordinal.

        ``arrays`` maps each array name to a NumPy array (dimensions ``dim0``, ``dim1``, ...),
        a ``(dims, data)`` or ``(dims, data, attrs)`` tuple, a dict with ``data`` and optional
        ``dims``, ``attrs``, ``chunks`` and ``fill_value``, or an ``xarray`` Variable/DataArray.
        A refused dataset (a name, a dtype, a layout) leaves the writer as it was."""
        return self._write_items(name, *_dataset_items(name, arrays, attrs))

    def _write_items(self, name: str, items: list[Any], pairs: list[Any]) -> int:
        """Writes a dataset already converted by :func:`_dataset_items` (the parallel NetCDF
        import converts in its worker processes, so that the writer's process only writes)."""
        return self._native.write_dataset(name, items, pairs)

    def write_xarray(
        self, name: str, ds: Any, *, chunks: Mapping[str, Sequence[int]] | None = None
    ) -> int:
        """Writes an ``xarray.Dataset`` as dataset ``name``: every variable (coordinates
        included) becomes an array with its dims and attributes, ``ds.attrs`` the dataset's
        attributes. Non-index coordinates are recorded the CF way (a ``coordinates`` attribute),
        which the ``"atlas"`` backend reads back into coordinates."""
        from .xarray_backend import encode_dataset

        arrays, attrs = encode_dataset(ds, chunks=chunks)
        return self.write(name, arrays, attrs)

    @property
    def dataset_count(self) -> int:
        return self._native.dataset_count()

    def finish(self) -> dict[str, Any]:
        """Writes and publishes ``data.atlas``; returns the datasets, segments and bytes written
        (for an append: the datasets, bytes, the ``version`` committed, the ``part``, the
        commit ``attempts`` and the datasets it ``replaced``)."""
        return self._native.finish()

    def abort(self) -> None:
        """Drops everything; nothing is published."""
        self._native.abort()

    @property
    def closed(self) -> bool:
        return self._native.closed

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.abort()
        elif not self.closed:
            self.finish()

    def __repr__(self) -> str:
        return f"<atlas_collections.Writer {self.location!r}: {self.dataset_count} datasets>"


def write_xarray(location: PathLike, datasets: Mapping[str, Any], **options: Any) -> dict[str, Any]:
    """Writes ``{name: xarray.Dataset}`` as a new collection at ``location``, one dataset each."""
    with Writer(location, **options) as writer:
        for name, ds in datasets.items():
            writer.write_xarray(name, ds)
        return writer.finish()
