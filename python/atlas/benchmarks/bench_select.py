"""``Collection.select`` against the same selection computed in Python from per-dataset reads.

The data: N station datasets (default 2,000), each a year of daily values (365) of three
float32 variables (``t2m``, ``precip``, ``wind``; a few missing days stored as the fill value)
with attributes ``station_id`` (int), ``region`` (str, one of 8), ``elevation`` (float) and
``network`` (str). Written once as one Atlas collection, on local disk and, with ``--s3``, on
the S3 test server.

The selection: ``attrs={"region": "north"}`` and ``where=[("t2m", "max", ">", 300.0)]``.
Measured on each backend, ``--repeats`` times each, on a freshly opened collection every time
(so each figure includes reading the two segments involved, nothing cached):

1. ``select``: wall time of the call alone, and the requests it made (the open's own
   requests are counted too, separately);
2. the baseline doing the same work through the existing API: ``attributes_by_dataset`` +
   ``stats_by_dataset`` and the comparison in Python (the same two segment reads);
3. a second ``select`` on the same open collection (its segments cached).

The two answers are compared. Targets: select <= 20 ms on local disk, and <= 4 requests on S3
including the open.

Usage (the atlas_collections package installed, a release build for meaningful times):

    python python/atlas/benchmarks/bench_select.py --datasets 2000 --local /tmp/bench-select
    bash .ci/s3-server.sh start /tmp/s3 && source /tmp/s3/env
    python python/atlas/benchmarks/bench_select.py --datasets 2000 --local /tmp/bench-select --s3

Prints a Markdown table (and ``--json FILE`` writes the raw figures).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
import uuid
from typing import Any

import numpy as np

import atlas_collections as ac

VARIABLES = ("t2m", "precip", "wind")
DAYS = 365
FILL = np.float32(-9999.0)
REGIONS = ("north", "south", "east", "west", "coast", "alps", "plain", "islands")
ATTRS = {"region": "north"}
WHERE = [("t2m", "max", ">", 300.0)]


def station(i: int) -> tuple[dict[str, Any], dict[str, Any]]:
    rng = np.random.default_rng(i)
    day = np.arange(DAYS)
    seasonal = 10 * np.sin(2 * np.pi * (day - 100) / DAYS)
    t2m = (280 + (i % 25) + seasonal + rng.standard_normal(DAYS) * 3).astype("float32")
    precip = np.maximum(rng.gamma(0.6, 3.0, DAYS), 0).astype("float32")
    wind = np.abs(rng.standard_normal(DAYS) * 4 + 5).astype("float32")
    arrays = {}
    for name, values in (("t2m", t2m), ("precip", precip), ("wind", wind)):
        values[rng.random(DAYS) < 0.01] = FILL  # a few missing days
        arrays[name] = {"data": values, "dims": ("time",), "fill_value": FILL}
    attrs = {
        "station_id": 100_000 + i,
        "region": REGIONS[i % len(REGIONS)],
        "elevation": float(rng.uniform(0, 2500)),
        "network": "synop" if i % 3 else "climat",
    }
    return arrays, attrs


def write(location: str, n: int) -> float:
    start = time.perf_counter()
    with ac.Writer(location) as w:
        for i in range(n):
            arrays, attrs = station(i)
            w.write(f"station_{i:05d}", arrays, attrs=attrs)
    return time.perf_counter() - start


def brute(c: ac.Collection) -> list[str]:
    """The same selection from the existing per-segment reads, compared in Python."""
    regions = c.attributes_by_dataset("region")
    hot = {r.dataset for r in c.stats_by_dataset("t2m") if r.max is not None and r.max > 300.0}
    return [n for n, region in regions.items() if region == "north" and n in hot]


def bench(location: str, repeats: int) -> dict[str, Any]:
    open_ms, select_ms, brute_ms, again_ms = [], [], [], []
    open_requests, select_requests, again_requests = set(), set(), set()
    answer: list[str] = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        c = ac.open(location)
        t1 = time.perf_counter()
        open_requests.add(c.request_count)
        c.reset_requests()
        answer = c.select(attrs=ATTRS, where=WHERE)
        t2 = time.perf_counter()
        select_requests.add(c.request_count)
        c.reset_requests()
        again = c.select(attrs=ATTRS, where=WHERE)
        t3 = time.perf_counter()
        again_requests.add(c.request_count)
        assert again == answer
        open_ms.append((t1 - t0) * 1e3)
        select_ms.append((t2 - t1) * 1e3)
        again_ms.append((t3 - t2) * 1e3)
        fresh = ac.open(location)
        t4 = time.perf_counter()
        want = brute(fresh)
        brute_ms.append((time.perf_counter() - t4) * 1e3)
        assert want == answer, (len(want), len(answer))
    return {
        "selected": len(answer),
        "open_ms": statistics.median(open_ms),
        "select_ms": statistics.median(select_ms),
        "select_ms_max": max(select_ms),
        "brute_ms": statistics.median(brute_ms),
        "again_ms": statistics.median(again_ms),
        "open_requests": sorted(open_requests),
        "select_requests": sorted(select_requests),
        "again_requests": sorted(again_requests),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--local", default="/tmp/bench-select")
    parser.add_argument("--s3", action="store_true", help="also on $ATLAS_S3_TEST_BUCKET")
    parser.add_argument("--json")
    args = parser.parse_args()

    backends = []
    shutil.rmtree(args.local, ignore_errors=True)
    backends.append(("local disk", args.local))
    if args.s3:
        bucket = os.environ["ATLAS_S3_TEST_BUCKET"]
        backends.append(("S3 test server", f"s3://{bucket}/bench-select/{uuid.uuid4().hex}"))
    results = {}
    for label, location in backends:
        written_s = write(location, args.datasets)
        result = bench(location, args.repeats)
        result["write_s"] = written_s
        results[label] = result

    print(
        f"{args.datasets} datasets x {len(VARIABLES)} variables x {DAYS} days; "
        f"select attrs={ATTRS} where={WHERE}; medians of {args.repeats}, fresh open each\n"
    )
    print(
        "| backend | selected | open | `select` (fresh) | baseline (fresh) | select / baseline "
        "| `select` again | requests: open + select, again |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, r in results.items():
        requests = (
            f"{'/'.join(map(str, r['open_requests']))} + "
            f"{'/'.join(map(str, r['select_requests']))}, "
            f"{'/'.join(map(str, r['again_requests']))}"
        )
        print(
            f"| {label} | {r['selected']} | {r['open_ms']:.2f} ms | {r['select_ms']:.2f} ms "
            f"(max {r['select_ms_max']:.2f}) | {r['brute_ms']:.2f} ms "
            f"| {r['select_ms'] / r['brute_ms']:.2f}x time | {r['again_ms']:.3f} ms | {requests} |"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    shutil.rmtree(args.local, ignore_errors=True)


if __name__ == "__main__":
    main()
