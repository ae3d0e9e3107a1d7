"""Atlas vs zarr-python 3 on the same data: many small datasets, local disk and loopback S3.

The data: N datasets (default 2,000) of three 24 x 32 float32 variables, written once as one
Atlas collection and once as one Zarr v3 store with a group per dataset and consolidated
metadata. Measured in one run, on each backend:

1. open + read one variable of one dataset, cold (a new Collection / a new zarr group each
   time, for R different datasets): median wall time and store requests;
2. read one variable of every dataset: throughput (datasets/s) and requests;
3. a variable's min/max over the whole collection: Atlas from the stored statistics, Zarr by
   reading every array (Zarr stores no statistics).

Requests are counted at the store layer on both sides: Atlas's Rust request-counting store
(``Collection.request_count``; every GET, ranged GET, HEAD, PUT, LIST) and, for Zarr, a
``WrapperStore`` counting every ``get``, ``get_partial_values``, ``exists``, ``list*`` and
``set`` call zarr makes (each is one request on S3; on local disk one file operation).

Usage (needs numpy, zarr>=3, obstore for the S3 Zarr store, atlas_collections):

    python python/atlas/benchmarks/bench_vs_zarr.py --datasets 2000 --local /tmp/bench
    bash .ci/s3-server.sh start /tmp/s3 && source /tmp/s3/env
    python python/atlas/benchmarks/bench_vs_zarr.py --datasets 2000 --local /tmp/bench --s3

Prints a Markdown table (and ``--json FILE`` writes the raw figures).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import shutil
import statistics
import time
import uuid
from typing import Any, Callable

import numpy as np
import zarr
from zarr.storage import LocalStore, WrapperStore

import atlas_collections as ac

VARIABLES = ("t2m", "precip", "wind")
SHAPE = (24, 32)


def data_for(i: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(i)
    return {
        v: (rng.standard_normal(SHAPE) * (k + 1) + i * 0.01).astype("float32")
        for k, v in enumerate(VARIABLES)
    }


def names_for(n: int) -> list[str]:
    return [f"run_{i:05d}" for i in range(n)]


class CountingStore(WrapperStore):
    """Counts the store calls zarr makes (each one request on an object store)."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.count = 0

    async def get(self, key, prototype, byte_range=None):
        self.count += 1
        return await self._store.get(key, prototype, byte_range)

    async def get_partial_values(self, prototype, key_ranges):
        key_ranges = list(key_ranges)
        self.count += len(key_ranges)
        return await self._store.get_partial_values(prototype, key_ranges)

    async def exists(self, key):
        self.count += 1
        return await self._store.exists(key)

    async def set(self, key, value):
        self.count += 1
        return await self._store.set(key, value)

    def list(self):
        self.count += 1
        return self._store.list()

    def list_prefix(self, prefix):
        self.count += 1
        return self._store.list_prefix(prefix)

    def list_dir(self, prefix):
        self.count += 1
        return self._store.list_dir(prefix)


# ---- stores -------------------------------------------------------------------------------


def local_zarr(path: str, read_only: bool) -> CountingStore:
    return CountingStore(LocalStore(path, read_only=read_only))


def s3_zarr(prefix_url: str, read_only: bool) -> CountingStore:
    from obstore.store import S3Store
    from zarr.storage import ObjectStore

    bucket, _, prefix = prefix_url[len("s3://") :].partition("/")
    store = S3Store(
        bucket,
        prefix=prefix,
        endpoint=os.environ["AWS_ENDPOINT_URL"],
        access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
        secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
        region=os.environ.get("AWS_REGION", "us-east-1"),
        client_options={"allow_http": True},
    )
    return CountingStore(ObjectStore(store, read_only=read_only))


# ---- writing ------------------------------------------------------------------------------


def write_atlas(location: str, names: list[str]) -> float:
    t = time.perf_counter()
    with ac.Writer(location) as w:
        for i, name in enumerate(names):
            w.write(name, {v: (("y", "x"), a) for v, a in data_for(i).items()})
    return time.perf_counter() - t


def write_zarr(store: Any, names: list[str]) -> float:
    t = time.perf_counter()
    root = zarr.open_group(store, mode="w", zarr_format=3)
    for i, name in enumerate(names):
        g = root.create_group(name)
        for v, a in data_for(i).items():
            arr = g.create_array(
                v, shape=SHAPE, dtype="float32", chunks=SHAPE, dimension_names=("y", "x")
            )
            arr[...] = a
    zarr.consolidate_metadata(store)
    return time.perf_counter() - t


# ---- measurements -------------------------------------------------------------------------


def timed(f: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def zarr_t2m(group: zarr.Group, name: str) -> np.ndarray:
    """Variable ``t2m`` of dataset ``name`` of an open Zarr group, read whole."""
    dataset = group[name]
    assert isinstance(dataset, zarr.Group), name
    array = dataset["t2m"]
    assert isinstance(array, zarr.Array), name
    return np.asarray(array[...])


def atlas_one(atlas_loc: str, name: str) -> tuple[int, np.ndarray]:
    """Opens the collection and reads ``t2m`` of dataset ``name``: (requests, data)."""
    c = ac.open(atlas_loc)
    v = c[name]["t2m"][:]
    return c.request_count, v


def zarr_one(store: CountingStore, name: str) -> np.ndarray:
    """Opens the Zarr store and reads ``t2m`` of group ``name``."""
    g = zarr.open_group(store, mode="r", use_consolidated=True)
    return zarr_t2m(g, name)


def bench_backend(
    label: str,
    atlas_loc: str,
    zarr_store: Callable[[], CountingStore],
    names: list[str],
    repeats: int,
) -> dict[str, Any]:
    rng = random.Random(7)
    picks = [rng.choice(names) for _ in range(repeats)]
    out: dict[str, Any] = {"backend": label, "datasets": len(names)}

    # 1. open + read one variable of one dataset, cold.
    a_times, a_reqs, z_times, z_reqs = [], [], [], []
    for name in picks:
        dt, (reqs, va) = timed(functools.partial(atlas_one, atlas_loc, name))
        a_times.append(dt)
        a_reqs.append(reqs)
        store = zarr_store()
        dt, vz = timed(functools.partial(zarr_one, store, name))
        z_times.append(dt)
        z_reqs.append(store.count)
        np.testing.assert_array_equal(va, vz)
    out["one"] = {
        "atlas_ms": 1e3 * statistics.median(a_times),
        "zarr_ms": 1e3 * statistics.median(z_times),
        "atlas_requests": max(a_reqs),
        "zarr_requests": max(z_reqs),
    }

    # 2. one variable of every dataset.
    c = ac.open(atlas_loc)
    dt_a, got = timed(lambda: c.read_many("t2m"))
    reqs_a = c.request_count
    c2 = ac.open(atlas_loc)
    dt_a_loop, _ = timed(lambda: [c2[n]["t2m"][:] for n in names])
    store = zarr_store()

    def zarr_all():
        g = zarr.open_group(store, mode="r", use_consolidated=True)
        return {n: zarr_t2m(g, n) for n in names}

    dt_z, got_z = timed(zarr_all)
    for n in names[:: max(1, len(names) // 50)]:
        np.testing.assert_array_equal(got[n], got_z[n])
    out["all"] = {
        "atlas_s": dt_a,
        "atlas_loop_s": dt_a_loop,
        "zarr_s": dt_z,
        "atlas_per_s": len(names) / dt_a,
        "atlas_loop_per_s": len(names) / dt_a_loop,
        "zarr_per_s": len(names) / dt_z,
        "atlas_requests": reqs_a,
        "zarr_requests": store.count,
    }

    # 3. min/max of a variable over the whole collection.
    def atlas_stats():
        c = ac.open(atlas_loc)
        s = c.stats("t2m")
        return c.request_count, (s.min, s.max)

    dt_s, (reqs_s, (mn, mx)) = timed(atlas_stats)
    store = zarr_store()

    def zarr_minmax():
        g = zarr.open_group(store, mode="r", use_consolidated=True)
        lo, hi = np.inf, -np.inf
        for n in names:
            a = zarr_t2m(g, n)
            lo, hi = min(lo, a.min()), max(hi, a.max())
        return lo, hi

    dt_zs, (zmn, zmx) = timed(zarr_minmax)
    assert (mn, mx) == (zmn, zmx), ((mn, mx), (zmn, zmx))
    out["minmax"] = {
        "atlas_ms": 1e3 * dt_s,
        "zarr_ms": 1e3 * dt_zs,
        "atlas_requests": reqs_s,
        "zarr_requests": store.count,
    }
    return out


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| backend | measurement | Atlas | Zarr v3 | Atlas / Zarr | requests Atlas / Zarr |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        o, a, m = r["one"], r["all"], r["minmax"]
        lines.append(
            f"| {r['backend']} | open + read 1 variable of 1 dataset (median) "
            f"| {o['atlas_ms']:.2f} ms | {o['zarr_ms']:.2f} ms "
            f"| {o['atlas_ms'] / o['zarr_ms']:.2f}x time "
            f"| {o['atlas_requests']} / {o['zarr_requests']} |"
        )
        lines.append(
            f"| {r['backend']} | read 1 variable of all {r['datasets']} datasets (`read_many`) "
            f"| {a['atlas_per_s']:,.0f} /s | {a['zarr_per_s']:,.0f} /s "
            f"| {a['atlas_per_s'] / a['zarr_per_s']:.1f}x throughput "
            f"| {a['atlas_requests']} / {a['zarr_requests']} |"
        )
        lines.append(
            f"| {r['backend']} | same, a Python loop of `c[name][var][:]` "
            f"| {a['atlas_loop_per_s']:,.0f} /s | {a['zarr_per_s']:,.0f} /s "
            f"| {a['atlas_loop_per_s'] / a['zarr_per_s']:.1f}x throughput | |"
        )
        lines.append(
            f"| {r['backend']} | min/max of 1 variable over the collection "
            f"| {m['atlas_ms']:.1f} ms (stored stats) | {m['zarr_ms']:.1f} ms (computed) "
            f"| {m['atlas_ms'] / m['zarr_ms']:.3f}x time "
            f"| {m['atlas_requests']} / {m['zarr_requests']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=15, help="cold open+read samples")
    parser.add_argument(
        "--local", default="/tmp/atlas-vs-zarr", help="directory for the local stores (wiped)"
    )
    parser.add_argument(
        "--s3", action="store_true", help="also on s3://$ATLAS_S3_TEST_BUCKET (AWS_* env)"
    )
    parser.add_argument("--json", help="write the raw figures here")
    args = parser.parse_args()
    names = names_for(args.datasets)
    results = []

    shutil.rmtree(args.local, ignore_errors=True)
    os.makedirs(args.local)
    atlas_loc, zarr_loc = os.path.join(args.local, "atlas"), os.path.join(args.local, "zarr")
    wa = write_atlas(atlas_loc, names)
    wz = write_zarr(local_zarr(zarr_loc, read_only=False), names)
    print(f"local: wrote Atlas in {wa:.1f} s, Zarr in {wz:.1f} s", flush=True)
    r = bench_backend(
        "local disk", atlas_loc, lambda: local_zarr(zarr_loc, read_only=True), names, args.repeats
    )
    r["write_s"] = {"atlas": wa, "zarr": wz}
    results.append(r)

    if args.s3:
        bucket = os.environ["ATLAS_S3_TEST_BUCKET"]
        run = uuid.uuid4().hex[:8]
        atlas_url = f"s3://{bucket}/bench-{run}/atlas"
        zarr_url = f"s3://{bucket}/bench-{run}/zarr"
        wa = write_atlas(atlas_url, names)
        wz = write_zarr(s3_zarr(zarr_url, read_only=False), names)
        print(f"s3: wrote Atlas in {wa:.1f} s, Zarr in {wz:.1f} s", flush=True)
        r = bench_backend(
            "loopback S3 (SeaweedFS)",
            atlas_url,
            lambda: s3_zarr(zarr_url, read_only=True),
            names,
            args.repeats,
        )
        r["write_s"] = {"atlas": wa, "zarr": wz}
        results.append(r)

    print(table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
