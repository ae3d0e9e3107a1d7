"""``Collection.select``'s arguments checked for their Python types and tagged for the native
module, which does the rest (unknown names, values that cannot compare, the evaluation)."""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

_Tagged = tuple[str, Any]


def tagged(value: Any, where: str) -> _Tagged:
    """``(tag, value)`` of one condition value; a type no attribute or statistic holds is a
    ``TypeError`` naming the condition (``where``)."""
    # ``bool`` before ``int``: it is one, but only matches booleans.
    if isinstance(value, (bool, np.bool_)):
        return ("bool", bool(value))
    if isinstance(value, (int, np.integer)):
        return ("int", int(value))
    if isinstance(value, (float, np.floating)):
        return ("float", float(value))
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return ("bytes", bytes(value))
    if isinstance(value, (np.datetime64, datetime.datetime)):
        if isinstance(value, datetime.datetime) and value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        ns = np.datetime64(value, "ns")
        if np.isnat(ns):
            raise TypeError(f"select: {where}: NaT compares with nothing")
        return ("timestamp_ns", int(ns.astype(np.int64)))
    raise TypeError(
        f"select: {where}: a value of type {type(value).__name__} cannot be compared "
        "(expected bool, int, float, str, bytes or a datetime)"
    )


def attr_conditions(attrs: Mapping[str, Any] | None) -> list[tuple[str, list[_Tagged]]]:
    """``{key: value or [values]}`` as ``[(key, [(tag, value)])]``."""
    if attrs is None:
        return []
    if not isinstance(attrs, Mapping):
        raise TypeError(
            f"select: attrs must be a mapping of attribute key to value(s), not "
            f"{type(attrs).__name__}"
        )
    out = []
    for key, accepted in attrs.items():
        if not isinstance(key, str):
            raise TypeError(f"select: attrs: key {key!r} is not a str")
        at = f'attrs["{key}"]'
        if isinstance(accepted, (list, tuple, set, frozenset, np.ndarray)):
            values = [tagged(v, at) for v in accepted]
        else:
            values = [tagged(accepted, at)]
        out.append((key, values))
    return out


def stat_conditions(
    where: Sequence[tuple[str, str, str, Any]] | None,
) -> list[tuple[str, str, str, _Tagged]]:
    """``[(array, stat, op, value)]`` with each value tagged."""
    if where is None:
        return []
    if isinstance(where, (str, bytes)) or not isinstance(where, Sequence):
        raise TypeError(
            "select: where must be a list of (array, stat, op, value) tuples, not "
            f"{type(where).__name__}"
        )
    if len(where) == 4 and isinstance(where[0], str):
        # One condition given bare is the likeliest slip: say so rather than fail on 'm'.
        raise TypeError("select: where must be a list of (array, stat, op, value) tuples")
    out = []
    for i, condition in enumerate(where):
        at = f"where[{i}]"
        if isinstance(condition, (str, bytes)) or not isinstance(condition, Sequence):
            raise TypeError(f"select: {at}: expected an (array, stat, op, value) tuple")
        if len(condition) != 4:
            raise TypeError(
                f"select: {at}: expected (array, stat, op, value), got {len(condition)} items"
            )
        array, stat, op, value = condition
        for part, text in (("array", array), ("stat", stat), ("op", op)):
            if not isinstance(text, str):
                raise TypeError(f"select: {at}: {part} {text!r} is not a str")
        out.append((array, stat, op, tagged(value, at)))
    return out
