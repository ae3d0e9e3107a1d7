"""NetCDF import: each file becomes one dataset of a new collection.

Variables become arrays with their dimensions and attributes, global attributes become dataset
attributes, and the dataset name is the file stem, checked by the naming rule. Files are read
through xarray (``netCDF4`` or ``h5netcdf``), with CF decoding, so what the collection holds is
what ``xr.open_dataset(file)`` shows: packed integers are unpacked, ``_FillValue`` becomes NaN
and CF times become ``datetime64[ns]``.

Every refusal names the file (and the variable or attribute at fault) and leaves no
``data.atlas`` behind: names are checked before the writer starts, and the writer publishes only
when every file went in.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _atlas
from ._core import Writer, _location
from .errors import AtlasError, ImportRefusedError, InvalidNameError, UnsupportedDTypeError

__all__ = ["import_netcdf", "ImportSummary"]


@dataclass(frozen=True)
class ImportSummary:
    """What an import wrote."""

    location: str
    datasets: int
    container_bytes: int


def _refuse(out: str, file: str, reason: str, variable: str | None = None) -> ImportRefusedError:
    where = f"{file}" + (f": variable '{variable}'" if variable else "")
    return ImportRefusedError(
        f"refused to import {where}: {reason} (nothing was written to {out})",
        path=out,
        reason=reason,
        file=file,
        variable=variable,
    )


def import_netcdf(
    out: str | os.PathLike[str],
    files: Sequence[str | os.PathLike[str]],
    *,
    engine: str | None = None,
    progress: bool = True,
    codec: str = "zstd",
) -> ImportSummary:
    """Imports NetCDF ``files`` into a new collection at ``out`` (a directory or ``s3://`` URL).

    ``engine`` is xarray's (``"netcdf4"``, ``"h5netcdf"``; default: xarray's choice). Shows a
    tqdm progress bar over the files when ``progress``. Raises :class:`ImportRefusedError` for an
    unreadable file, a dtype or attribute the format cannot hold, or an invalid or repeated
    dataset, variable or attribute name; nothing is published then."""
    import xarray as xr

    out_text = _location(out)
    paths = [os.fspath(f) for f in files]
    if not paths:
        raise ValueError("no NetCDF files to import")
    names: dict[str, str] = {}
    for path in paths:
        stem = Path(path).stem
        try:
            _atlas.check_name("dataset", stem)
        except InvalidNameError as e:
            raise _refuse(
                out_text, path, f"its stem {stem!r} is not a valid dataset name: {e.reason}"
            ) from None
        if stem in names:
            raise _refuse(
                out_text, path, f"its stem {stem!r} repeats the dataset name of {names[stem]}"
            )
        names[stem] = path

    bar: Any = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(paths), unit="file", desc="import")
    writer = Writer(out_text, codec=codec)
    try:
        for stem, path in names.items():
            if bar is not None:
                bar.set_postfix_str(Path(path).name, refresh=False)
            try:
                ds = xr.open_dataset(path, engine=engine, cache=False)
            except Exception as e:  # noqa: BLE001 - any reader failure refuses the file
                raise _refuse(
                    out_text, path, f"cannot be read as NetCDF: {type(e).__name__}: {e}"
                ) from None
            with ds:
                _check_names(out_text, path, ds)
                _check_no_groups(out_text, path, engine)
                _check_calendars(out_text, path, ds)
                try:
                    ds = ds.load()
                except Exception as e:  # noqa: BLE001
                    raise _refuse(
                        out_text, path, f"cannot be read as NetCDF: {type(e).__name__}: {e}"
                    ) from None
                try:
                    writer.write_xarray(stem, ds)
                except UnsupportedDTypeError as e:
                    variable = getattr(e, "variable", None)
                    raise _refuse(
                        out_text, path, _strip_subject(str(e)), _variable_of(variable)
                    ) from None
                except AtlasError as e:
                    raise _refuse(out_text, path, e.reason) from None
            if bar is not None:
                bar.update(1)
        summary = writer.finish()
    except BaseException:
        writer.abort()
        raise
    finally:
        if bar is not None:
            bar.close()
    return ImportSummary(out_text, summary["datasets"], summary["container_bytes"])


def _check_no_groups(out: str, path: str, engine: str | None) -> None:
    """Refuses a NetCDF-4 file with groups below the root: one file is one dataset, and
    importing only its root would drop the groups' variables without a word."""
    import xarray as xr

    try:
        groups = xr.open_groups(path, engine=engine)
    except (NotImplementedError, ValueError, TypeError):
        return  # an engine or format without groups (NetCDF-3)
    try:
        nested = sorted(g for g in groups if g not in ("", "/"))
    finally:
        for group in groups.values():
            group.close()
    if nested:
        raise _refuse(
            out,
            path,
            f"it holds groups below the root ({', '.join(nested)}); one file is one dataset, "
            "so import each group as a file of its own",
        )


def _check_calendars(out: str, path: str, ds: Any) -> None:
    """Refuses a variable of dates in a non-standard calendar: xarray decodes them to cftime
    objects, and Atlas stores times as datetime64 (proleptic Gregorian) only."""
    for name, var in ds.variables.items():
        if var.dtype != object or var.size == 0:
            continue
        first = var.values.reshape(-1)[0]
        calendar = getattr(first, "calendar", None)
        if calendar is not None and type(first).__module__.startswith("cftime"):
            raise _refuse(
                out,
                path,
                f"its dates are in the {calendar!r} calendar, and Atlas stores times as "
                "datetime64 (proleptic Gregorian) only; to keep the numbers with their units "
                "and calendar, open it with xarray's decode_times=False and write it with "
                "atlas_collections.write_xarray",
                str(name),
            )


def _check_names(out: str, path: str, ds: Any) -> None:
    for name, var in ds.variables.items():
        try:
            _atlas.check_name("array", str(name))
        except InvalidNameError as e:
            raise _refuse(out, path, f"invalid variable name: {e.reason}", str(name)) from None
        for key in var.attrs:
            try:
                _atlas.check_name("attribute", str(key))
            except InvalidNameError as e:
                raise _refuse(
                    out, path, f"invalid attribute name {key!r}: {e.reason}", str(name)
                ) from None
    for key in ds.attrs:
        try:
            _atlas.check_name("attribute", str(key))
        except InvalidNameError as e:
            raise _refuse(out, path, f"invalid global attribute name {key!r}: {e.reason}") from None


def _variable_of(what: str | None) -> str | None:
    """The array name inside "dataset 'd', array 'v'[, attribute 'k']"."""
    if not what:
        return None
    marker = "array '"
    if marker in what:
        rest = what.split(marker, 1)[1]
        return rest.split("'", 1)[0]
    return None


def _strip_subject(message: str) -> str:
    """The reason of an UnsupportedDTypeError without its "dataset 'd', array 'v': " prefix."""
    if message.startswith("dataset '") and ": " in message:
        return message.split(": ", 1)[1]
    return message


#: What ``python -m atlas_collections import`` needs beyond the package itself: the modules of
#: the ``netcdf`` extra.
IMPORT_NEEDS = ("xarray", "netCDF4", "h5netcdf", "tqdm")


def missing_import_modules() -> list[str]:
    """The modules of the ``netcdf`` extra that this environment cannot import."""
    import importlib.util

    return [name for name in IMPORT_NEEDS if importlib.util.find_spec(name) is None]


def main_import(argv: list[str]) -> int:
    """``python -m atlas_collections import OUT FILE.nc ...``; exits 2 (a usage error) when the
    ``netcdf`` extra is not installed, naming what is missing and how to install it."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m atlas_collections import",
        description="Import NetCDF files into a new Atlas collection, one dataset per file.",
    )
    parser.add_argument("out", help="the new collection: a directory or s3://bucket/prefix")
    parser.add_argument("files", nargs="+", help="NetCDF files; each file's stem names its dataset")
    parser.add_argument("--engine", choices=["netcdf4", "h5netcdf", "scipy"], default=None)
    parser.add_argument("--codec", choices=["zstd", "lz4", "none"], default="zstd")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    missing = missing_import_modules()
    if args.no_progress and missing == ["tqdm"]:
        missing = []
    if missing:
        print(
            f"error: importing NetCDF needs the netcdf extra, and {', '.join(missing)} "
            "cannot be imported here: pip install 'atlas-collections[netcdf]' "
            "(from a checkout: pip install './python/atlas[netcdf]')",
            file=sys.stderr,
        )
        return 2
    try:
        summary = import_netcdf(
            args.out,
            args.files,
            engine=args.engine,
            progress=not args.no_progress,
            codec=args.codec,
        )
    except AtlasError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(
        f"imported {summary.datasets} datasets into {summary.location} "
        f"({summary.container_bytes} bytes)"
    )
    return 0
