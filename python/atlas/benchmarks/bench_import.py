"""NetCDF import at archive scale: ``python -m atlas_collections import --jobs 2`` vs ``--jobs 1``.

The data: N station files (default 2,000) on local disk, each a year of daily values of three
float32 variables (``tas``, ``pr``, ``sfcWind``) on a CF ``time`` axis, with scalar (0-d)
``lat``, ``lon`` and ``height`` coordinates and a 0-d ``station_name``, written by xarray
(netCDF4, NetCDF-4 format). Each round times the import command, as a user runs it, once with
``--jobs 1`` (in-process, the serial baseline) and once with each other ``--jobs`` value, in
alternating order, into fresh directories, and checks that every ``data.atlas`` is byte for
byte the serial one. The ratio is the serial wall time over the parallel one, per round. Also
reported: the CPU time of the importing process (where the writer runs) and of all the
processes of the import (Linux: the benchmark adopts the fork server to count its workers).

Usage (needs atlas_collections with the netcdf extra; a release wheel for figures):

    python python/atlas/benchmarks/bench_import.py --files 2000 --dir /tmp/bench-import --rounds 3

``--profile FILE`` also runs the parallel import once under cProfile, in the importing process
(the workers are not profiled), and writes the statistics to FILE, to see where the writer's
process spends its time. Prints a Markdown table (``--json FILE`` writes the raw figures).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

VARIABLES = ("tas", "pr", "sfcWind")
DAYS = 365


def station_dataset(i: int) -> Any:
    """Station ``i``: a year of daily values of three variables, scalar coordinates."""
    import pandas as pd
    import xarray as xr

    rng = np.random.default_rng(i)
    time_axis = pd.date_range("2023-01-01", periods=DAYS, freq="D")
    season = np.cos(np.arange(DAYS) * 2 * np.pi / DAYS).astype("float32")
    return xr.Dataset(
        {
            "tas": (
                ("time",),
                (283 - 10 * season + rng.standard_normal(DAYS)).astype("float32"),
                {"units": "K", "standard_name": "air_temperature"},
            ),
            "pr": (
                ("time",),
                rng.gamma(0.5, 2.0, DAYS).astype("float32"),
                {"units": "mm day-1", "standard_name": "precipitation_amount"},
            ),
            "sfcWind": (
                ("time",),
                rng.weibull(2.0, DAYS).astype("float32") * 4,
                {"units": "m s-1", "standard_name": "wind_speed"},
            ),
        },
        coords={
            "time": time_axis,
            "lat": ((), 40.0 + (i % 100) * 0.1, {"units": "degrees_north"}),
            "lon": ((), 5.0 + (i // 100) * 0.1, {"units": "degrees_east"}),
            "height": ((), float(rng.integers(0, 2000)), {"units": "m"}),
            "station_name": ((), f"station {i}"),
        },
        attrs={"featureType": "timeSeries", "Conventions": "CF-1.8", "station_id": i},
    )


def write_station_files(directory: str | os.PathLike[str], n: int) -> list[Path]:
    """Writes ``station_00000.nc`` ... (``n`` files) into ``directory``; returns their paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        path = directory / f"station_{i:05d}.nc"
        if not path.exists():
            station_dataset(i).to_netcdf(path, engine="netcdf4")
        paths.append(path)
    return paths


def become_subreaper() -> None:
    """Makes this process adopt its orphaned descendants (Linux ``PR_SET_CHILD_SUBREAPER``):
    the import's fork server outlives the command by a moment, and only once this process has
    waited for it does ``RUSAGE_CHILDREN`` hold the workers' CPU time (the fork server waits
    for its workers)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def run_import(out: Path, files: list[Path], jobs: int) -> dict[str, float]:
    """One ``python -m atlas_collections import`` run: its wall time, the CPU time of the
    command's own process (the writer's side) and of every process it started (workers and
    fork server included)."""
    shutil.rmtree(out, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    log = out.with_suffix(".log")
    start = time.perf_counter()
    with open(log, "w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "atlas_collections", "import", str(out), *map(str, files)]
            + ["--jobs", str(jobs), "--no-progress"],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
    while True:  # the adopted fork server, if it has not ended yet
        try:
            os.wait()
        except ChildProcessError:
            break
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode != 0:
        raise SystemExit(f"--jobs {jobs} failed ({process.returncode}): {log.read_text()}")
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "parent_cpu_s": usage.ru_utime + usage.ru_stime, "cpu_s": total}


def profile_parent(out: Path, files: list[Path], jobs: int, stats_file: str) -> None:
    """The parallel import under cProfile, in this process: where the writer's side spends its
    time (the workers' decoding is not in the profile)."""
    import cProfile
    import pstats

    import atlas_collections as ac

    shutil.rmtree(out, ignore_errors=True)
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    ac.import_netcdf(out, files, jobs=jobs, progress=False)
    profiler.disable()
    wall = time.perf_counter() - start
    profiler.dump_stats(stats_file)
    stats = pstats.Stats(stats_file)
    print(f"\nprofile of the importing process, --jobs {jobs}: {wall:.2f} s wall")
    stats.sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--dir", default="/tmp/bench-import", help="where the files are made")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, nargs="+", default=[2], help="against --jobs 1")
    parser.add_argument("--json", help="write the raw figures here")
    parser.add_argument("--profile", help="also profile the importing process; stats here")
    args = parser.parse_args()

    become_subreaper()
    root = Path(args.dir)
    start = time.perf_counter()
    files = write_station_files(root / "stations", args.files)
    size = sum(p.stat().st_size for p in files)
    print(
        f"{len(files)} station files, {size / 1e6:.1f} MB, ready in "
        f"{time.perf_counter() - start:.1f} s; {os.cpu_count()} CPUs",
        flush=True,
    )

    rounds = []
    for r in range(args.rounds):
        order = [1, *args.jobs] if r % 2 == 0 else [*args.jobs, 1]
        figures: dict[int, dict[str, float]] = {}
        for jobs in order:
            figures[jobs] = run_import(root / f"out-j{jobs}", files, jobs)
        serial = (root / "out-j1" / "data.atlas").read_bytes()
        for jobs in args.jobs:
            if (root / f"out-j{jobs}" / "data.atlas").read_bytes() != serial:
                raise SystemExit(f"--jobs {jobs} wrote other bytes than --jobs 1")
        rounds.append(figures)
        shown = ", ".join(
            f"--jobs {j}: {f['wall_s']:.2f} s wall, {f['parent_cpu_s']:.2f} s CPU in the "
            f"command, {f['cpu_s']:.2f} s in all"
            for j, f in sorted(figures.items())
        )
        print(f"round {r + 1}: {shown}; load {os.getloadavg()[0]:.1f}", flush=True)

    print()
    print(
        "| round | --jobs | wall (s) | CPU, importing process (s) | CPU, all processes (s) "
        "| files/s | speed-up vs --jobs 1 |"
    )
    print("|---|---|---|---|---|---|---|")
    for r, figures in enumerate(rounds, 1):
        base = figures[1]["wall_s"]
        for jobs, f in sorted(figures.items()):
            print(
                f"| {r} | {jobs} | {f['wall_s']:.2f} | {f['parent_cpu_s']:.2f} | "
                f"{f['cpu_s']:.2f} | {len(files) / f['wall_s']:.0f} | "
                f"{base / f['wall_s']:.2f}x |"
            )
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"files": len(files), "bytes": size, "rounds": rounds}, out, indent=2)
    if args.profile:
        profile_parent(root / "out-profile", files, max(args.jobs), args.profile)


if __name__ == "__main__":
    main()
