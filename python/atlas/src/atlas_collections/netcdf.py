"""NetCDF import: each file becomes one dataset of a new collection.

Variables become arrays with their dimensions and attributes, global attributes become dataset
attributes, and the dataset name is the file stem, checked by the naming rule. Files are read
through xarray (``netCDF4`` or ``h5netcdf``), with CF decoding, so what the collection holds is
what ``xr.open_dataset(file)`` shows: packed integers are unpacked and ``_FillValue`` becomes
NaN. What CF decoding turns into a type of its own (dates, timedeltas, booleans, strings with
missing entries) is kept as the file encodes it, and the ``"atlas"`` backend decodes it (see
:func:`stored_form`).

Every refusal names the file (and the variable or attribute at fault) and leaves no
``data.atlas`` behind: names are checked before the writer starts, and the writer publishes only
when every file went in.
"""

from __future__ import annotations

import os
import signal
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _atlas
from ._core import Writer, _dataset_items, _location
from .errors import (
    AtlasError,
    ImportRefusedError,
    InvalidNameError,
    StorageError,
    UnsupportedDTypeError,
    WriteError,
)

__all__ = ["import_netcdf", "ImportSummary", "default_jobs"]


@dataclass(frozen=True)
class ImportSummary:
    """What an import wrote: ``datasets`` of ``files`` went in; ``skipped`` holds the refusal
    of every other file (only with ``skip_bad``), in the order the files were given. An
    ``append`` import also says the ``version`` it committed and the datasets it ``replaced``."""

    location: str
    datasets: int
    container_bytes: int
    files: int = 0
    skipped: tuple[ImportRefusedError, ...] = ()
    version: int | None = None
    replaced: int = 0


def _refuse(out: str, file: str, reason: str, variable: str | None = None) -> ImportRefusedError:
    where = f"{file}" + (f": variable '{variable}'" if variable else "")
    return ImportRefusedError(
        f"refused to import {where}: {reason} (nothing was written to {out})",
        path=out,
        reason=reason,
        file=file,
        variable=variable,
    )


def default_jobs() -> int:
    """The CPUs this process may run on (what ``--jobs`` defaults to)."""
    counter = getattr(os, "process_cpu_count", None)  # Python 3.13
    if counter is not None:
        return counter() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def import_netcdf(
    out: str | os.PathLike[str],
    files: Sequence[str | os.PathLike[str]],
    *,
    engine: str | None = None,
    progress: bool = True,
    codec: str = "zstd",
    jobs: int | None = 1,
    skip_bad: bool = False,
    append: bool = False,
    replace: bool = False,
) -> ImportSummary:
    """Imports NetCDF ``files`` into a new collection at ``out`` (a directory or ``s3://`` URL),
    one dataset per file, in the order given.

    With ``append``, the files go into the growing collection at ``out`` (an empty or new
    location becomes one) as one new part and version (``Writer(out, mode="append")``): a
    dataset name it already holds is refused, unless ``replace``, which hides the old dataset
    in the same commit (``docs/format/growing.md``, "Replacing").

    ``engine`` is xarray's (``"netcdf4"``, ``"h5netcdf"``; default: xarray's choice). Shows a
    tqdm progress bar over the files when ``progress``. ``jobs`` worker processes read and
    decode the files (``None``: one per CPU; ``1``: this process) while this process writes, in
    the order given, so the collection is byte for byte the one a ``jobs=1`` import writes;
    with more than one, a script calling this needs the ``if __name__ == "__main__":`` guard
    (the workers are started by multiprocessing's ``forkserver``).

    Raises :class:`ImportRefusedError` for an unreadable file, a dtype or attribute the format
    cannot hold, or an invalid or repeated dataset, variable or attribute name; nothing is
    published then. With ``skip_bad``, such a file is left out instead, and its refusal is in
    the summary's ``skipped``; if every file is refused, nothing is published and the error
    (with ``skipped`` as an attribute) is raised."""
    out_text = _location(out)
    paths = [os.fspath(f) for f in files]
    if not paths:
        raise ValueError("no NetCDF files to import")
    if replace and not append:
        raise ValueError("replace=True needs append=True: a new collection has nothing to replace")
    workers = default_jobs() if jobs is None else int(jobs)
    if workers < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    refused: list[tuple[int, ImportRefusedError]] = []

    def skip_or_raise(index: int, error: ImportRefusedError) -> None:
        if not skip_bad:
            raise error
        refused.append((index, error))

    plan: list[tuple[int, str, str]] = []
    names: dict[str, str] = {}
    for index, path in enumerate(paths):
        stem = Path(path).stem
        try:
            _atlas.check_name("dataset", stem)
        except InvalidNameError as e:
            skip_or_raise(
                index,
                _refuse(
                    out_text, path, f"its stem {stem!r} is not a valid dataset name: {e.reason}"
                ),
            )
            continue
        if stem in names:
            skip_or_raise(
                index,
                _refuse(
                    out_text, path, f"its stem {stem!r} repeats the dataset name of {names[stem]}"
                ),
            )
            continue
        names[stem] = path
        plan.append((index, stem, path))

    bar: Any = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(paths), unit="file", desc="import")
        bar.update(len(paths) - len(plan))
    if append:
        writer = Writer(out_text, codec=codec, mode="append", replace=replace)
    else:
        writer = Writer(out_text, codec=codec)
    try:
        with _Decoder(out_text, engine, min(workers, len(plan))) as decoder:
            for (index, _stem, path), decoded in decoder.map(plan):
                if bar is not None:
                    bar.set_postfix_str(Path(path).name, refresh=False)
                if isinstance(decoded, ImportRefusedError):
                    skip_or_raise(index, decoded)
                else:
                    for written, (name, items, pairs) in enumerate(decoded):
                        try:
                            writer._write_items(name, items, pairs)
                        except AtlasError as e:
                            if isinstance(e, UnsupportedDTypeError):
                                variable = _variable_of(getattr(e, "variable", None))
                                reason = _strip_subject(str(e))
                            else:
                                variable, reason = None, e.reason
                            error = _refuse(out_text, path, reason, variable)
                            if written or isinstance(e, (StorageError, WriteError)):
                                # The store or the writer failed, not this file (skipping it
                                # would only skip every file after it too), or the file's
                                # earlier groups went in already: nothing can take them out.
                                raise error from None
                            skip_or_raise(index, error)
                            break
                if bar is not None:
                    bar.update(1)
        skipped = tuple(error for _, error in sorted(refused, key=lambda r: r[0]))
        if len(skipped) == len(paths):
            first = skipped[0]
            raise ImportRefusedError(
                f"refused every one of the {len(paths)} files (the first: {first.file}: "
                f"{first.reason}); nothing was written to {out_text}",
                path=out_text,
                reason="every file was refused",
                file=first.file,
                variable=first.variable,
                skipped=skipped,
            )
        summary = writer.finish()
    except BaseException:
        writer.abort()
        raise
    finally:
        if bar is not None:
            bar.close()
    return ImportSummary(
        out_text,
        summary["datasets"],
        summary["container_bytes"],
        len(paths),
        skipped,
        summary.get("version"),
        summary.get("replaced", 0),
    )


#: Decoded datasets held at once per worker process (waiting to be written, or being decoded):
#: what bounds the import's memory, since the writer takes them in input order.
IN_FLIGHT_PER_JOB = 2


def _decode(out: str, path: str, stem: str, engine: str | None) -> Any:
    """Reads, checks and converts one file: a list of ``(dataset name, items, pairs)`` for the
    writer, one per group imported (see :func:`_imported_groups`), or the file's
    :class:`ImportRefusedError` (returned, not raised, so that it crosses from a worker process
    without the worker's traceback). Runs in a worker process when ``jobs`` > 1."""
    from .xarray_backend import encode_dataset

    try:
        groups = _open_groups(path, engine)
    except Exception as e:  # noqa: BLE001 - any reader failure refuses the file
        return _refuse(out, path, f"cannot be read as NetCDF: {type(e).__name__}: {e}")
    try:
        datasets = []
        for group, raw in _imported_groups(groups):
            where = "" if group == "/" else group
            try:
                ds = stored_form(raw)
            except Exception as e:  # noqa: BLE001 - xarray's CF decoding refused the file
                return _refuse(
                    out,
                    path,
                    f"xarray cannot decode it: {type(e).__name__}: {e}",
                    _in_group(where, _decoding_variable(e)),
                )
            _check_names(out, path, ds, where)
            try:
                ds = ds.load()
            except Exception as e:  # noqa: BLE001
                return _refuse(
                    out,
                    path,
                    f"cannot be read as NetCDF{f' (group {where})' if where else ''}: "
                    f"{type(e).__name__}: {e}",
                )
            name = stem + where
            try:
                arrays, attrs = encode_dataset(ds)
                datasets.append((name, *_dataset_items(name, arrays, attrs)))
            except UnsupportedDTypeError as e:
                variable = _variable_of(getattr(e, "variable", None))
                return _refuse(out, path, _strip_subject(str(e)), _in_group(where, variable))
            except AtlasError as e:
                return _refuse(out, path, e.reason)
        return datasets
    except ImportRefusedError as e:
        return e
    finally:
        for group in groups.values():
            group.close()


def _open_groups(path: str, engine: str | None) -> dict[str, Any]:
    """Every group of the file (``"/"``, ``"/a"``, ``"/a/b"``, ...), as stored: no CF
    decoding. A format or an engine without groups (NetCDF-3 through scipy) gives ``"/"``."""
    import xarray as xr

    # Each decoder by name: open_groups does not pass decode_cf=False on to the engine.
    undecoded: dict[str, Any] = {
        "mask_and_scale": False,
        "decode_times": False,
        "decode_timedelta": False,
        "concat_characters": False,
        "decode_coords": False,
    }
    try:
        return dict(xr.open_groups(path, engine=engine, **undecoded))
    except NotImplementedError:
        return {"/": xr.open_dataset(path, engine=engine, cache=False, **undecoded)}


def _imported_groups(groups: dict[str, Any]) -> list[tuple[str, Any]]:
    """The groups that become datasets: every group holding variables or attributes, and every
    group without subgroups (so that the file's tree keeps its shape); a file without groups
    is one dataset, whatever it holds."""
    if len(groups) == 1:
        return list(groups.items())
    paths = list(groups)
    chosen = []
    for path, ds in groups.items():
        below = path.rstrip("/") + "/"
        has_subgroups = any(p != path and p.startswith(below) for p in paths)
        if ds.variables or ds.attrs or not has_subgroups:
            chosen.append((path, ds))
    return chosen


def _decoding_variable(error: BaseException) -> str | None:
    """The variable xarray names in the note it adds to a decoding error."""
    for note in getattr(error, "__notes__", ()):
        if note.startswith("Raised while decoding variable '"):
            return note.split("'", 2)[1]
    return None


def _in_group(group: str, variable: str | None) -> str | None:
    """A variable's name as the file knows it: ``v`` in the root group, ``/a/b/v`` below."""
    if variable is None or not group:
        return variable
    return f"{group}/{variable}"


#: ``units`` xarray decodes as timedeltas (``xarray.coding.times.TIME_UNITS``).
_TIMEDELTA_UNITS = frozenset(
    ["days", "hours", "minutes", "seconds", "milliseconds", "microseconds", "nanoseconds"]
)


def encoded_names(raw: Any) -> set[str]:
    """The variables of the undecoded dataset ``raw`` that the import keeps as encoded: numbers
    that CF decoding turns into dates (``units`` "<unit> since <epoch>", any calendar), into
    timedeltas (``units`` a time unit, or a ``timedelta64`` ``dtype`` attribute) or into
    booleans (``dtype`` "bool"), and the bounds of such dates."""
    kept: set[str] = set()
    for name, var in raw.variables.items():
        if var.dtype.kind not in "iuf":
            continue
        units = var.attrs.get("units")
        dtype = var.attrs.get("dtype")
        if (isinstance(units, str) and ("since" in units or units in _TIMEDELTA_UNITS)) or (
            isinstance(dtype, str) and (dtype == "bool" or dtype.startswith("timedelta64"))
        ):
            kept.add(str(name))
    for name in list(kept):
        for key in ("bounds", "climatology"):
            other = raw.variables[name].attrs.get(key)
            if isinstance(other, str) and other in raw.variables:
                if raw.variables[other].dtype.kind in "iuf":
                    kept.add(other)
    return kept


def masked_string_names(raw: Any) -> set[str]:
    """The variables of the undecoded dataset ``raw`` that are strings (NetCDF-4 ``string``
    or ``char`` arrays) with a ``_FillValue`` or ``missing_value``: CF decoding turns the
    entries equal to it into NaN, making an object array of strings and floats, which no Atlas
    element type holds (array-format's strings have no validity mask). The import keeps them
    with the fill value in place and the attribute, as the file holds them."""
    kept: set[str] = set()
    for name, var in raw.variables.items():
        if var.dtype.kind in "SUO" and ("_FillValue" in var.attrs or "missing_value" in var.attrs):
            kept.add(str(name))
    return kept


def stored_form(raw: Any) -> Any:
    """What the import stores of the undecoded dataset ``raw``: the variables of
    :func:`encoded_names` as the file holds them (numbers, ``units``, ``calendar``,
    ``_FillValue``, ...), the strings of :func:`masked_string_names` with their characters
    joined but not masked (the fill value in place, ``_FillValue``/``missing_value`` kept),
    every other variable CF-decoded as ``xr.open_dataset`` decodes it (unpacked, masked,
    characters joined into strings), coordinates as the file names them. Reading it back
    through the ``"atlas"`` backend then runs xarray's own decoding over the encoded ones, with
    whatever options the reader passes."""
    import xarray as xr

    kept = encoded_names(raw)
    strings = masked_string_names(raw) - kept
    decoded = xr.decode_cf(raw, decode_times=False, decode_timedelta=False)
    if not kept and not strings:
        return decoded
    variables = dict(decoded.variables)
    replacements = {name: raw.variables[name] for name in kept}
    if strings:
        unmasked = xr.decode_cf(
            raw[sorted(strings)], mask_and_scale=False, decode_times=False, decode_timedelta=False
        )
        replacements.update({name: unmasked.variables[name] for name in strings})
    for name, var in replacements.items():
        attrs = dict(var.attrs)
        if "coordinates" not in decoded.variables[name].attrs:
            attrs.pop("coordinates", None)  # consumed by the decoding: coordinates are set
        variables[name] = xr.Variable(var.dims, var.data, attrs, var.encoding)
    ds = xr.Dataset(variables, attrs=decoded.attrs)
    return ds.set_coords([c for c in decoded.coords if c in ds.variables])


def _ignore_interrupts() -> None:
    # Ctrl-C reaches every process of the terminal's group; the importing process stops the
    # workers itself, so that they do not each print a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _Decoder:
    """Decodes the planned files in order: in this process (one job), or in worker processes,
    at most ``IN_FLIGHT_PER_JOB`` per worker ahead of the writer. Leaving the ``with`` block
    on an error or an interrupt terminates the workers."""

    def __init__(self, out: str, engine: str | None, jobs: int) -> None:
        self.out = out
        self.engine = engine
        self.jobs = jobs
        self.executor: Any = None

    def __enter__(self) -> _Decoder:
        if self.jobs > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # Not fork: this process runs the writer's runtime threads. The fork server starts
            # clean, imports the decoder once, and forks each worker from that (spawn where
            # there is no fork server: Windows).
            context: Any
            if "forkserver" in multiprocessing.get_all_start_methods():
                context = multiprocessing.get_context("forkserver")
                context.set_forkserver_preload(["atlas_collections.netcdf", "xarray"])
            else:
                context = multiprocessing.get_context("spawn")
            self.executor = ProcessPoolExecutor(
                max_workers=self.jobs, mp_context=context, initializer=_ignore_interrupts
            )
        return self

    def map(
        self, plan: Sequence[tuple[int, str, str]]
    ) -> Iterator[tuple[tuple[int, str, str], Any]]:
        if self.executor is None:
            for item in plan:
                yield item, _decode(self.out, item[2], item[1], self.engine)
            return
        from concurrent.futures.process import BrokenProcessPool

        pending: deque[tuple[tuple[int, str, str], Any]] = deque()
        upcoming = iter(plan)

        def submit() -> None:
            item = next(upcoming, None)
            if item is not None:
                future = self.executor.submit(_decode, self.out, item[2], item[1], self.engine)
                pending.append((item, future))

        for _ in range(self.jobs * IN_FLIGHT_PER_JOB):
            submit()
        while pending:
            item, future = pending.popleft()
            submit()
            try:
                decoded = future.result()
            except BrokenProcessPool as e:
                raise _refuse(
                    self.out,
                    item[2],
                    f"a worker process died (killed, or crashed in the NetCDF library) while "
                    f"this file or one of the {len(pending)} after it was being read: {e}",
                ) from None
            yield item, decoded

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.executor is None:
            return
        if exc_type is None:
            self.executor.shutdown(wait=True)
            return
        # No public way to stop running workers before Python 3.14's terminate_workers().
        processes = list((getattr(self.executor, "_processes", None) or {}).values())
        self.executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join()


def _check_names(out: str, path: str, ds: Any, group: str = "") -> None:
    for name, var in ds.variables.items():
        if len(set(var.dims)) != len(var.dims):
            # xarray indexes such a variable inconsistently (CF forbids it): what it reads
            # from the file and from a copy need not agree.
            raise _refuse(
                out,
                path,
                f"its dimensions {tuple(var.dims)} repeat a dimension, which CF does not allow "
                "and xarray does not index consistently",
                _in_group(group, str(name)),
            )
        try:
            _atlas.check_name("array", str(name))
        except InvalidNameError as e:
            raise _refuse(
                out, path, f"invalid variable name: {e.reason}", _in_group(group, str(name))
            ) from None
        for key in var.attrs:
            try:
                _atlas.check_name("attribute", str(key))
            except InvalidNameError as e:
                raise _refuse(
                    out,
                    path,
                    f"invalid attribute name {key!r}: {e.reason}",
                    _in_group(group, str(name)),
                ) from None
    for key in ds.attrs:
        try:
            _atlas.check_name("attribute", str(key))
        except InvalidNameError as e:
            where = f" of group {group}" if group else ""
            raise _refuse(
                out, path, f"invalid global attribute name {key!r}{where}: {e.reason}"
            ) from None


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
    """The reason of an UnsupportedDTypeError without its "dataset 'd', array 'v': " prefix,
    keeping the attribute it names, if any ("attribute 'k': ...")."""
    if message.startswith(("dataset '", "array '")) and ": " in message:
        subject, reason = message.split(": ", 1)
        marker = "attribute '"
        if marker in subject:
            key = subject.split(marker, 1)[1].rsplit("'", 1)[0]
            return f"attribute '{key}': {reason}"
        return reason
    return message


#: What ``python -m atlas_collections import`` needs beyond the package itself: the modules of
#: the ``netcdf`` extra.
IMPORT_NEEDS = ("xarray", "netCDF4", "h5netcdf", "tqdm")


def missing_import_modules() -> list[str]:
    """The modules of the ``netcdf`` extra that this environment cannot import."""
    import importlib.util

    return [name for name in IMPORT_NEEDS if importlib.util.find_spec(name) is None]


#: Exit statuses of ``python -m atlas_collections import``, as in rsync's "partial transfer":
#: a script can tell a published collection from none without parsing messages.
EXIT_IMPORTED = 0  # every file imported
EXIT_REFUSED = 1  # nothing published: a refusal (without --skip-bad), every file refused, ...
EXIT_USAGE = 2  # bad arguments, or the netcdf extra is missing
EXIT_SKIPPED = 3  # published, with --skip-bad's skipped files left out (listed on stderr)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT): workers stopped, nothing published
EXIT_TERMINATED = 143  # SIGTERM (128 + 15): the same


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the import is, so that it stops and cleans up as on Ctrl-C."""


def _terminate(signum: int, frame: Any) -> None:
    raise _Terminated()


def _jobs_argument(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return value


def _describe(error: ImportRefusedError) -> str:
    """One line per file (a reader's message may span several)."""
    variable = getattr(error, "variable", None)
    reason = " ".join(str(error.reason).split())
    return f"{error.file}" + (f": variable '{variable}'" if variable else "") + f": {reason}"


def _print_skipped(skipped: Sequence[ImportRefusedError], files: int) -> None:
    import sys

    print(f"skipped {len(skipped)} of {files} files:", file=sys.stderr)
    for error in skipped:
        print(f"  {_describe(error)}", file=sys.stderr)


def main_import(argv: list[str]) -> int:
    """``python -m atlas_collections import OUT FILE.nc ...``; exits 2 (a usage error) when the
    ``netcdf`` extra is not installed, naming what is missing and how to install it. The exit
    statuses are ``EXIT_*`` above."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m atlas_collections import",
        description="Import NetCDF files into a new Atlas collection, one dataset per file.",
        epilog="exit status: 0 every file imported; 1 nothing published (a file refused, "
        "every file skipped, a write failed); 2 usage; 3 published without the files "
        "--skip-bad skipped (listed on stderr); 130 interrupted (Ctrl-C), 143 terminated "
        "(SIGTERM): workers stopped, nothing published",
    )
    parser.add_argument("out", help="the new collection: a directory or s3://bucket/prefix")
    parser.add_argument("files", nargs="+", help="NetCDF files; each file's stem names its dataset")
    parser.add_argument("--engine", choices=["netcdf4", "h5netcdf", "scipy"], default=None)
    parser.add_argument("--codec", choices=["zstd", "lz4", "none"], default="zstd")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--jobs",
        "-j",
        type=_jobs_argument,
        default=None,
        metavar="N",
        help="worker processes reading the files (default: one per CPU; 1: none, all in this "
        "process); the collection is the same byte for byte",
    )
    parser.add_argument(
        "--append",
        action="store_true",
        help="add the files to the growing collection OUT as one new version instead of "
        "writing a new collection; a dataset name OUT already holds is refused",
    )
    parser.add_argument(
        "--replace",
        action="store_true",
        help="with --append: a dataset name OUT already holds replaces the old dataset (hidden "
        "in the same commit; older versions still read it) instead of being refused",
    )
    parser.add_argument(
        "--skip-bad",
        action="store_true",
        help="leave out the files the import refuses, list them at the end and exit 3, "
        "instead of stopping at the first with nothing written",
    )
    args = parser.parse_args(argv)
    if args.replace and not args.append:
        parser.error("--replace needs --append")
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
        return EXIT_USAGE
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        summary = import_netcdf(
            args.out,
            args.files,
            engine=args.engine,
            progress=not args.no_progress,
            codec=args.codec,
            jobs=args.jobs,
            skip_bad=args.skip_bad,
            append=args.append,
            replace=args.replace,
        )
    except KeyboardInterrupt as e:
        terminated = isinstance(e, _Terminated)
        what = "terminated" if terminated else "interrupted"
        print(f"{what}: nothing was written to {args.out}", file=sys.stderr)
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    except AtlasError as e:
        skipped = getattr(e, "skipped", None)
        if skipped:
            _print_skipped(skipped, len(args.files))
        print(f"error: {e}", file=sys.stderr)
        return EXIT_REFUSED
    finally:
        signal.signal(signal.SIGTERM, previous)
    committed = ""
    if summary.version is not None:
        committed = f" as version {summary.version}"
        if summary.replaced:
            committed += f", replacing {summary.replaced}"
    print(
        f"imported {summary.datasets} datasets into {summary.location} "
        f"({summary.container_bytes} bytes){committed}"
    )
    if summary.skipped:
        _print_skipped(summary.skipped, summary.files)
        return EXIT_SKIPPED
    return EXIT_IMPORTED
