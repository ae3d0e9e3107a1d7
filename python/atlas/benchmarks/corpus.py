"""Real NetCDF files in, a verdict per file out: does each import, and does each dataset read
back through ``engine="atlas"`` identical to what xarray reads from the file?

Every file is imported on its own into a fresh collection (``atlas_collections.import_netcdf``)
and every dataset the import wrote (one per group) is compared with xarray reading the file
(``xr.open_groups``: each group as ``xr.open_dataset(file, group=...)`` gives it) with
``xr.testing.assert_identical``, under each of the decoding options below, plus dtypes. A file
xarray itself cannot open (with the same engine and options) is counted apart: there is
nothing to compare with. A refusal is the importer's ``ImportRefusedError`` reason. A file
that differs is read again: if xarray reads it differently the second time (a variable never
written in a file with fill off, ``_NoFill``, has no defined values: the library returns
whatever memory it had), its verdict is "undefined in the file", since no copy can match
reads that do not match each other.

With several directories, each is a source: the run ends with a Markdown table of the verdicts
per source (refusals by kind), as ``docs/python-atlas.md`` shows it.

The corpus is files from public projects' test suites, gathered by hand; see
``docs/python-atlas.md`` ("Real files") for the list, its sources and licences, and the
latest results. Not a test: the files are not in this repository.

Usage::

    python python/atlas/benchmarks/corpus.py DIR [DIR ...] [--json OUT] [--work /tmp/corpus-work]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

import atlas_collections as ac

SUFFIXES = (".nc", ".nc4", ".cdf", ".h5", ".hdf5", ".netcdf")

#: The decoding options each dataset is compared under.
OPTIONS: list[tuple[str, dict[str, Any]]] = [
    ("default", {}),
    ("use_cftime", {"decode_times": xr.coders.CFDatetimeCoder(use_cftime=True)}),
    ("decode_times=False", {"decode_times": False}),
    ("decode_timedelta=True", {"decode_timedelta": True}),
]


def files_below(dirs: list[str]) -> list[tuple[str, Path]]:
    """``(source, file)`` for every NetCDF/HDF5 file below the directories, the source being
    the directory (or file) argument it was found under."""
    out = []
    for d in dirs:
        root = Path(d)
        if root.is_file():
            out.append((d, root))
            continue
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.suffix.lower() in SUFFIXES:
                out.append((d, path))
    return out


def refusal_kind(detail: str) -> str:
    """A refusal's reason without the file's particulars (names, values), for the counts."""
    reason = detail.split(": ", 1)[1] if detail.startswith("variable ") else detail
    if "a value of type void" in reason:
        return "compound attribute"
    for prefix, kind in [
        ("cannot be read as NetCDF", "unreadable"),
        ("xarray cannot decode it", "xarray cannot decode"),
        ("its stem", "file name"),
        ("invalid variable name", "variable name"),
        ("invalid attribute name", "attribute name"),
        ("invalid global attribute name", "attribute name"),
        ("attribute '", "attribute value"),
        ("its dimensions", "repeated dimension"),
        ("a string array with missing entries", "string with missing entries"),
    ]:
        if reason.startswith(prefix):
            return kind
    for part, kind in [
        ("variable-length (vlen) elements", "vlen type"),
        ("structured/void arrays", "compound type"),
        ("object array holding", "mixed objects"),
    ]:
        if part in reason:
            return kind
    return "dtype"


def table(results: list[dict[str, Any]]) -> str:
    """The results per source as a Markdown table (as docs/python-atlas.md shows them)."""
    rows = []
    sources = list(dict.fromkeys(r["source"] for r in results))
    columns = [
        "identical",
        "differs",
        "refused",
        "crashed",
        "xarray cannot read",
        "undefined in the file",
    ]
    rows.append("| source | files | " + " | ".join(columns) + " |")
    rows.append("|---" * (len(columns) + 2) + "|")
    for source in sources + ["total"]:
        mine = results if source == "total" else [r for r in results if r["source"] == source]
        counts = Counter(r["verdict"] for r in mine)
        kinds = Counter(refusal_kind(r["detail"]) for r in mine if r["verdict"] == "refused")
        cells = []
        for column in columns:
            n = counts.get(column, 0)
            if column == "refused" and n:
                cells.append(f"{n} (" + ", ".join(f"{k} {v}" for k, v in kinds.most_common()) + ")")
            else:
                cells.append(str(n))
        name = "**total**" if source == "total" else Path(source).name
        rows.append(f"| {name} | {len(mine)} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def source_groups(path: Path, options: dict[str, Any]) -> dict[str, xr.Dataset]:
    try:
        groups = xr.open_groups(path, **options)
    except NotImplementedError:
        groups = {"/": xr.open_dataset(path, **options)}
    try:
        return {k: v.load() for k, v in groups.items()}
    finally:
        for g in groups.values():
            g.close()


def read_source(path: Path) -> dict[str, dict[str, xr.Dataset] | Exception]:
    """What xarray reads from the file under each of :data:`OPTIONS` (or its error)."""
    out: dict[str, dict[str, xr.Dataset] | Exception] = {}
    for label, options in OPTIONS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out[label] = source_groups(path, options)
            except Exception as e:  # noqa: BLE001 - xarray's own failure
                out[label] = e
    return out


def compare(
    source: dict[str, dict[str, xr.Dataset] | Exception],
    out: Path,
    stem: str,
    skip: frozenset[str] = frozenset(),
) -> tuple[str, str]:
    """``(verdict, detail)`` for an imported file: every group xarray reads is a dataset that
    reads back identical under the same options, and where xarray fails, so does the
    collection. The variables of ``skip`` (``group/name``) are left out on both sides."""
    c = ac.open(out)
    names = set(c.names)
    for label, options in OPTIONS:
        groups = source[label]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if isinstance(groups, Exception):
                failed = False
                for name in names:
                    try:
                        xr.open_dataset(out, engine="atlas", group=name, **options).load()
                    except Exception:  # noqa: BLE001
                        failed = True
                if not failed:
                    return "differs", f"{label}: xarray fails ({groups}), atlas does not"
                continue
            for group, want in groups.items():
                name = stem if group == "/" else stem + group
                if name not in names:
                    if want.variables or want.attrs:
                        return "differs", f"{label}: group {group} has no dataset {name!r}"
                    continue
                try:
                    got = xr.open_dataset(out, engine="atlas", group=name, **options).load()
                except Exception as e:  # noqa: BLE001
                    return "differs", f"{label}: {name}: atlas open failed: {type(e).__name__}: {e}"
                left_out = [v for v in want.variables if f"{group.rstrip('/')}/{v}" in skip]
                if left_out:
                    got, want = got.drop_vars(left_out), want.drop_vars(left_out)
                try:
                    xr.testing.assert_identical(got, want)
                    for k, v in want.variables.items():
                        if got[k].dtype != v.dtype and not (
                            v.dtype.kind in "OUS" and got[k].dtype.kind in "OUS"
                        ):
                            raise AssertionError(f"dtype of {k}: {got[k].dtype} != {v.dtype}")
                except AssertionError as e:
                    return "differs", f"{label}: {name}: {' '.join(str(e).split())[:400]}"
                except Exception as e:  # noqa: BLE001 - xarray failed to show the difference
                    return "differs", f"{label}: {name}: {type(e).__name__} comparing: {e}"
    return "identical", ""


def unstable_variables(
    first: dict[str, dict[str, xr.Dataset] | Exception],
    second: dict[str, dict[str, xr.Dataset] | Exception],
) -> list[str]:
    """The variables xarray read differently from the same file twice (by default): data the
    file leaves undefined, such as a variable never written in a file with fill off
    (``_NoFill``), whose reads return whatever memory the library had."""
    a, b = first["default"], second["default"]
    if isinstance(a, Exception) or isinstance(b, Exception):
        return []
    out = []
    for group, ds in a.items():
        for name, var in ds.variables.items():
            other = b.get(group, xr.Dataset()).variables.get(name)
            if other is None or not var.equals(other):
                out.append(f"{group.rstrip('/')}/{name}")
    return out


def check(path: Path, work: Path) -> dict[str, Any]:
    stem = path.stem
    out = work / "coll"
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    source = read_source(path)
    if all(isinstance(v, Exception) for v in source.values()):
        return {
            "file": str(path),
            "verdict": "xarray cannot read",
            "detail": f"{source['default']}"[:300],
        }
    failing = [label for label, v in source.items() if isinstance(v, Exception)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            summary = ac.import_netcdf(out, [path], progress=False)
    except ac.ImportRefusedError as e:
        where = f"variable {e.variable}: " if getattr(e, "variable", None) else ""
        return {
            "file": str(path),
            "verdict": "refused",
            "detail": where + " ".join(e.reason.split()),
        }
    except Exception as e:  # noqa: BLE001 - anything else is a bug
        return {"file": str(path), "verdict": "crashed", "detail": f"{type(e).__name__}: {e}"}
    verdict, detail = compare(source, out, stem)
    if verdict == "differs":
        unstable = unstable_variables(source, read_source(path))
        if unstable:
            # Every other variable must still be identical.
            verdict, rest = compare(source, out, stem, frozenset(unstable))
            if verdict == "identical":
                verdict = "undefined in the file"
                detail = (
                    f"xarray reads {', '.join(unstable)} differently each time (never written, "
                    f"with fill off: its reads are undefined); every other variable is identical"
                )
            else:
                detail = f"{rest} (and {', '.join(unstable)} are undefined in the file)"
    if verdict == "identical" and failing:
        detail = f"xarray (and so the collection) fails with {', '.join(failing)}"
    return {
        "file": str(path),
        "verdict": verdict,
        "detail": detail,
        "datasets": summary.datasets,
        "seconds": round(time.perf_counter() - started, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+")
    parser.add_argument("--json", help="write every file's verdict here")
    parser.add_argument("--work", help="scratch directory (default: a temporary one)")
    args = parser.parse_args()
    files = files_below(args.dirs)
    work = Path(args.work or tempfile.mkdtemp(prefix="atlas-corpus-"))
    work.mkdir(parents=True, exist_ok=True)
    results = []
    for i, (source, path) in enumerate(files):
        result = {"source": source, **check(path, work)}
        results.append(result)
        print(
            f"[{i + 1}/{len(files)}] {result['verdict']}: {path} {result.get('detail', '')}"[:600]
        )
        sys.stdout.flush()
    counts = Counter(r["verdict"] for r in results)
    print()
    for verdict, n in counts.most_common():
        print(f"{verdict}: {n}")
    print()
    print(table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    shutil.rmtree(work / "coll", ignore_errors=True)
    return 0 if counts.get("crashed", 0) == 0 else 1


if __name__ == "__main__":
    np.seterr(all="ignore")
    os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
    sys.exit(main())
