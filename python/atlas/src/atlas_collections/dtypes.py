"""NumPy <-> Atlas element types and attribute values.

Arrays (the format's ``DType``; what array-format 0.15.0 can write and read):

=========================  ======================  =================================
NumPy (write)              Atlas                   NumPy (read)
=========================  ======================  =================================
int8 int16 int32 int64     Int8 .. Int64           same
uint8 .. uint64            UInt8 .. UInt64         same
float32 float64            Float32 Float64         same
datetime64[ns]             TimestampNs             datetime64[ns]
datetime64[s|ms|us]        TimestampNs             datetime64[ns] (exact conversion)
str (``U``), object of str String                  object array of ``str``
bytes (``S``), object of   Binary                  object array of ``bytes``
bytes
=========================  ======================  =================================

Refused (:class:`~atlas_collections.errors.UnsupportedDTypeError`): bool (array-format 0.15.0
has no bool element type; store it as uint8), float16 and longdouble, complex, timedelta64,
structured/void, and object arrays that mix types or hold anything but str or bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import UnsupportedDTypeError

#: Atlas dtype tag -> NumPy dtype of what a read returns.
READ_DTYPES: dict[str, np.dtype[Any]] = {
    "int8": np.dtype("int8"),
    "int16": np.dtype("int16"),
    "int32": np.dtype("int32"),
    "int64": np.dtype("int64"),
    "uint8": np.dtype("uint8"),
    "uint16": np.dtype("uint16"),
    "uint32": np.dtype("uint32"),
    "uint64": np.dtype("uint64"),
    "float32": np.dtype("float32"),
    "float64": np.dtype("float64"),
    "timestamp_ns": np.dtype("datetime64[ns]"),
    "string": np.dtype(object),
    "binary": np.dtype(object),
}

MAPPING = (
    "the format holds int8..int64, uint8..uint64, float32, float64, datetime64 (stored as "
    "nanoseconds), str and bytes; bool, float16, complex, timedelta64, structured, "
    "variable-length (vlen) and mixed object arrays are refused"
)

#: Why an array of variable-length elements (a NetCDF/HDF5 vlen type: each element an array of
#: its own length) is refused.
VLEN_REASON = "variable-length (vlen) elements have no Atlas element type"

_REFUSED_REASON = {
    "b": "array-format 0.15.0 has no bool element type (store it as uint8)",
    "c": "complex numbers have no Atlas element type",
    "m": "timedelta64 has no Atlas element type (store it as int64 and name the unit)",
    "V": "structured/void arrays have no Atlas element type",
}


def numpy_dtype(tag: str) -> np.dtype:
    """The NumPy dtype a read of an Atlas array of ``tag`` returns."""
    try:
        return READ_DTYPES[tag]
    except KeyError:
        raise UnsupportedDTypeError(
            f"Atlas element type {tag} cannot be read by array-format 0.15.0's typed API",
            reason=f"unsupported element type {tag}",
            dtype=tag,
        ) from None


def _refuse(dtype: Any, why: str, what: str | None) -> UnsupportedDTypeError:
    subject = f"{what}: " if what else ""
    return UnsupportedDTypeError(
        f"{subject}dtype {dtype} cannot be stored: {why} ({MAPPING})",
        reason=why,
        dtype=str(dtype),
        variable=what,
    )


def to_atlas(data: Any, what: str | None = None) -> tuple[str, Any, list[int]]:
    """``(tag, payload, shape)`` for writing ``data``: the payload is a C-contiguous NumPy array
    for the fixed-width types (int64 nanoseconds for datetimes) and a flat list for strings and
    byte strings. ``what`` names the array in a refusal."""
    array = np.asarray(data)
    shape = list(array.shape)
    kind = array.dtype.kind
    if kind in "iuf":
        if kind == "f" and array.dtype.itemsize not in (4, 8):
            raise _refuse(array.dtype, "only float32 and float64 have an Atlas element type", what)
        name = array.dtype.name
        native = array.astype(array.dtype.newbyteorder("="), copy=False)
        return name, _c_order(native), shape
    if kind == "M":
        unit, _ = np.datetime_data(array.dtype)
        if unit != "ns":
            if unit not in ("s", "ms", "us", "D", "h", "m"):
                raise _refuse(array.dtype, f"datetime64[{unit}] has no exact nanosecond form", what)
            converted = array.astype("datetime64[ns]")
            back = converted.astype(array.dtype)
            same = (back == array) | (np.isnat(back) & np.isnat(array))
            if not bool(np.all(same)):
                raise _refuse(array.dtype, "its values overflow datetime64[ns]", what)
            array = converted
        return "timestamp_ns", _c_order(array.view("int64")), shape
    if kind == "U":
        return "string", [str(x) for x in array.reshape(-1).tolist()], shape
    if kind == "S":
        return "binary", [bytes(x) for x in array.reshape(-1).tolist()], shape
    if kind == "O":
        flat = array.reshape(-1).tolist()
        if flat and all(isinstance(x, str) for x in flat):
            return "string", flat, shape
        if flat and all(isinstance(x, bytes) for x in flat):
            return "binary", flat, shape
        if not flat:
            return "string", flat, shape
        if any(isinstance(x, (np.ndarray, list, tuple)) for x in flat):
            raise _refuse(array.dtype, VLEN_REASON, what)
        types = sorted({type(x).__name__ for x in flat})
        raise _refuse(
            array.dtype,
            f"object array holding {', '.join(types)} (only all-str or all-bytes)",
            what,
        )
    why = _REFUSED_REASON.get(kind, f"{array.dtype} has no Atlas element type")
    raise _refuse(array.dtype, why, what)


def from_native(tagged: tuple[str, Any]) -> np.ndarray:
    """The NumPy array for what the native reader returned."""
    tag, value = tagged
    if tag in ("string", "binary"):
        items, shape = value
        out = np.empty(len(items), dtype=object)
        out[:] = items
        return out.reshape(shape)
    if tag == "timestamp_ns":
        return value.view("datetime64[ns]")
    return value


# ---- attribute values -------------------------------------------------------------------

_SCALAR_TAGS = {
    "int8": "Int8",
    "int16": "Int16",
    "int32": "Int32",
    "int64": "Int64",
    "uint8": "UInt8",
    "uint16": "UInt16",
    "uint32": "UInt32",
    "uint64": "UInt64",
    "float32": "Float32",
    "float64": "Float64",
    "bool": "Bool",
}
_NUMPY_OF_TAG = {v: np.dtype(k) for k, v in _SCALAR_TAGS.items()}


def _c_order(array: np.ndarray) -> np.ndarray:
    """``array`` in C order, keeping its rank: ``np.ascontiguousarray`` turns a 0-d array into
    a 1-element 1-D one, which would store a scalar variable on a new dimension."""
    return array if array.flags.c_contiguous else np.array(array, order="C")


def attr_to_atlas(value: Any, what: str) -> tuple[str, Any]:
    """``(tag, plain value)`` of an attribute value; ``what`` names it in a refusal.

    Scalars: bool, int (Int64, or UInt64 above 2**63-1), float (Float64), str, bytes, and NumPy
    scalars of the integer/float/bool types (their own width). Lists: 1-D NumPy arrays of those
    types, and lists/tuples of bools, ints, floats (ints and floats mixed: Float64), str or bytes.
    There is no timestamp, None or nested value.
    """
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return attr_to_atlas(value[()], what)
        if value.ndim != 1:
            raise _attr_refused(value, what, f"a {value.ndim}-D array (only 1-D lists)")
        kind = value.dtype.kind
        if kind in "iufb" and value.dtype.name in _SCALAR_TAGS:
            return _SCALAR_TAGS[value.dtype.name] + "List", value.tolist()
        return attr_to_atlas(value.tolist(), what)
    if isinstance(value, (bool, np.bool_)):
        return "Bool", bool(value)
    if isinstance(value, np.generic) and value.dtype.name in _SCALAR_TAGS:
        return _SCALAR_TAGS[value.dtype.name], value.item()
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return "Int64", value
        if 0 <= value < 2**64:
            return "UInt64", value
        raise _attr_refused(value, what, "an integer outside int64 and uint64")
    if isinstance(value, float):
        return "Float64", value
    if isinstance(value, (str, np.str_)):
        return "String", str(value)
    if isinstance(value, (bytes, np.bytes_)):
        return "Binary", bytes(value)
    if isinstance(value, (list, tuple)):
        items = list(value)
        if not items:
            return "Float64List", []
        if all(isinstance(x, (bool, np.bool_)) for x in items):
            return "BoolList", [bool(x) for x in items]
        if all(
            isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)) for x in items
        ):
            return "Int64List", [int(x) for x in items]
        if all(
            isinstance(x, (int, float, np.integer, np.floating))
            and not isinstance(x, (bool, np.bool_))
            for x in items
        ):
            return "Float64List", [float(x) for x in items]
        if all(isinstance(x, (str, np.str_)) for x in items):
            return "StringList", [str(x) for x in items]
        if all(isinstance(x, (bytes, np.bytes_)) for x in items):
            return "BinaryList", [bytes(x) for x in items]
        raise _attr_refused(value, what, "a list mixing types")
    raise _attr_refused(value, what, f"a value of type {type(value).__name__}")


def _attr_refused(value: Any, what: str, why: str) -> UnsupportedDTypeError:
    return UnsupportedDTypeError(
        f"{what}: cannot store {why} as an attribute (attributes hold bool, integers, floats, "
        "str, bytes and 1-D lists of them)",
        reason=why,
        dtype=type(value).__name__,
        variable=what,
    )


def attr_from_native(tagged: tuple[str, Any]) -> Any:
    """The Python value of a stored attribute: ``bool``/``int``/``float``/``str``/``bytes`` for
    Bool, Int64, Float64, String and Binary; a NumPy scalar of its width for the other numeric
    types; a 1-D NumPy array for numeric lists; a ``list`` for string and byte-string lists."""
    tag, value = tagged
    if tag in ("Bool", "Int64", "Float64", "String", "Binary"):
        return value
    if tag in _NUMPY_OF_TAG:
        return _NUMPY_OF_TAG[tag].type(value)
    if tag.endswith("List"):
        base = tag[: -len("List")]
        if base in _NUMPY_OF_TAG:
            return np.array(value, dtype=_NUMPY_OF_TAG[base])
        return list(value)
    return value


def stat_from_native(tagged: tuple[str, Any] | None, tag: str | None) -> Any:
    """A statistic as a value of the array's type ``tag`` (NumPy scalar, ``str``, ``bytes``)."""
    if tagged is None:
        return None
    kind, value = tagged
    if kind == "TimestampNs":
        return np.datetime64(value, "ns")
    if kind == "Bytes":
        if tag == "string":
            return value.decode("utf-8", errors="surrogateescape")
        return value
    if tag in READ_DTYPES and tag not in ("string", "binary", "timestamp_ns"):
        return READ_DTYPES[tag].type(value)
    return value


def fill_from_native(tagged: tuple[str, Any] | None, tag: str) -> Any:
    """A fill value as a value of the array's type."""
    if tagged is None:
        return None
    kind, value = tagged
    if kind == "TimestampNs":
        return np.datetime64(value, "ns")
    if kind == "String":
        return value
    if tag in READ_DTYPES and tag not in ("string", "binary", "timestamp_ns"):
        return READ_DTYPES[tag].type(value)
    return value


def fill_to_atlas(value: Any, tag: str) -> tuple[str, Any] | None:
    """``(tag, value)`` of a fill value for an array of ``tag``."""
    if value is None:
        return None
    if tag.startswith("int"):
        return "Int", int(value)
    if tag.startswith("uint"):
        return "UInt", int(value)
    if tag.startswith("float"):
        return "Float", float(value)
    if tag == "timestamp_ns":
        return "TimestampNs", int(np.datetime64(value, "ns").astype("int64"))
    if tag == "string":
        return "String", str(value)
    raise UnsupportedDTypeError(
        f"no fill value for {tag} arrays", reason="no fill value", dtype=tag
    )
