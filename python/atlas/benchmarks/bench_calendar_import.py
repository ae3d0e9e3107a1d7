"""Import of station files in a model calendar vs the same files in the standard calendar.

The data: N station files (default 2,000; ``bench_import.station_dataset``: a year of daily
values of three float32 variables, 0-d coordinates), written twice by xarray: once with
``time`` encoded in the ``standard`` calendar, once in ``noleap`` (the same numbers, "days since
2023-01-01"; 2023 has no 29 February). Each round imports both sets (``import_netcdf``, one
process, ``jobs=1``) into fresh directories, in alternating order, and checks the two
collections read back to their files. With ``--blocks B`` each set is imported in B slices,
the calendars taking turns slice by slice, and each calendar's time is the sum over its
slices, so that a change in the machine's load falls on both alike. Wall and CPU time (one
process: its CPU time is the work, what a loaded machine does to the wall clock aside) are
both reported. Each import is preceded by a read of its files (the first import of a round
otherwise paid for the page cache the other set left). Target: the ``noleap`` import takes at
most 1.1x the ``standard`` one, in each round.

Usage::

    python python/atlas/benchmarks/bench_calendar_import.py --files 2000 --dir /tmp/bc \\
        --rounds 3 --blocks 10
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import xarray as xr

import atlas_collections as ac

sys.path.insert(0, str(Path(__file__).parent))
from bench_import import station_dataset  # noqa: E402


def write_files(directory: Path, n: int, calendar: str) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    files = []
    for i in range(n):
        path = directory / f"station_{i:05d}.nc"
        if not path.exists():
            ds = station_dataset(i)
            encoding = {"time": {"units": "days since 2023-01-01", "calendar": calendar}}
            ds.to_netcdf(path, encoding=encoding)
        files.append(path)
    return files


def warm(files: list[Path]) -> None:
    """Reads every file once, so that neither side pays for the page cache the other left."""
    for path in files:
        path.read_bytes()


def timed_import(out: Path, files: list[Path]) -> tuple[float, float]:
    """``(wall seconds, CPU seconds)`` of the import (one process: its CPU time is the work,
    whatever else the machine runs)."""
    shutil.rmtree(out, ignore_errors=True)
    warm(files)
    started, cpu = time.perf_counter(), time.process_time()
    ac.import_netcdf(out, files, progress=False, jobs=1)
    return time.perf_counter() - started, time.process_time() - cpu


def check(out: Path, files: list[Path], calendar: str) -> None:
    for path in files[:: max(1, len(files) // 20)]:
        with xr.open_dataset(path) as want:
            got = xr.open_dataset(out, engine="atlas", group=path.stem)
            xr.testing.assert_identical(got.load(), want.load())
            if calendar == "noleap":
                assert got["time"].values[0].calendar == "noleap"


def interleaved(
    root: Path, sets: dict[str, list[Path]], blocks: int, first: str
) -> dict[str, tuple[float, float]]:
    """Both sets imported in ``blocks`` slices, the calendars taking turns slice by slice
    (``first`` leading, then alternating), each slice into a fresh collection: a change in
    the machine's load then falls on both calendars alike. Sums of ``(wall, CPU)`` per set."""
    totals = {cal: (0.0, 0.0) for cal in sets}
    n = len(sets["standard"])
    bounds = [n * b // blocks for b in range(blocks + 1)]
    order = [first, "noleap" if first == "standard" else "standard"]
    for b in range(blocks):
        for cal in order if b % 2 == 0 else order[::-1]:
            files = sets[cal][bounds[b] : bounds[b + 1]]
            wall, cpu = timed_import(root / f"out-{cal}", files)
            check(root / f"out-{cal}", files, cal)
            totals[cal] = (totals[cal][0] + wall, totals[cal][1] + cpu)
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--dir", default="/tmp/bench-calendar-import")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--blocks",
        type=int,
        default=1,
        help="import each set in this many slices, the calendars taking turns (default 1: "
        "each set whole)",
    )
    parser.add_argument("--json", help="write the raw figures here")
    args = parser.parse_args()
    root = Path(args.dir)
    sets = {cal: write_files(root / cal, args.files, cal) for cal in ("standard", "noleap")}
    rounds: list[dict[str, Any]] = []
    for r in range(args.rounds):
        order = ["standard", "noleap"] if r % 2 == 0 else ["noleap", "standard"]
        measured = interleaved(root, sets, args.blocks, order[0])
        wall = {cal: m[0] for cal, m in measured.items()}
        cpu = {cal: m[1] for cal, m in measured.items()}
        rounds.append(
            {
                "order": order,
                "blocks": args.blocks,
                "standard_s": wall["standard"],
                "noleap_s": wall["noleap"],
                "ratio": wall["noleap"] / wall["standard"],
                "standard_cpu_s": cpu["standard"],
                "noleap_cpu_s": cpu["noleap"],
                "cpu_ratio": cpu["noleap"] / cpu["standard"],
            }
        )
        print(f"round {r + 1}: {rounds[-1]}", flush=True)
    print("| round | standard | noleap | wall ratio | CPU standard | CPU noleap | CPU ratio |")
    print("|---|---|---|---|---|---|---|")
    for i, row in enumerate(rounds):
        print(
            f"| {i + 1} ({row['order'][0]} first) | {row['standard_s']:.2f} s | "
            f"{row['noleap_s']:.2f} s | {row['ratio']:.3f}x | {row['standard_cpu_s']:.2f} s | "
            f"{row['noleap_cpu_s']:.2f} s | {row['cpu_ratio']:.3f}x |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rounds, indent=1))


if __name__ == "__main__":
    main()
