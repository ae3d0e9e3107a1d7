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


# ---- dates against times stored CF-encoded -----------------------------------------------


def _dated(condition: Any) -> bool:
    """Whether ``condition`` is a well-formed ``(array, stat, op, value)`` comparing a date."""
    return (
        isinstance(condition, Sequence)
        and not isinstance(condition, (str, bytes))
        and len(condition) == 4
        and _is_date(condition[3])
    )


def _is_date(value: Any) -> bool:
    if isinstance(value, (np.datetime64, datetime.datetime)):
        return True
    return type(value).__module__.startswith("cftime")


def _date_fields(value: Any) -> tuple[int, ...]:
    """``(year, month, day, hour, minute, second, microsecond)`` of a date."""
    if isinstance(value, np.datetime64):
        value = value.astype("datetime64[us]").astype(datetime.datetime)
        if isinstance(value, int):  # outside datetime.datetime's years
            raise ValueError("a datetime64 outside years 1-9999")
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return (
        value.year,
        value.month,
        value.day,
        value.hour,
        value.minute,
        value.second,
        value.microsecond,
    )


#: Calendars whose numbers name no date (CF's "none"): such a dataset never matches a date.
_NO_DATES = ("none",)


def _encoded(value: Any, units: str, calendar: str, where: str, dataset: str) -> float:
    """``value`` as a dataset stores its times: the number ``units`` and ``calendar`` give the
    same year, month, day and time of day. A date the calendar does not have is a
    ``QueryError``."""
    from .errors import QueryError

    try:
        import cftime
    except ImportError:  # pragma: no cover - xarray's own dependency
        raise QueryError(
            f"select: {where}: comparing a date with times stored CF-encoded needs cftime",
            reason="cftime is not installed",
            field=where,
        ) from None
    try:
        date = cftime.datetime(*_date_fields(value), calendar=calendar)
        return float(cftime.date2num(date, units, calendar=calendar))
    except (ValueError, TypeError) as e:
        raise QueryError(
            f"select: {where}: {value!r} cannot be placed in the {calendar!r} calendar of "
            f"dataset '{dataset}' (its times are stored as {units!r}): {e}",
            reason=f"a date the {calendar!r} calendar does not have",
            field=where,
        ) from None


def select(
    native: Any,
    attrs: Mapping[str, Any] | None,
    where: Sequence[tuple[str, str, str, Any]] | None,
) -> list[str]:
    """``Collection.select``: the native selection, except that a date compared with an array
    stored as CF-encoded numbers (``units`` "<unit> since <epoch>", a ``calendar``) is first
    encoded with each dataset's own units and calendar, and each group of datasets that encode
    alike is selected with its own numbers. Datasets whose array is ``TimestampNs`` compare the
    date as it is; datasets whose array names no dates (no such units, calendar "none") do not
    match."""
    attr_conds = attr_conditions(attrs)
    dated = [i for i, condition in enumerate(where or ()) if _dated(condition)]
    if not dated:
        return native.select(attr_conds, stat_conditions(where))
    assert where is not None
    # Checked as any condition is; each date is replaced below, dataset group by group.
    stat_conds = stat_conditions(
        [(c[0], c[1], c[2], 0.0) if i in dated else c for i, c in enumerate(where)]
    )
    from .errors import QueryError

    names = native.names()
    # Per dataset: the value of each dated condition, or None where it cannot match.
    values: dict[str, list[Any]] = {n: [] for n in names}
    schemas = {n: {a: tag for a, tag, _ in native.schema(n)[0]} for n in names}
    for i in dated:
        array, stat, op, value = where[i]
        at = f"where[{i}] ({array!r} {stat} {op})"
        having = [n for n in names if array in schemas[n]]
        if not having:
            # The native selection says what is wrong (an array no dataset declares).
            return native.select(attr_conds, stat_conds)
        numeric = [n for n in having if schemas[n][array] != "timestamp_ns"]
        layouts = dict(zip(numeric, native.run_layouts(array, numeric))) if numeric else {}
        placed = False
        for name in names:
            if name not in schemas or array not in schemas[name]:
                values[name].append(None)
            elif schemas[name][array] == "timestamp_ns":
                values[name].append(tagged(value, at))
                placed = True
            else:
                stored = dict(layouts[name][2])
                units = stored.get("units", ("String", None))[1]
                calendar = stored.get("calendar", ("String", "standard"))[1]
                if not isinstance(units, str) or "since" not in units:
                    values[name].append(None)
                    continue
                calendar = str(calendar).lower()
                if calendar in _NO_DATES:
                    values[name].append(None)
                    continue
                if "scale_factor" in stored or "add_offset" in stored:
                    raise QueryError(
                        f"select: {at}: the times of dataset '{name}' are packed "
                        "(scale_factor/add_offset); compare with the stored numbers instead",
                        reason="packed times",
                        field=at,
                    )
                values[name].append(("float", _encoded(value, units, calendar, at, name)))
                placed = True
        if not placed:
            raise QueryError(
                f"select: {at}: no dataset stores '{array}' as dates (datetime64, or numbers "
                "with CF units '<unit> since <epoch>' and a calendar)",
                reason="no dates to compare with",
                field=at,
            )
    groups: dict[tuple[Any, ...], set[str]] = {}
    for name in names:
        key = tuple(values[name])
        if None not in key:
            groups.setdefault(key, set()).add(name)
    chosen: set[str] = set()
    for key, members in groups.items():
        conds = list(stat_conds)
        for i, value in zip(dated, key):
            array, stat, op, _ = conds[i]
            conds[i] = (array, stat, op, value)
        chosen.update(n for n in native.select(attr_conds, conds) if n in members)
    return [n for n in names if n in chosen]
