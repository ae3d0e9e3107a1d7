"""The xarray backend (engine ``"atlas"``) and the xarray -> Atlas encoding.

``xr.open_dataset(url, engine="atlas", group="<dataset name>")`` opens one dataset lazily: each
array is a :class:`AtlasBackendArray` behind xarray's lazy indexing, so only the chunks a
selection covers are read. ``xr.open_datatree(url, engine="atlas")`` gives one node per dataset
(a name containing ``/`` nests). ``chunks={}`` gives dask arrays chunked as stored. An
:class:`~atlas_collections.Dataset` opens as itself, so ``xr.open_mfdataset(list(c.datasets()),
engine="atlas", ...)`` works, dataset by dataset; ``atlas_collections.open_mfdataset`` gives the
same combination with run reads.

Coordinates follow CF: an array attribute ``coordinates`` (and a dataset attribute of that name
for coordinates no array names) lists the non-index coordinates; it is consumed on open, as the
netCDF backends do, and written by :func:`encode_dataset`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from ._core import Array, Collection, Dataset, _location
from .errors import UnsupportedDTypeError

__all__ = ["AtlasBackendEntrypoint", "AtlasBackendArray", "encode_dataset"]


class AtlasBackendArray(BackendArray):
    """One Atlas array as xarray sees it: shape and dtype known, data read on indexing."""

    def __init__(self, array: Array) -> None:
        self.array = array
        self.shape = array.shape
        self.dtype = array.dtype
        self._lock = threading.Lock()

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._raw_indexing_method
        )

    def _raw_indexing_method(self, key: tuple[Any, ...]) -> np.ndarray:
        return self.array.oindex(key)

    def __getstate__(self) -> dict[str, Any]:
        # The lock is this process's; the array pickles by its collection's location.
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _open_collection(filename_or_obj: Any) -> Collection:
    if isinstance(filename_or_obj, Collection):
        return filename_or_obj
    return Collection(_location(os.fspath(filename_or_obj)))


def _coordinate_names(attrs: dict[str, Any]) -> list[str]:
    value = attrs.pop("coordinates", None)
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    return [str(v) for v in value]


def dataset_from_collection(
    collection: Collection, name: str, drop_variables: Iterable[str] | None = None
) -> xr.Dataset:
    """Dataset ``name`` of an open collection as a lazy ``xarray.Dataset``."""
    dataset = collection.dataset(name)
    drop = set(drop_variables or ())
    variables: dict[str, xr.Variable] = {}
    coords: list[str] = []
    for array_name, array in dataset.arrays.items():
        if array_name in drop:
            continue
        attrs = array.attrs
        coords.extend(_coordinate_names(attrs))
        data = indexing.LazilyIndexedArray(AtlasBackendArray(array))
        encoding = {
            "chunks": array.chunks,
            "preferred_chunks": dict(zip(array.dims, array.chunks)),
        }
        if array.fill_value is not None:
            encoding["atlas_fill_value"] = array.fill_value
        variables[array_name] = xr.Variable(array.dims, data, attrs=attrs, encoding=encoding)
    ds_attrs = dataset.attrs
    coords.extend(_coordinate_names(ds_attrs))
    ds = xr.Dataset(variables, attrs=ds_attrs)
    present = [c for c in dict.fromkeys(coords) if c in ds.variables]
    if present:
        ds = ds.set_coords(present)
    # Nothing to close (the collection goes with its last reference), but xarray calls what
    # it is given: xr.open_mfdataset(...).close() calls every dataset's closer.
    ds.set_close(_nothing_to_close)
    return ds


def _nothing_to_close() -> None:
    return None


def datatree_from_collection(
    collection: Collection, drop_variables: Iterable[str] | None = None
) -> xr.DataTree:
    """Every live dataset of an open collection as one ``xarray.DataTree`` node each."""
    return xr.DataTree.from_dict(_groups(collection, drop_variables))


def _groups(collection: Collection, drop_variables: Iterable[str] | None) -> dict[str, xr.Dataset]:
    groups: dict[str, xr.Dataset] = {"/": xr.Dataset()}
    for name in collection.names:
        groups["/" + name] = dataset_from_collection(collection, name, drop_variables)
    return groups


class AtlasBackendEntrypoint(BackendEntrypoint):
    """xarray backend for Atlas collections (``engine="atlas"``)."""

    description = "Open a dataset of an Atlas collection (local directory or s3:// URL)"
    url = "https://example.invalid/datasetrt-atlas/docs/python-atlas.md"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "group")

    def open_dataset(
        self,
        filename_or_obj: Any,
        *,
        drop_variables: Iterable[str] | None = None,
        group: str | None = None,
    ) -> xr.Dataset:
        if isinstance(filename_or_obj, Dataset):
            # One dataset of an open collection: what xr.open_mfdataset(list(c.datasets()),
            # engine="atlas") opens, one per "path".
            if group is not None and group.lstrip("/") != filename_or_obj.name:
                raise ValueError(
                    f"group={group!r} names another dataset than the one given "
                    f"({filename_or_obj.name!r})"
                )
            return dataset_from_collection(
                filename_or_obj.collection, filename_or_obj.name, drop_variables
            )
        collection = _open_collection(filename_or_obj)
        if group is None:
            names = collection.names
            if len(names) != 1:
                shown = ", ".join(repr(n) for n in names[:5]) + (", ..." if len(names) > 5 else "")
                raise ValueError(
                    f"{collection.location} holds {len(names)} datasets; pick one with "
                    f"group=<dataset name> ({shown}), or use xr.open_datatree(..., engine='atlas')"
                )
            group = names[0]
        return dataset_from_collection(collection, group.lstrip("/"), drop_variables)

    def open_datatree(
        self,
        filename_or_obj: Any,
        *,
        drop_variables: Iterable[str] | None = None,
        **kwargs: Any,
    ) -> xr.DataTree:
        return xr.DataTree.from_dict(
            self.open_groups_as_dict(filename_or_obj, drop_variables=drop_variables)
        )

    def open_groups_as_dict(
        self,
        filename_or_obj: Any,
        *,
        drop_variables: Iterable[str] | None = None,
        **kwargs: Any,
    ) -> dict[str, xr.Dataset]:
        return _groups(_open_collection(filename_or_obj), drop_variables)

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        if isinstance(filename_or_obj, (Collection, Dataset)):
            return True
        try:
            text = os.fspath(filename_or_obj)
        except TypeError:
            return False
        if text.endswith("data.atlas"):
            return True
        return "://" not in text and os.path.isfile(os.path.join(text, "data.atlas"))


def encode_dataset(
    ds: xr.Dataset, *, chunks: Mapping[str, Sequence[int]] | None = None, source: str | None = None
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """``(arrays, attrs)`` for :meth:`Writer.write`: every variable with its dims, attributes
    and chunks (from ``chunks``, else the variable's ``encoding``), non-index coordinates
    recorded in CF ``coordinates`` attributes. Loads the data."""
    index_coords = {str(n) for n in ds.coords if ds[n].dims == (n,)}
    other_coords = [str(n) for n in ds.coords if str(n) not in index_coords]
    claimed: set = set()
    arrays: dict[str, dict[str, Any]] = {}
    for name, var in ds.variables.items():
        name = str(name)
        attrs = dict(var.attrs)
        if name in ds.data_vars:
            mine = [c for c in other_coords if set(ds[c].dims) <= set(var.dims)]
            if mine:
                if "coordinates" in attrs:
                    raise UnsupportedDTypeError(
                        f"variable '{name}': has a 'coordinates' attribute and non-index "
                        "coordinates; xarray would not write that either",
                        reason="coordinates attribute clash",
                        variable=name,
                    )
                attrs["coordinates"] = " ".join(mine)
                claimed.update(mine)
        chunk_shape = None
        if chunks is not None and name in chunks:
            chunk_shape = list(chunks[name])
        else:
            enc = var.encoding.get("chunksizes") or var.encoding.get("chunks")
            if enc and len(enc) == var.ndim and all(int(c) > 0 for c in enc):
                chunk_shape = [int(c) for c in enc]
        arrays[name] = {
            "data": np.asarray(var.values),
            "dims": [str(d) for d in var.dims],
            "attrs": attrs,
            "chunks": chunk_shape,
        }
    attrs = dict(ds.attrs)
    rest = [c for c in other_coords if c not in claimed]
    if rest:
        if "coordinates" in attrs:
            raise UnsupportedDTypeError(
                "the dataset has a 'coordinates' attribute and coordinates no variable uses",
                reason="coordinates attribute clash",
                variable=None,
            )
        attrs["coordinates"] = " ".join(rest)
    return arrays, attrs
