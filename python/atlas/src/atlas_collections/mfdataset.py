"""Many datasets of a collection as one lazy ``xarray.Dataset``: :func:`open_mfdataset`.

The result is what ``xr.open_mfdataset`` gives over the source files with the same arguments
(xarray's own defaults included, old or new), but each variable is read from its one segment:
a concatenated variable is a :class:`RunBackendArray`, whose reads (and, with ``chunks``, whose
dask blocks) each cover a run of datasets with one run read (``Atlas::read_run``: the run's
blocks fetched in few ranged requests), not one read per dataset.

The fast path covers what a collection of like datasets needs: every dataset with the same
variables, dtypes and dimensions; one concatenation dimension (``combine="nested"`` with a
``concat_dim`` name, new or existing, or ``combine="by_coords"`` where exactly one dimension's
index differs between datasets); every other index equal in all datasets; variables that are
not concatenated equal in all datasets; ``combine_attrs="override"``. Anything else (ragged
schemas, indexes that need aligning, several concatenation dimensions, a variable lacking the
existing concatenation dimension, other ``combine_attrs``) is opened dataset by dataset and
combined by xarray itself, each dataset one dask block as ``xr.open_mfdataset`` makes each file:
the same result, without run reads.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from xarray.backends import BackendArray
from xarray.core import indexing

try:  # xarray >= 2025.08: defaults that change with `use_new_combine_kwarg_defaults`.
    from xarray.util.deprecation_helpers import (
        _COMPAT_DEFAULT,
        _COORDS_DEFAULT,
        _DATA_VARS_DEFAULT,
        _JOIN_DEFAULT,
        CombineKwargDefault,
    )
except ImportError:  # pragma: no cover - older xarray
    _COMPAT_DEFAULT = "no_conflicts"  # type: ignore[assignment]
    _COORDS_DEFAULT = "different"  # type: ignore[assignment]
    _DATA_VARS_DEFAULT = "all"  # type: ignore[assignment]
    _JOIN_DEFAULT = "outer"  # type: ignore[assignment]
    CombineKwargDefault = ()  # type: ignore[assignment,misc]

from ._core import Collection
from .dtypes import attr_from_native, from_native, numpy_dtype
from .xarray_backend import DECODERS, dataset_from_collection, encoded_variables

__all__ = ["open_mfdataset", "RunBackendArray"]


def _value(option: Any) -> Any:
    """An option as xarray resolves it now (a deprecation-cycle default becomes its value)."""
    if CombineKwargDefault and isinstance(option, CombineKwargDefault):  # type: ignore[truthy-function]
        return option._value
    return option


def _decode_piece(
    name: str,
    dims: tuple[str, ...],
    values: np.ndarray,
    attrs: dict[str, Any],
    decoders: dict[str, Any],
) -> xr.Variable:
    """One dataset's encoded ``values`` decoded as xarray decodes that file's variable."""
    from xarray import conventions

    accepted = (
        "mask_and_scale",
        "decode_times",
        "decode_timedelta",
        "use_cftime",
        "concat_characters",
    )
    options = {k: v for k, v in decoders.items() if k in accepted and v is not None}
    variable = xr.Variable(dims, values, attrs=dict(attrs))
    return conventions.decode_cf_variable(name, variable, **options)


def _read_run(collection: Collection, array: str, names: Sequence[str]) -> tuple[np.ndarray, list]:
    tagged, shapes = collection._native.read_run(array, list(names))
    return from_native(tagged), [tuple(s) for s in shapes]


def _assemble(flat: np.ndarray, shapes: list, axis: int | None) -> np.ndarray:
    """The run's arrays stacked on a new leading axis (``axis`` None) or concatenated along
    ``axis``."""
    if not shapes:
        return flat
    if axis is None:
        return flat.reshape((len(shapes),) + shapes[0])
    if axis == 0:
        return flat.reshape((sum(s[0] for s in shapes),) + shapes[0][1:])
    parts, at = [], 0
    for shape in shapes:
        size = int(np.prod(shape, dtype=np.int64))
        parts.append(flat[at : at + size].reshape(shape))
        at += size
    return np.concatenate(parts, axis=axis)


class RunBackendArray(BackendArray):
    """One variable of many datasets, stacked along a new dimension (``axis`` None, at the
    front) or concatenated along an existing one (``axis``). Indexing reads the datasets the
    selection covers along that dimension with one run read and indexes the rest in memory.

    Pickles by location (its :class:`Collection` does), so dask.distributed workers reopen the
    collection once per process."""

    def __init__(
        self,
        collection: Collection,
        array: str,
        names: Sequence[str],
        shapes: Sequence[tuple[int, ...]],
        axis: int | None,
        dtype: np.dtype,
    ) -> None:
        self.collection = collection
        self.array = array
        self.names = list(names)
        self.axis = axis
        self.dtype = dtype
        if axis is None:
            self.lengths = np.ones(len(self.names), dtype=np.int64)
            self.shape = (len(self.names),) + tuple(shapes[0])
            self._concat_axis = 0
        else:
            self.lengths = np.array([s[axis] for s in shapes], dtype=np.int64)
            first = list(shapes[0])
            first[axis] = int(self.lengths.sum())
            self.shape = tuple(first)
            self._concat_axis = axis
        self.starts = np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)

    def __dask_tokenize__(self) -> object:
        return ("atlas-run", self.collection.location, self.array, tuple(self.names), self.axis)

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._raw_indexing_method
        )

    def _raw_indexing_method(self, key: tuple[Any, ...]) -> np.ndarray:
        ax = self._concat_axis
        total = self.shape[ax]
        along = np.arange(total, dtype=np.int64)[key[ax]]
        scalar = np.ndim(along) == 0
        positions = np.atleast_1d(along)
        owners = np.searchsorted(self.starts, positions, side="right") - 1
        needed = np.unique(owners)
        if needed.size == 0:
            shape = list(self.shape)
            shape[ax] = 0
            block = np.empty(shape, dtype=self.dtype)
            local = positions
        else:
            flat, shapes = _read_run(self.collection, self.array, [self.names[i] for i in needed])
            block = _assemble(flat, shapes, self.axis)
            block_starts = np.concatenate([[0], np.cumsum(self.lengths[needed])[:-1]])
            where = np.searchsorted(needed, owners)
            local = block_starts[where] + (positions - self.starts[owners])
        out = block
        drop = []
        for axis, k in enumerate(key):
            if axis == ax:
                k = int(local[0]) if scalar else local
            if isinstance(k, slice):
                out = out[(slice(None),) * axis + (k,)]
            elif isinstance(k, (int, np.integer)):
                out = np.take(out, [int(k)], axis=axis)
                drop.append(axis)
            else:
                out = np.take(out, np.asarray(k, dtype=np.int64), axis=axis)
        if drop:
            out = out[tuple(0 if a in drop else slice(None) for a in range(out.ndim))]
        return np.asarray(out, dtype=self.dtype)


class _Fallback(Exception):
    """The fast path does not cover this case (the message says why): xarray combines."""


def _null(a: np.ndarray) -> np.ndarray:
    return np.asarray(pd.isnull(a))


def _rows_equal(stacked: np.ndarray, compat: str) -> bool:
    """Whether every row of ``stacked`` equals row 0 as ``Variable.<compat>`` compares data
    (``no_conflicts``: equal where both are set; otherwise equal, nulls equal to nulls)."""
    if stacked.shape[0] <= 1:
        return True
    first = np.broadcast_to(stacked[:1], stacked.shape)
    with np.errstate(invalid="ignore"):
        differ = ~np.asarray(stacked == first, dtype=bool)
    if not differ.any():
        return True
    # Only where the values differ can nulls make them agree.
    a, b = _null(stacked[differ]), _null(first[differ])
    if compat == "no_conflicts":
        return bool(np.all(a | b))
    return bool(np.all(a & b))


def _scalar_strings(values: np.ndarray, shapes: list) -> np.ndarray:
    """Scalar strings as NumPy strings: a NetCDF scalar string loads as ``np.str_`` (an
    array of ``<U..``), so xarray concatenates them into a ``<U..`` array, not an object one."""
    if values.dtype == object and shapes and shapes[0] == () and values.size:
        if all(isinstance(v, str) for v in values.flat):
            return np.array(values.tolist(), dtype=str)
    return values


#: Attributes that steer xarray's CF decoding of a variable.
_DECODING_ATTRS = (
    "units",
    "calendar",
    "_FillValue",
    "missing_value",
    "scale_factor",
    "add_offset",
    "_Unsigned",
    "dtype",
    "_Encoding",
    "bounds",
)


def _decoding_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    return {k: attrs[k] for k in _DECODING_ATTRS if k in attrs}


def _same_attrs(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a.keys() != b.keys():
        return False
    for key, value in a.items():
        x, y = np.asarray(value), np.asarray(b[key])
        if x.shape != y.shape or x.dtype.kind != y.dtype.kind:
            return False
        if not np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"):
            return False
    return True


class _Var:
    """What the plan knows about one array across the datasets."""

    def __init__(
        self, name: str, tag: str, layouts: list, decoders: dict[str, Any], names: list[str]
    ) -> None:
        self.name = name
        self.tag = tag
        self.dtype = numpy_dtype(tag)
        self.shapes = [tuple(int(n) for n in shape) for shape, _, _ in layouts]
        dims = {tuple(d) for _, d, _ in layouts}
        if len(dims) != 1:
            raise _Fallback(f"'{name}' has different dimensions in different datasets")
        self.dims: tuple[str, ...] = dims.pop()
        self.attrs = [{k: attr_from_native(v) for k, v in a} for _, _, a in layouts]
        coords = {str(a.pop("coordinates", "")) for a in self.attrs}
        if len(coords) != 1:
            raise _Fallback(f"'{name}' names different coordinates in different datasets")
        self.coordinates = coords.pop().split()
        # Decoding after combining is what decoding each dataset gives only where every
        # dataset encodes the variable alike (one epoch, calendar, fill value, packing). An
        # index encoded differently (monthly files, each with its own epoch) is small: each
        # dataset's piece is decoded as xarray decodes that file, before combining.
        first = _decoding_attrs(self.attrs[0])
        self.decode_each = any(not _same_attrs(_decoding_attrs(a), first) for a in self.attrs[1:])
        # (Not one with bounds: xarray decodes those with the index's encoding, per file.)
        if self.decode_each and (
            not (self.is_index and len(self.dims) == 1) or any("bounds" in a for a in self.attrs)
        ):
            raise _Fallback(f"'{name}' is CF-encoded differently in different datasets")
        # The first piece decoded: its attributes and encoding are the combined variable's.
        self.decoded: xr.Variable | None = None
        self._decoders = decoders
        self._names = list(names)  # the order of `attrs` and `shapes`
        self._values: np.ndarray | None = None
        self._shapes_read: list | None = None

    @property
    def is_index(self) -> bool:
        return self.dims == (self.name,)

    def read_run(self, collection: Collection, names: Sequence[str]) -> tuple[np.ndarray, list]:
        """The datasets' arrays flattened one after another, and their shapes; decoded here
        (each dataset's piece with its own attributes) where the encodings differ."""
        flat, shapes = _read_run(collection, self.name, names)
        if not self.decode_each:
            return flat, shapes
        position = {name: i for i, name in enumerate(self._names)}
        pieces, at = [], 0
        for name, shape in zip(names, shapes):
            size = int(np.prod(shape, dtype=np.int64))
            attrs = self.attrs[position[name]]
            piece = _decode_piece(self.name, self.dims, flat[at : at + size], attrs, self._decoders)
            if self.decoded is None:
                self.decoded = piece
            pieces.append(np.asarray(piece.values).reshape(-1))
            at += size
        return np.concatenate(pieces) if pieces else flat, shapes

    def values(self, collection: Collection, names: Sequence[str]) -> np.ndarray:
        """Every dataset's array stacked (read once, with one run read)."""
        if self._values is None:
            if len(set(self.shapes)) != 1:
                raise _Fallback(f"'{self.name}' has different shapes in different datasets")
            flat, shapes = self.read_run(collection, names)
            self._values = _scalar_strings(_assemble(flat, shapes, None), shapes)
        return self._values

    def equal_everywhere(self, collection: Collection, names: Sequence[str], compat: str) -> bool:
        if len(set(self.shapes)) != 1:
            return False
        if compat == "identical" and any(a != self.attrs[0] for a in self.attrs[1:]):
            return False
        return _rows_equal(self.values(collection, names), compat)


def _plan(
    collection: Collection,
    names: list[str],
    *,
    concat_dim: Any,
    combine: str,
    data_vars: Any,
    coords: Any,
    compat: Any,
    join: Any,
    combine_attrs: Any,
    drop_variables: Iterable[str] | None,
    decoders: dict[str, Any],
) -> xr.Dataset:
    if decoders.get("decode_coords") not in (None, True, "coordinates"):
        raise _Fallback(f"decode_coords={decoders['decode_coords']!r}")
    if combine_attrs != "override":
        raise _Fallback("combine_attrs other than 'override'")
    compat_v, join_v = _value(compat), _value(join)
    if compat_v not in ("no_conflicts", "equals", "broadcast_equals", "identical", "override"):
        raise _Fallback(f"compat={compat_v!r}")
    if join_v not in ("outer", "inner", "left", "right", "exact", "override"):
        raise _Fallback(f"join={join_v!r}")
    native = collection._native
    drop = set(drop_variables or ())
    first_arrays, first_attr_keys = native.schema(names[0])
    signature = [(a, tag) for a, tag, _ in first_arrays]
    has_coordinates_attr = "coordinates" in first_attr_keys
    for name in names[1:]:
        arrays, attr_keys = native.schema(name)
        if [(a, tag) for a, tag, _ in arrays] != signature:
            raise _Fallback(f"dataset '{name}' has other arrays than '{names[0]}'")
        if ("coordinates" in attr_keys) != has_coordinates_attr:
            raise _Fallback(f"dataset '{name}' names other coordinates than '{names[0]}'")
    variables = {
        a: _Var(a, tag, native.run_layouts(a, names), decoders, names)
        for a, tag in signature
        if a not in drop
    }
    first_ds_attrs = collection.dataset(names[0]).attrs
    coord_names = set(str(first_ds_attrs.pop("coordinates", "")).split())
    if has_coordinates_attr:
        for name in names[1:]:
            if set(str(collection.dataset(name).attrs.get("coordinates", "")).split()) != (
                coord_names
            ):
                raise _Fallback(f"dataset '{name}' names other coordinates than '{names[0]}'")
    for var in variables.values():
        coord_names.update(var.coordinates)
    coord_names = {c for c in coord_names if c in variables}
    coord_names.update(v.name for v in variables.values() if v.is_index)
    all_dims = {d for v in variables.values() for d in v.dims}

    order = list(range(len(names)))
    if combine == "nested":
        if not isinstance(concat_dim, str):
            raise _Fallback("concat_dim that is not one dimension name")
        dim = concat_dim
    elif combine == "by_coords":
        dim, order = _by_coords_dim(collection, names, variables)
    else:
        raise ValueError(f"{combine} is an invalid option for the keyword argument ``combine``")
    names = [names[i] for i in order]
    if order != list(range(len(order))):
        for var in variables.values():
            var.shapes = [var.shapes[i] for i in order]
            var.attrs = [var.attrs[i] for i in order]
            var._names = names
            var._values = None
    existing = dim in all_dims

    # Every other index must already be the same everywhere: nothing to align.
    for var in variables.values():
        if (
            var.is_index
            and var.name != dim
            and not var.equal_everywhere(collection, names, "equals")
        ):
            raise _Fallback(f"index '{var.name}' differs between datasets and needs aligning")

    concat_over = {v.name for v in variables.values() if dim in v.dims}
    dv = _value(data_vars)
    cv = _value(coords)
    if dv is None:
        dv = "minimal" if existing else "all"
    if dv == "minimal" and cv == "minimal" and not existing:
        raise _Fallback("data_vars='minimal' with coords='minimal' (xarray refuses it)")
    data_names = [a for a in variables if a not in coord_names]
    coord_list = [a for a in variables if a in coord_names]
    for option, subset in ((dv, data_names), (cv, coord_list)):
        if isinstance(option, str):
            if option == "different":
                if compat_v == "override":
                    raise _Fallback("'different' with compat='override' (xarray refuses it)")
                for k in subset:
                    if k not in concat_over and not variables[k].equal_everywhere(
                        collection, names, compat_v
                    ):
                        concat_over.add(k)
            elif option == "all":
                concat_over.update(k for k in subset if k not in all_dims)
            elif option != "minimal":
                raise _Fallback(f"option {option!r}")
        else:
            chosen = list(option)
            if any(k not in subset for k in chosen):
                raise _Fallback("a listed variable is not in the first dataset")
            concat_over.update(chosen)

    out_vars: dict[Hashable, xr.Variable] = {}
    first: dict[str, xr.Variable] | None = None
    for name, var in variables.items():
        if name in concat_over:
            if existing and dim not in var.dims:
                raise _Fallback(f"'{name}' lacks '{dim}' and would be broadcast along it")
            axis = var.dims.index(dim) if existing else None
            others = {tuple(n for i, n in enumerate(s) if i != axis) for s in var.shapes}
            if len(others) != 1:
                raise _Fallback(f"'{name}' has other shapes off '{dim}' in different datasets")
            dims = var.dims if existing else (dim,) + var.dims
            data: Any
            if not existing and var.tag == "string" and set(var.shapes) == {()}:
                # Scalar strings load as NumPy strings (see _scalar_strings): tiny, read now.
                data = var.values(collection, names)
            elif var.is_index or (existing and var.name == dim):
                flat, shapes = var.read_run(collection, names)
                data = _assemble(flat, shapes, axis)
            else:
                data = indexing.LazilyIndexedArray(
                    RunBackendArray(collection, name, names, var.shapes, axis, var.dtype)
                )
            out_vars[name] = xr.Variable(dims, data, attrs=var.attrs[0])
        else:
            if compat_v != "override" and not var.equal_everywhere(collection, names, "equals"):
                raise _Fallback(f"'{name}' is not concatenated and differs between datasets")
            if var._values is None and var.tag == "string" and var.shapes[0] == ():
                var._values = _read_run(collection, name, names[:1])[0].reshape(1)
                var._values = _scalar_strings(var._values, [()])
            if var._values is not None:
                out_vars[name] = xr.Variable(var.dims, var._values[0], attrs=var.attrs[0])
            else:
                if first is None:
                    first = encoded_variables(collection, names[0])[0]
                out_vars[name] = first[name].copy(deep=False)
    if existing:
        index = variables.get(dim)
        if index is not None and combine == "by_coords":
            values = pd.Index(np.asarray(out_vars[dim].values))
            if not (values.is_monotonic_increasing or values.is_monotonic_decreasing):
                raise _Fallback(f"the combined '{dim}' index is not monotonic (xarray refuses it)")
    ds_attrs = collection.dataset(names[0]).attrs
    ds_attrs.pop("coordinates", None)
    # The combined variables are still encoded: decode them as xarray decodes each file (the
    # coordinates were set above, from each variable's and the dataset's `coordinates`).
    from xarray import conventions

    options: dict[str, Any] = {
        k: v for k, v in decoders.items() if v is not None and k != "decode_coords"
    }
    # Indexes decoded dataset by dataset (encoded differently) are decoded already.
    predecoded = {n for n, v in variables.items() if v.decode_each and n in out_vars}
    decoded, decoded_attrs, _ = conventions.decode_cf_variables(
        {n: v for n, v in out_vars.items() if n not in predecoded},
        ds_attrs,
        decode_coords=False,
        **options,
    )
    decoded_vars = dict(decoded)
    for name in predecoded:
        template = variables[name].decoded
        if template is None:  # read nowhere above: decode the first dataset's piece now
            variables[name].read_run(collection, names[:1])
            template = variables[name].decoded
        assert template is not None
        decoded_vars[name] = xr.Variable(
            out_vars[name].dims,
            out_vars[name].data,
            attrs=template.attrs,
            encoding=template.encoding,
        )
    ds = xr.Dataset(
        {n: decoded_vars[n] for n in out_vars if n in decoded_vars}, attrs=decoded_attrs
    )
    present = [c for c in coord_names if c in ds.variables and c not in ds.coords]
    return ds.set_coords(present) if present else ds


def _by_coords_dim(
    collection: Collection, names: list[str], variables: dict[str, _Var]
) -> tuple[str, list[int]]:
    """The one dimension whose index differs between datasets, and the datasets in the order
    ``combine_by_coords`` puts them (by each index's first value)."""
    differing = []
    for var in variables.values():
        if var.is_index and not var.equal_everywhere(collection, names, "equals"):
            differing.append(var)
    if len(differing) != 1:
        raise _Fallback(f"{len(differing)} dimensions' indexes differ between datasets")
    var = differing[0]
    flat, shapes = var.read_run(collection, names)
    lengths = [s[0] for s in shapes]
    if 0 in lengths:
        raise _Fallback(f"a dataset's '{var.name}' index is empty")
    bounds = np.cumsum([0] + lengths)
    indexes = [pd.Index(flat[bounds[i] : bounds[i + 1]]) for i in range(len(names))]
    if all(i.is_monotonic_increasing for i in indexes):
        ascending = True
    elif all(i.is_monotonic_decreasing for i in indexes):
        ascending = False
    else:
        raise _Fallback(f"'{var.name}' is not monotonic in every dataset (xarray refuses it)")
    firsts = pd.Index([i[0] for i in indexes])
    if not firsts.is_unique:
        raise _Fallback(f"two datasets start their '{var.name}' index at the same value")
    rank = firsts.to_series().rank(method="dense", ascending=ascending).astype(int).values - 1
    order = [int(i) for i in np.argsort(rank, kind="stable")]
    return var.name, order


def open_mfdataset(
    location: Any,
    names: Sequence[str] | None = None,
    *,
    concat_dim: Any = None,
    combine: str = "by_coords",
    chunks: Any = None,
    data_vars: Any = _DATA_VARS_DEFAULT,
    coords: Any = _COORDS_DEFAULT,
    compat: Any = _COMPAT_DEFAULT,
    join: Any = _JOIN_DEFAULT,
    combine_attrs: Any = "override",
    drop_variables: Iterable[str] | None = None,
    mask_and_scale: Any = None,
    decode_times: Any = None,
    decode_timedelta: Any = None,
    use_cftime: Any = None,
    concat_characters: Any = None,
    decode_coords: Any = None,
) -> xr.Dataset:
    """Datasets ``names`` of the collection at ``location`` (a path, URL or open
    :class:`Collection`; ``names`` default: every live dataset, in collection order) combined
    into one lazy ``xarray.Dataset``, as ``xr.open_mfdataset`` combines files.

    ``combine``, ``concat_dim``, ``data_vars``, ``coords``, ``compat``, ``join`` and
    ``combine_attrs`` mean what they mean to ``xr.open_mfdataset`` and default to its defaults,
    so the result is ``assert_identical`` to it over the source files. ``chunks`` (as for
    ``Dataset.chunk``: a mapping, an int, ``"auto"`` or ``{}``) chunks the *combined*
    dataset with dask: a block along the concatenation dimension is a run of datasets read by
    one run read, so ``chunks={"station": 500}`` over 2,000 stations is four blocks per
    variable. Without ``chunks`` the variables are lazy and a selection reads only the datasets
    it covers.

    ``mask_and_scale``, ``decode_times``, ``decode_timedelta``, ``use_cftime``,
    ``concat_characters`` and ``decode_coords`` decode as ``xr.open_dataset`` decodes each
    file (xarray's defaults when ``None``): CF times in any calendar, as the import keeps them
    encoded.
    """
    decoders = {
        "mask_and_scale": mask_and_scale,
        "decode_times": decode_times,
        "decode_timedelta": decode_timedelta,
        "use_cftime": use_cftime,
        "concat_characters": concat_characters,
        "decode_coords": decode_coords,
    }
    assert set(decoders) == set(DECODERS)
    collection = location if isinstance(location, Collection) else Collection(location)
    names = collection.names if names is None else [str(n) for n in names]
    if not names:
        raise OSError(f"{collection.location}: no datasets to open")
    try:
        ds = _plan(
            collection,
            names,
            concat_dim=concat_dim,
            combine=combine,
            data_vars=data_vars,
            coords=coords,
            compat=compat,
            join=join,
            combine_attrs=combine_attrs,
            drop_variables=drop_variables,
            decoders=decoders,
        )
    except _Fallback:
        ds = _combine_per_dataset(
            collection,
            names,
            concat_dim=concat_dim,
            combine=combine,
            data_vars=data_vars,
            coords=coords,
            compat=compat,
            join=join,
            combine_attrs=combine_attrs,
            drop_variables=drop_variables,
            decoders=decoders,
        )
    return ds if chunks is None else ds.chunk(chunks)


def _with_scalar_strings(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with its 0-d string variables loaded as NumPy strings (see _scalar_strings)."""
    for name, var in ds.variables.items():
        if var.ndim == 0 and var.dtype == object:
            value = var.values
            if isinstance(value.item(), str):
                ds[name].variable.data = np.array(value.item(), dtype=str)
    return ds


def _combine_per_dataset(
    collection: Collection,
    names: list[str],
    *,
    concat_dim: Any,
    combine: str,
    drop_variables: Iterable[str] | None,
    decoders: dict[str, Any],
    **options: Any,
) -> xr.Dataset:
    """One lazy dataset per name, combined by xarray (what ``xr.open_mfdataset`` does)."""
    # Chunked per dataset ({}: one block each), as xr.open_mfdataset chunks every file, so the
    # combination stays lazy instead of loading every array.
    datasets = [
        _with_scalar_strings(
            dataset_from_collection(collection, n, drop_variables, **decoders)
        ).chunk({})
        for n in names
    ]
    if combine == "nested":
        return xr.combine_nested(datasets, concat_dim=concat_dim, **options)
    if combine == "by_coords":
        combined = xr.combine_by_coords(datasets, **options)
        assert isinstance(combined, xr.Dataset), "datasets combine into a Dataset"
        return combined
    raise ValueError(f"{combine} is an invalid option for the keyword argument ``combine``")
