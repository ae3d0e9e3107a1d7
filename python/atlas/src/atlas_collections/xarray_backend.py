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
from .errors import AtlasError, DatasetNotFoundError, UnsupportedDTypeError

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
    location = _location(os.fspath(filename_or_obj))
    guessed = _guessed.take(location) if "://" in location else None
    return guessed if guessed is not None else Collection(location)


#: xarray's CF decoding options, as ``xr.open_dataset`` passes them to a backend (``None``:
#: xarray's default).
DECODERS = (
    "mask_and_scale",
    "decode_times",
    "concat_characters",
    "decode_coords",
    "use_cftime",
    "decode_timedelta",
)


def encoded_variables(
    collection: Collection, name: str
) -> tuple[dict[str, xr.Variable], dict[str, Any]]:
    """Dataset ``name`` as xarray's CF decoding takes it, as a NetCDF or Zarr store hands it
    over: every array a lazy variable with its stored attributes (CF ``units``/``calendar``,
    ``_FillValue``, ``coordinates``), nothing decoded yet; and the dataset's attributes."""
    dataset = collection.dataset(name)
    variables: dict[str, xr.Variable] = {}
    for array_name, array in dataset.arrays.items():
        data = indexing.LazilyIndexedArray(AtlasBackendArray(array))
        encoding = {
            "chunks": array.chunks,
            "preferred_chunks": dict(zip(array.dims, array.chunks)),
        }
        if array.fill_value is not None:
            encoding["atlas_fill_value"] = array.fill_value
        variables[array_name] = xr.Variable(array.dims, data, attrs=array.attrs, encoding=encoding)
    return variables, dataset.attrs


def decode(
    variables: Mapping[str, xr.Variable],
    attrs: Mapping[str, Any],
    drop_variables: Iterable[str] | str | None = None,
    **decoders: Any,
) -> xr.Dataset:
    """CF-decodes encoded variables as xarray decodes what its NetCDF and Zarr backends give it
    (``decoders``: ``mask_and_scale``, ``decode_times``, ... as ``xr.open_dataset`` takes
    them; ``None`` or absent means xarray's default). Lazy: nothing is read but the indexes."""
    from xarray import conventions

    chosen = {k: v for k, v in decoders.items() if v is not None}
    unknown = set(chosen) - set(DECODERS)
    if unknown:
        raise TypeError(f"unknown decoding option(s): {', '.join(sorted(unknown))}")
    decoded, ds_attrs, coord_names = conventions.decode_cf_variables(
        dict(variables), dict(attrs), drop_variables=drop_variables, **chosen
    )
    ds = xr.Dataset(decoded, attrs=ds_attrs)
    present = [c for c in coord_names if c in ds.variables and c not in ds.coords]
    if present:
        ds = ds.set_coords(present)
    # Nothing to close (the collection goes with its last reference), but xarray calls what
    # it is given: xr.open_mfdataset(...).close() calls every dataset's closer.
    ds.set_close(_nothing_to_close)
    return ds


def dataset_from_collection(
    collection: Collection,
    name: str,
    drop_variables: Iterable[str] | str | None = None,
    **decoders: Any,
) -> xr.Dataset:
    """Dataset ``name`` of an open collection as a lazy ``xarray.Dataset``, CF-decoded with
    ``decoders`` (xarray's options; its defaults when absent)."""
    variables, attrs = encoded_variables(collection, name)
    return decode(variables, attrs, drop_variables, **decoders)


def _nothing_to_close() -> None:
    return None


def datatree_from_collection(
    collection: Collection,
    drop_variables: Iterable[str] | str | None = None,
    group: str | None = None,
    **decoders: Any,
) -> xr.DataTree:
    """Every live dataset of an open collection as one ``xarray.DataTree`` node each (a name
    with ``/`` nests); with ``group``, the subtree below that path."""
    return xr.DataTree.from_dict(_groups(collection, drop_variables, group, **decoders))


def _groups(
    collection: Collection,
    drop_variables: Iterable[str] | str | None,
    group: str | None = None,
    **decoders: Any,
) -> dict[str, xr.Dataset]:
    root = (group or "").strip("/")
    groups: dict[str, xr.Dataset] = {"/": xr.Dataset()}
    found = not root
    for name in collection.names:
        if root:
            if name == root:
                path = "/"
            elif name.startswith(root + "/"):
                path = "/" + name[len(root) + 1 :]
            else:
                continue
        else:
            path = "/" + name
        found = True
        groups[path] = dataset_from_collection(collection, name, drop_variables, **decoders)
    if not found:
        raise DatasetNotFoundError(
            f"{collection.location}: no dataset named '{root}' or below it",
            path=collection.location,
            reason="no live dataset at or below this group",
            name=root,
        )
    return groups


class AtlasBackendEntrypoint(BackendEntrypoint):
    """xarray backend for Atlas collections (``engine="atlas"``, or no engine at all for a
    path or URL holding ``data.atlas``: see :meth:`guess_can_open`)."""

    description = "Open a dataset of an Atlas collection (local directory or s3:// URL)"
    url = "https://example.invalid/datasetrt-atlas/docs/python-atlas.md"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "group", *DECODERS)
    supports_groups = True

    def open_dataset(
        self,
        filename_or_obj: Any,
        *,
        drop_variables: Iterable[str] | str | None = None,
        group: str | None = None,
        mask_and_scale: Any = None,
        decode_times: Any = None,
        concat_characters: Any = None,
        decode_coords: Any = None,
        use_cftime: Any = None,
        decode_timedelta: Any = None,
    ) -> xr.Dataset:
        decoders = {
            "mask_and_scale": mask_and_scale,
            "decode_times": decode_times,
            "concat_characters": concat_characters,
            "decode_coords": decode_coords,
            "use_cftime": use_cftime,
            "decode_timedelta": decode_timedelta,
        }
        if isinstance(filename_or_obj, Dataset):
            # One dataset of an open collection: what xr.open_mfdataset(list(c.datasets()),
            # engine="atlas") opens, one per "path".
            if group is not None and group.strip("/") != filename_or_obj.name:
                raise ValueError(
                    f"group={group!r} names another dataset than the one given "
                    f"({filename_or_obj.name!r})"
                )
            return dataset_from_collection(
                filename_or_obj.collection, filename_or_obj.name, drop_variables, **decoders
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
        return dataset_from_collection(collection, group.strip("/"), drop_variables, **decoders)

    def open_datatree(
        self,
        filename_or_obj: Any,
        *,
        drop_variables: Iterable[str] | str | None = None,
        group: str | None = None,
        **kwargs: Any,
    ) -> xr.DataTree:
        return xr.DataTree.from_dict(
            self.open_groups_as_dict(
                filename_or_obj, drop_variables=drop_variables, group=group, **kwargs
            )
        )

    def open_groups_as_dict(
        self,
        filename_or_obj: Any,
        *,
        drop_variables: Iterable[str] | str | None = None,
        group: str | None = None,
        **kwargs: Any,
    ) -> dict[str, xr.Dataset]:
        decoders = {k: kwargs.pop(k) for k in DECODERS if k in kwargs}
        if kwargs:
            raise TypeError(f"unexpected argument(s): {', '.join(sorted(kwargs))}")
        return _groups(_open_collection(filename_or_obj), drop_variables, group, **decoders)

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        """True for a collection: an open :class:`Collection` or :class:`Dataset`, a local
        directory holding ``data.atlas`` (or that object's own path), or a URL whose prefix
        holds one (found by opening it, which the open that follows then reuses)."""
        if isinstance(filename_or_obj, (Collection, Dataset)):
            return True
        try:
            text = os.fspath(filename_or_obj)
        except TypeError:
            return False
        if not isinstance(text, str):
            return False
        if "://" not in text:
            path = text[: -len("data.atlas")] if text.endswith("data.atlas") else text
            return os.path.isfile(os.path.join(path or ".", "data.atlas"))
        if text.startswith("file://"):
            return self.guess_can_open(_file_url_path(text))
        return _guessed.remember(text)


def _file_url_path(url: str) -> str:
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(url).path)


class _GuessedCollections:
    """The collection a URL guess opened, kept for the open that follows (xarray asks every
    engine's ``guess_can_open`` and then opens with the one that said yes): one, so that
    nothing stays open longer than that."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: tuple[str, Collection] | None = None

    def remember(self, url: str) -> bool:
        try:
            collection = Collection(url)
        except AtlasError:
            return False
        with self._lock:
            self._last = (_location(url), collection)
        return True

    def take(self, location: str) -> Collection | None:
        with self._lock:
            last, self._last = self._last, None
        if last is not None and last[0] == location:
            return last[1]
        return None


_guessed = _GuessedCollections()


def encode_dataset(
    ds: xr.Dataset, *, chunks: Mapping[str, Sequence[int]] | None = None, source: str | None = None
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """``(arrays, attrs)`` for :meth:`Writer.write`: every variable with its dims, attributes
    and chunks (from ``chunks``, else the variable's ``encoding``), non-index coordinates
    recorded in CF ``coordinates`` attributes. A variable of a type Atlas has no element type
    for but CF has an encoding for (dates in any calendar as ``cftime`` objects, timedeltas,
    booleans) is stored CF-encoded, as ``to_netcdf`` would write it (numbers with ``units`` and
    ``calendar``, or a ``dtype`` attribute), and comes back decoded. Loads the data."""
    index_coords = {str(n) for n in ds.coords if ds[n].dims == (n,)}
    other_coords = [str(n) for n in ds.coords if str(n) not in index_coords]
    claimed: set = set()
    arrays: dict[str, dict[str, Any]] = {}
    for name, var in ds.variables.items():
        name = str(name)
        var = _loaded(name, var)
        var = _cf_encoded(name, var)
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


def _loaded(name: str, var: xr.Variable) -> xr.Variable:
    """``var`` with its values read (once), refused if they are variable-length elements (a
    NetCDF vlen type), which netCDF4 hands over as an object array of arrays, or, for a
    scalar, as the one element's array under the variable's empty shape."""
    values = np.asarray(var.values)
    element: Any = values if values.ndim != len(var.dims) else None
    if element is None and values.dtype.kind == "O":
        element = next(
            (x for x in values.reshape(-1).tolist() if isinstance(x, (np.ndarray, list, tuple))),
            None,
        )
    if element is not None:
        from .dtypes import VLEN_REASON, _refuse

        raise _refuse(f"vlen of {np.asarray(element).dtype}", VLEN_REASON, f"array '{name}'")
    return xr.Variable(var.dims, values, var.attrs, var.encoding)


def _cf_encoded(name: str, var: xr.Variable) -> xr.Variable:
    """``var`` CF-encoded (xarray's own encoder, its ``encoding`` honoured) when it holds
    what only an encoding can store: ``cftime`` dates, ``timedelta64``, ``bool``."""
    kind = var.dtype.kind
    if kind in "mb" or (kind == "O" and _holds_cftime(var)):
        from xarray import conventions

        return conventions.encode_cf_variable(var, name=name)
    return var


def _holds_cftime(var: xr.Variable) -> bool:
    from xarray.core.common import contains_cftime_datetimes

    return bool(contains_cftime_datetimes(var))
