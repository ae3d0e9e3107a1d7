"""A read-only Zarr v3 view of a collection: :class:`AtlasStore`, a ``zarr.abc.store.Store``.

Every tool that reads Zarr (zarr-python 3, ``xr.open_zarr``, dask, cubed, xarray-beam,
xpublish) can read a collection through it, without naming an engine::

    store = AtlasStore("s3://bucket/runs")
    zarr.open_group(store, mode="r")["run_007/t2m"][10:20]
    xr.open_zarr(store, group="run_007", consolidated=False)

The collection is the root group, each live dataset a group (a name with ``/`` nests: a NetCDF
file's groups sit below its stem) carrying the dataset's attributes, and each array a Zarr v3
array with the Atlas array's shape, chunk grid, dimension names, fill value and attributes.
Chunks are served uncompressed (the ``bytes`` codec, little-endian; ``vlen-utf8`` for strings,
``vlen-bytes`` for byte strings): a chunk's ``get`` is a region read of the native reader, so it
comes from the blocks the collection already fetched (one segment fetch serves every dataset's
chunks), as an ``engine="atlas"`` read does. Every key is computed, nothing is stored beside
the collection: the metadata documents from the footer and the segments' own footers, the
chunks from the data.

Attributes are JSON, as Zarr keeps them: NumPy scalars and arrays become numbers and lists, a
``_FillValue`` of a float array is written as xarray writes it to Zarr v3 (base64 of the
little-endian float64), and a ``bytes`` attribute appears as its base64 text (JSON has no byte
strings). So ``xr.open_zarr(store, group=name)`` decodes each dataset exactly as
``engine="atlas"`` does (the same encoded variables, the same CF decoding).

Writes raise zarr's read-only error. Deleted datasets are absent. A store pickles by location
(and options), as :class:`~atlas_collections.Collection` does, so dask graphs built on it run on
worker processes, each opening the collection once.

Names that are not Zarr node names (an empty path segment, ``.`` or ``..``, an array name with
``/``) and an array whose path is also a dataset's group are left out of the view, with a
warning naming them; they stay readable through the native API.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import struct
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import product
from typing import Any

import numpy as np
from zarr.abc.store import (
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    Store,
    SuffixByteRequest,
)
from zarr.core.buffer import Buffer, BufferPrototype, default_buffer_prototype

from ._core import Array, Collection, _location, _reopen

__all__ = ["AtlasStore"]

logger = logging.getLogger(__name__)

_METADATA = "zarr.json"


@dataclass
class _Group:
    """A group of the view: the root, a dataset, or a path segment above datasets."""

    path: str
    dataset: str | None = None
    children: dict[str, _Group | _ArrayNode] = field(default_factory=dict)
    _document: bytes | None = None


@dataclass
class _ArrayNode:
    """One array of one dataset."""

    path: str
    dataset: str
    name: str
    tag: str
    _array: Array | None = None
    _document: bytes | None = None
    _layout: tuple[Any, ...] | None = None


# ---- JSON of attributes and fill values --------------------------------------------------


def _json_value(value: Any) -> Any:
    """An Atlas attribute value as JSON can hold it."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, np.bytes_)):
        return base64.standard_b64encode(bytes(value)).decode()
    if isinstance(value, np.ndarray):
        return [_json_value(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    raise TypeError(f"attribute value of type {type(value).__name__}")


def _json_attrs(attrs: dict[str, Any], dtype: np.dtype | None = None) -> dict[str, Any]:
    out = {}
    for key, value in attrs.items():
        if key == "_FillValue" and dtype is not None and dtype.kind == "f":
            # As xarray writes it to a Zarr v3 array, so that its Zarr backend decodes it back.
            out[key] = base64.standard_b64encode(struct.pack("<d", float(value))).decode()
        else:
            out[key] = _json_value(value)
    return out


def _json_float(value: float) -> Any:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


_NAT = np.iinfo(np.int64).min


def _data_type(tag: str) -> tuple[Any, list[dict[str, Any]]]:
    """Zarr v3 ``data_type`` and ``codecs`` of an Atlas element type."""
    if tag == "string":
        return "string", [{"name": "vlen-utf8", "configuration": {}}]
    if tag == "binary":
        return "variable_length_bytes", [{"name": "vlen-bytes", "configuration": {}}]
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if tag == "timestamp_ns":
        return {
            "name": "numpy.datetime64",
            "configuration": {"unit": "ns", "scale_factor": 1},
        }, codecs
    return tag, codecs


def _fill(tag: str, fill: Any) -> Any:
    """The fill value chunks are padded with: the array's, else Zarr's default for the type."""
    if fill is not None:
        return fill
    if tag == "string":
        return ""
    if tag == "binary":
        return b""
    if tag == "timestamp_ns":
        return np.datetime64("NaT", "ns")
    return np.zeros((), dtype=tag)[()]


def _json_fill(tag: str, fill: Any) -> Any:
    if tag == "string":
        return str(fill)
    if tag == "binary":
        return base64.standard_b64encode(bytes(fill)).decode()
    if tag == "timestamp_ns":
        value = np.datetime64(fill, "ns")
        return _NAT if np.isnat(value) else int(value.astype(np.int64))
    if tag.startswith("float"):
        return _json_float(float(fill))
    return int(fill)


def _dumps(document: dict[str, Any]) -> bytes:
    return json.dumps(document, allow_nan=True, separators=(",", ":")).encode()


# ---- chunk bytes ---------------------------------------------------------------------------


def _vlen(items: Iterable[bytes], count: int) -> bytes:
    """The ``vlen-utf8`` / ``vlen-bytes`` encoding: a u32 count, then each item's u32 length
    and bytes, little-endian."""
    parts = [struct.pack("<I", count)]
    for item in items:
        parts.append(struct.pack("<I", len(item)))
        parts.append(item)
    return b"".join(parts)


def _chunk_bytes(node: _ArrayNode, array: Array, index: tuple[int, ...]) -> bytes | np.ndarray:
    """The encoded chunk ``index`` of ``array``: its elements in C order, the part past the
    array's end filled, as Zarr's regular chunk grid has every chunk whole."""
    shape, chunks = array.shape, array.chunks
    start = [i * c for i, c in zip(index, chunks)]
    count = [min(c, n - s) for s, c, n in zip(start, chunks, shape)]
    block = array.read(start, count) if shape else array.read()
    if list(count) != list(chunks):
        full = np.full(chunks, _fill(node.tag, array.fill_value), dtype=block.dtype)
        full[tuple(slice(0, n) for n in count)] = block
        block = full
    if node.tag == "string":
        flat = block.reshape(-1)
        return _vlen((str(s).encode("utf-8") for s in flat), flat.size)
    if node.tag == "binary":
        flat = block.reshape(-1)
        return _vlen((bytes(b) for b in flat), flat.size)
    if node.tag == "timestamp_ns":
        block = block.view(np.int64)
    little = np.ascontiguousarray(block, dtype=block.dtype.newbyteorder("<"))
    return little.reshape(-1).view(np.uint8)


def _slice(data: bytes | np.ndarray, byte_range: ByteRequest | None) -> bytes | np.ndarray:
    size = len(data)
    if byte_range is None:
        return data
    if isinstance(byte_range, RangeByteRequest):
        return data[byte_range.start : byte_range.end]
    if isinstance(byte_range, OffsetByteRequest):
        return data[byte_range.offset :]
    if isinstance(byte_range, SuffixByteRequest):
        return data[max(0, size - byte_range.suffix) :]
    raise ValueError(f"Unexpected byte_range, got {byte_range}.")


def _valid_segment(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name


class AtlasStore(Store):
    """A read-only Zarr v3 store over the collection at ``location`` (a directory, a
    ``file://`` URL or an object-store URL such as ``s3://bucket/prefix``). See the module
    documentation for the layout.

    ``store_options`` configure the object store as the environment's ``AWS_*`` variables do
    (object_store's option names: ``aws_endpoint``, ``aws_region``, ``aws_allow_http``, ...);
    they override the environment. Opening costs what opening the collection costs: at most
    three requests. A dataset's group document reads its attributes (the ``_datasets``
    segment, once for every dataset), an array's document and chunks read its variable's
    segment (once for every dataset)."""

    supports_writes = False
    supports_deletes = False
    supports_partial_writes = False
    supports_listing = True

    def __init__(self, location: Any, *, read_only: bool = True, **store_options: str) -> None:
        if not read_only:
            raise ValueError(
                "an Atlas collection is write-once: AtlasStore is read-only (read_only=True)"
            )
        super().__init__(read_only=True)
        if isinstance(location, Collection):
            if store_options:
                raise TypeError("store options go with a location, not an open Collection")
            self._collection: Collection | None = location
            store_options = location.store_options
            location = location.location
        else:
            self._collection = None
        self.location = _location(location)
        self.store_options = {str(k): str(v) for k, v in store_options.items()}
        self._root: _Group | None = None
        self._nodes: dict[str, _Group | _ArrayNode] = {}

    # -- identity, pickling ------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, AtlasStore)
            and self.location == other.location
            and self.store_options == other.store_options
        )

    def __hash__(self) -> int:
        return hash((type(self), self.location, tuple(sorted(self.store_options.items()))))

    def __reduce__(self) -> tuple[Any, ...]:
        location = self.location
        if "://" not in location:
            import os

            location = os.path.abspath(location)
        return (_unpickle, (location, self.store_options))

    def __repr__(self) -> str:
        return f"AtlasStore({self.location!r})"

    def __str__(self) -> str:
        return f"atlas://{self.location}"

    def with_read_only(self, read_only: bool = False) -> AtlasStore:
        if not read_only:
            raise NotImplementedError(
                f"with_read_only is not implemented for the {type(self)} store type. "
                "An Atlas collection is write-once: the store is read-only."
            )
        options: dict[str, Any] = dict(self.store_options)
        return AtlasStore(self.location, **options)

    # -- opening -----------------------------------------------------------------------------
    async def _open(self) -> None:
        await super()._open()
        self._load()

    def _load(self) -> None:
        if self._root is not None:
            return
        if self._collection is None:
            self._collection = Collection(self.location, store_options=self.store_options)
        self._root, self._nodes = _build_tree(self._collection)
        self._is_open = True

    @property
    def collection(self) -> Collection:
        """The open collection behind the view."""
        self._load()
        assert self._collection is not None
        return self._collection

    # -- reading -----------------------------------------------------------------------------
    def _value(self, key: str) -> bytes | np.ndarray | None:
        self._load()
        if key == _METADATA:
            assert self._root is not None
            return self._group_document(self._root)
        if key.endswith("/" + _METADATA):
            node = self._nodes.get(key[: -len(_METADATA) - 1])
            if node is None:
                return None
            if isinstance(node, _Group):
                return self._group_document(node)
            return self._array_document(node)
        return self._chunk(key)

    def _group_document(self, group: _Group) -> bytes:
        if group._document is None:
            attrs = self.collection.dataset(group.dataset).attrs if group.dataset else {}
            group._document = _dumps(
                {"zarr_format": 3, "node_type": "group", "attributes": _json_attrs(attrs)}
            )
        return group._document

    def _array(self, node: _ArrayNode) -> Array:
        if node._array is None:
            node._array = Array(self.collection.dataset(node.dataset), node.name, node.tag)
        return node._array

    def _array_document(self, node: _ArrayNode) -> bytes:
        if node._document is None:
            array = self._array(node)
            data_type, codecs = _data_type(node.tag)
            dtype = None if node.tag in ("string", "binary") else np.dtype(array.dtype)
            attrs = dict(array.attrs)
            fill = _fill(node.tag, array.fill_value)
            if dtype is None and isinstance(attrs.get("_FillValue"), (str, bytes)):
                # A string array's CF fill value (a NetCDF string with missing entries, stored
                # as the file holds it) becomes the Zarr fill_value: xarray's Zarr backend
                # cannot decode a string _FillValue attribute of a Zarr v3 array, and masks
                # with fill_value under use_zarr_fill_value_as_mask=True.
                fill = attrs.pop("_FillValue")
            document = {
                "zarr_format": 3,
                "node_type": "array",
                "shape": list(array.shape),
                "data_type": data_type,
                "chunk_grid": {
                    "name": "regular",
                    "configuration": {"chunk_shape": list(array.chunks)},
                },
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": _json_fill(node.tag, fill),
                "codecs": codecs,
                "attributes": _json_attrs(attrs, dtype),
                "storage_transformers": [],
            }
            if array.shape:
                # As zarr-python writes it: a 0-d array has no dimension names.
                document["dimension_names"] = list(array.dims)
            node._document = _dumps(document)
        return node._document

    def _chunk_index(self, key: str) -> tuple[_ArrayNode, tuple[int, ...]] | None:
        """The array and chunk index of a chunk key (``<array>/c/i/j/...``, or ``<array>/c``
        for a 0-d array); None for any other key."""
        parts = key.split("/")
        for at, part in enumerate(parts):
            if part != "c":
                continue
            node = self._nodes.get("/".join(parts[:at]))
            if not isinstance(node, _ArrayNode):
                continue
            digits = parts[at + 1 :]
            if not all(d.isdigit() and (d == "0" or not d.startswith("0")) for d in digits):
                return None
            index = tuple(int(d) for d in digits)
            array = self._array(node)
            if len(index) != len(array.shape):
                return None
            grid = [math.ceil(n / c) for n, c in zip(array.shape, array.chunks)]
            if any(i >= g for i, g in zip(index, grid)):
                return None
            return node, index
        return None

    def _chunk(self, key: str) -> bytes | np.ndarray | None:
        found = self._chunk_index(key)
        if found is None:
            return None
        node, index = found
        return _chunk_bytes(node, self._array(node), index)

    def get_sync(
        self,
        key: str,
        *,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        """What :meth:`get` returns, without an event loop."""
        if prototype is None:
            prototype = default_buffer_prototype()
        value = self._value(key)
        if value is None:
            return None
        value = _slice(value, byte_range)
        if isinstance(value, np.ndarray):
            return prototype.buffer.from_array_like(value)
        return prototype.buffer.from_bytes(value)

    async def get(
        self,
        key: str,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        # The read releases the GIL and is served from the blocks the collection keeps; the
        # first read of a segment fetches it.
        return self.get_sync(key, prototype=prototype, byte_range=byte_range)

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        return [self.get_sync(k, prototype=prototype, byte_range=r) for k, r in key_ranges]

    async def exists(self, key: str) -> bool:
        self._load()
        if key == _METADATA:
            return True
        if key.endswith("/" + _METADATA):
            return key[: -len(_METADATA) - 1] in self._nodes
        return self._chunk_index(key) is not None

    async def getsize(self, key: str) -> int:
        value = self._value(key)
        if value is None:
            raise FileNotFoundError(key)
        return len(value)

    # -- refused -----------------------------------------------------------------------------
    async def set(self, key: str, value: Buffer) -> None:
        self._check_writable()

    async def delete(self, key: str) -> None:
        self._check_writable()

    # -- listing -----------------------------------------------------------------------------
    def _keys_below(self, node: _Group | _ArrayNode) -> Iterator[str]:
        prefix = node.path + "/" if node.path else ""
        yield prefix + _METADATA
        if isinstance(node, _ArrayNode):
            array = self._array(node)
            grid = [range(math.ceil(n / c)) for n, c in zip(array.shape, array.chunks)]
            for index in product(*grid):
                yield prefix + "/".join(["c", *map(str, index)])
            return
        for child in node.children.values():
            yield from self._keys_below(child)

    async def list(self) -> AsyncIterator[str]:
        self._load()
        assert self._root is not None
        for key in self._keys_below(self._root):
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        self._load()
        assert self._root is not None
        # The deepest node above the prefix bounds what has to be walked.
        node: _Group | _ArrayNode = self._root
        parts = prefix.split("/")
        for depth in range(len(parts) - 1, 0, -1):
            candidate = self._nodes.get("/".join(parts[:depth]))
            if candidate is not None:
                node = candidate
                break
        for key in self._keys_below(node):
            if key.startswith(prefix):
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        self._load()
        path = prefix.strip("/")
        node = self._root if path == "" else self._nodes.get(path)
        if node is not None:
            yield _METADATA
            if isinstance(node, _Group):
                for name in node.children:
                    yield name
            elif self._array(node).size > 0 or not self._array(node).shape:
                yield "c"
            return
        # Inside an array's chunk keys: "<array>/c" or "<array>/c/i/...".
        parts = path.split("/")
        for at, part in enumerate(parts):
            array_node = self._nodes.get("/".join(parts[:at])) if part == "c" else None
            if not isinstance(array_node, _ArrayNode):
                continue
            array = self._array(array_node)
            done = parts[at + 1 :]
            if len(done) >= len(array.shape):
                return
            grid = [math.ceil(n / c) for n, c in zip(array.shape, array.chunks)]
            if any(not d.isdigit() or int(d) >= g for d, g in zip(done, grid)):
                return
            for i in range(grid[len(done)]):
                yield str(i)
            return


def _unpickle(location: str, store_options: dict[str, str]) -> AtlasStore:
    # One open per process and location, however many stores a dask graph unpickles.
    return AtlasStore(_reopen(location, store_options))


def _build_tree(collection: Collection) -> tuple[_Group, dict[str, _Group | _ArrayNode]]:
    """The view's nodes: the root group, a group per live dataset (and per path segment above
    one), an array node per array. Names Zarr cannot hold are left out, with a warning."""
    root = _Group("")
    nodes: dict[str, _Group | _ArrayNode] = {}
    left_out: list[str] = []
    native = collection._native
    names = collection.names
    for name in names:
        parts = name.split("/")
        if not all(_valid_segment(p) for p in parts):
            left_out.append(f"dataset {name!r} (not a Zarr group path)")
            continue
        group = root
        for depth in range(1, len(parts) + 1):
            path = "/".join(parts[:depth])
            node = nodes.get(path)
            if node is None:
                node = nodes[path] = _Group(path)
                group.children[parts[depth - 1]] = node
            assert isinstance(node, _Group), "arrays are placed after every group"
            group = node
        group.dataset = name
    for name in names:
        group_node = nodes.get(name)
        if not isinstance(group_node, _Group) or group_node.dataset != name:
            continue
        arrays, _ = native.schema(name)
        for array, tag, _keys in arrays:
            path = f"{name}/{array}"
            if not _valid_segment(array):
                left_out.append(f"array {array!r} of dataset {name!r} (not a Zarr node name)")
            elif path in nodes:
                left_out.append(f"array {array!r} of dataset {name!r} (a dataset's group)")
            else:
                node = nodes[path] = _ArrayNode(path, name, array, tag)
                group_node.children[array] = node
    if left_out:
        shown = "; ".join(left_out[:5]) + ("; ..." if len(left_out) > 5 else "")
        logger.warning(
            "%s: %d node(s) left out of the Zarr view: %s",
            collection.location,
            len(left_out),
            shown,
        )
    return root, nodes
