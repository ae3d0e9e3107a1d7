"""DatasetRT from Python: what the bound on open shard files costs random ``cache[i]`` reads.

    python python/datasetrt/benchmarks/bench_bounded.py [--shards 5000] [--repeat 5]

Writes a cache of ``--shards`` shards (4 samples of 1,000 B each) and times one pass of
``cache[i]`` over every sample in random order (reading each payload view's first byte), with:

- ``all_open``: a bound above the shard count (every shard file and mapping kept open),
- ``default``: the process's default bound (``datasetrt.max_open_shards()`` at start: half the
  open-file soft limit and a quarter of ``vm.max_map_count``), target >= 0.9x ``all_open``,
- ``quarter``: a bound of a quarter of the shards (random reads mostly remap their shard).

The arms take turns within each repeat, each timing its second pass (the first brings it to
its own steady state); each figure is the best of ``--repeat`` timed passes, and
the ratios are throughputs against ``all_open`` (higher is better). Use a release build of the
package (``maturin build --release``); the all-open arm needs ``ulimit -n`` above the shard
count.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import tempfile
import time

import datasetrt


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--shards", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    default = datasetrt.max_open_shards()
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    print(f"open-file soft limit {soft}, default bound {default}, {args.shards} shards")
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as root:
        path = os.path.join(root, "cache")
        with datasetrt.CacheWriter(
            path, source="bench", schema={"n": "int64"}, max_shard_bytes=4 * 1100 - 100
        ) as w:
            for i in range(4 * args.shards):
                w.add(bytes([i % 251]) * 1000, n=i)
        cache = datasetrt.Cache(path)
        assert len(cache.manifest["shards"]) == args.shards, len(cache.manifest["shards"])
        order = list(range(len(cache)))
        random.Random(args.seed).shuffle(order)
        arms = {"all_open": 1 << 30, "default": default, "quarter": args.shards // 4}
        best = {name: float("inf") for name in arms}
        for _ in range(args.repeat):
            for name, bound in arms.items():
                datasetrt.set_max_open_shards(bound)
                # One untimed pass first: the arm starts from its own steady state, not from
                # what the previous arm left open.
                for i in order:
                    cache[i].payload[0]
                t0 = time.perf_counter()
                for i in order:
                    cache[i].payload[0]
                best[name] = min(best[name], time.perf_counter() - t0)
        datasetrt.set_max_open_shards(default)
    n = len(order)
    for name, seconds in best.items():
        print(
            f"{name:>9}: {n / seconds / 1e3:8.1f} k samples/s  "
            f"{best['all_open'] / seconds:5.2f}x all_open"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
