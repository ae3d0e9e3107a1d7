"""One variable of every dataset of a 2,000-station collection, read three ways with xarray and
dask (``chunks={}``), in one run:

1. ``engine="atlas"``: ``xr.open_dataset(collection, engine="atlas", group=name, chunks={})``;
2. the Zarr view: ``xr.open_zarr(AtlasStore(location), group=name, consolidated=False,
   chunks={})`` over the same collection;
3. zarr-python: ``xr.open_zarr(path, group=name, consolidated=False, chunks={})`` over a Zarr
   v3 store of 2,000 groups holding the same datasets (written by ``Dataset.to_zarr``), on the
   same disk;
4. the same Zarr store copied key by key into a ``MemoryStore``: what zarr-python and xarray
   cost with no storage at all, the floor under any store, the view included.

Each arm opens the 2,000 datasets lazily, then computes ``tas`` of all of them with one
``dask.compute``: throughput is datasets per second, open included. Every arm's values are
compared with the collection's. Targets: the view at >= 0.8x the throughput of
``engine="atlas"`` and >= 10x that of zarr-python, in each round.

Usage::

    python python/atlas/benchmarks/bench_zarr_view.py --datasets 2000 --dir /tmp/bzv --rounds 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import dask
import numpy as np
import pandas as pd
import xarray as xr

import atlas_collections as ac
from atlas_collections.zarr import AtlasStore

DAYS = 365


def station(i: int) -> xr.Dataset:
    rng = np.random.default_rng(i)
    return xr.Dataset(
        {
            "tas": (("time",), rng.normal(280, 5, DAYS).astype("f4"), {"units": "K"}),
            "pr": (("time",), rng.gamma(1.0, 2.0, DAYS).astype("f4"), {"units": "mm/day"}),
        },
        coords={
            "time": ("time", pd.date_range("2023-01-01", periods=DAYS)),
            "lat": ((), 35.0 + (i % 200) * 0.1, {"units": "degrees_north"}),
            "station_name": ((), f"STATION-{i:05d}"),
        },
        attrs={"featureType": "timeSeries", "station": i},
    )


def build(root: Path, n: int) -> tuple[Path, Path, list[str]]:
    atlas, zarr_path = root / "atlas", root / "zarr"
    names = [f"station_{i:05d}" for i in range(n)]
    done = root / f"done-{n}"
    if not done.exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        started = time.perf_counter()
        ac.write_xarray(atlas, {name: station(i) for i, name in enumerate(names)})
        print(f"wrote the collection in {time.perf_counter() - started:.1f} s", flush=True)
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i, name in enumerate(names):
                station(i).to_zarr(zarr_path, group=name, zarr_format=3, consolidated=False)
        print(f"wrote the Zarr store in {time.perf_counter() - started:.1f} s", flush=True)
        done.touch()
    return atlas, zarr_path, names


def read_all(names: list[str], open_one: Callable[[str], xr.Dataset]) -> tuple[float, list[Any]]:
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lazy = [open_one(name)["tas"].data for name in names]
        values = dask.compute(*lazy)
    return time.perf_counter() - started, list(values)


def in_memory(zarr_path: Path) -> Any:
    """The Zarr store's every key in a ``MemoryStore``: zarr-python with no storage cost at
    all, the floor under any store."""
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync
    from zarr.storage import LocalStore, MemoryStore

    local = LocalStore(zarr_path, read_only=True)

    async def copy() -> dict[str, Any]:
        proto = default_buffer_prototype()
        return {key: await local.get(key, proto) async for key in local.list()}

    return MemoryStore(store_dict=sync(copy()), read_only=True)


def arms_for(atlas: Path, zarr_path: Path, memory: Any) -> dict[str, Callable[[str], xr.Dataset]]:
    """A fresh open of each side: the collection, the view over it, the Zarr store on disk,
    and the same in memory."""
    collection: Any = ac.open(atlas)
    store = AtlasStore(atlas)
    return {
        "atlas": lambda n: xr.open_dataset(collection, engine="atlas", group=n, chunks={}),
        "view": lambda n: xr.open_zarr(store, group=n, consolidated=False, chunks={}),
        "zarr": lambda n: xr.open_zarr(zarr_path, group=n, consolidated=False, chunks={}),
        "memory": lambda n: xr.open_zarr(memory, group=n, consolidated=False, chunks={}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--dir", default="/tmp/bench-zarr-view")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", help="write the raw figures here")
    args = parser.parse_args()
    atlas, zarr_path, names = build(Path(args.dir), args.datasets)
    memory = in_memory(zarr_path)
    rounds = []
    for r in range(args.rounds):
        arms = arms_for(atlas, zarr_path, memory)
        order = list(arms) if r % 2 == 0 else list(reversed(arms))
        seconds, results = {}, {}
        for arm in order:
            seconds[arm], results[arm] = read_all(names, arms[arm])
        for arm in arms:
            for i in range(0, len(names), max(1, len(names) // 50)):
                np.testing.assert_array_equal(results[arm][i], results["atlas"][i])
        figures = {f"{arm}_per_s": len(names) / s for arm, s in seconds.items()}
        figures["view_vs_atlas"] = figures["view_per_s"] / figures["atlas_per_s"]
        figures["view_vs_zarr"] = figures["view_per_s"] / figures["zarr_per_s"]
        figures["memory_vs_zarr"] = figures["memory_per_s"] / figures["zarr_per_s"]
        rounds.append(figures)
        print(
            f"round {r + 1}: atlas {figures['atlas_per_s']:.0f}/s, "
            f"view {figures['view_per_s']:.0f}/s, zarr {figures['zarr_per_s']:.0f}/s; "
            f"memory {figures['memory_per_s']:.0f}/s; view/atlas {figures['view_vs_atlas']:.2f}x, "
            f"view/zarr {figures['view_vs_zarr']:.2f}x",
            flush=True,
        )
    print(
        "| round | engine=atlas | AtlasStore | zarr-python (disk) | zarr-python (memory) "
        "| view / atlas | view / zarr | memory / zarr |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for i, f in enumerate(rounds):
        print(
            f"| {i + 1} | {f['atlas_per_s']:,.0f} /s | {f['view_per_s']:,.0f} /s | "
            f"{f['zarr_per_s']:,.0f} /s | {f['memory_per_s']:,.0f} /s | "
            f"{f['view_vs_atlas']:.2f}x | {f['view_vs_zarr']:.2f}x | {f['memory_vs_zarr']:.2f}x |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rounds, indent=1))


if __name__ == "__main__":
    main()
