"""DatasetRT from Python: the four throughput ratios of its performance targets, in one run.

    python python/datasetrt/benchmarks/bench_read.py [--samples 100000] [--dir /tmp/dsrt-bench]

Writes a cache of N samples (payloads of 256 B to 4 KiB, one int64 column) with the Python
CacheWriter and, on the same samples, with the Rust writer in one Rust loop; warms the page
cache; then times, in random order over the same samples:

1. ``cache[i]``                         vs a bare ``os.pread`` loop over the same payload byte
                                          ranges (offsets precomputed in a list)   target >= 0.8
2. ``cache.read_many`` (batches of 256) vs that bare loop                          target >= 2
3. ``DataLoader(StreamingDataset(batch_size=4096, collate="columnar", transfer="locations"),
   num_workers=2, batch_size=None, persistent_workers=True)``, taking every sample's payload
   view (``batch["payloads"]``), per epoch once the workers run, vs the single-process
   ``cache[i]`` loop (samples/s)                                                    target >= 1.5
   Also shown: the same with a new DataLoader per epoch (the start of its 2 worker processes,
   ~0.1 s, timed too), with ``transfer="bytes"`` (payloads copied through the queue), and
   with batches of 1024 (more DataLoader items, each with its fixed cost).
4. ``CacheWriter.add`` from Python      vs the Rust writer                         target >= 0.5

Each figure is a ratio of throughputs (higher is better for DatasetRT), best of --repeat runs.
Use a release build of the package (``maturin build --release``).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import struct
import sys
import time

import datasetrt


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--dir", default="/tmp/dsrt-bench")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-loader", action="store_true", help="skip the DataLoader figure")
    ap.add_argument("--loader-batch", type=int, default=4096, help="StreamingDataset batch_size")
    args = ap.parse_args()
    n = args.samples
    rng = random.Random(args.seed)
    lengths = [rng.randint(256, 4096) for _ in range(n)]
    blob = rng.randbytes(sum(lengths))
    labels = [i % 1000 for i in range(n)]
    offsets = []
    at = 0
    for length in lengths:
        offsets.append(at)
        at += length
    payloads = [blob[o : o + length] for o, length in zip(offsets, lengths)]

    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(args.dir)

    # 4. Writing: Python CacheWriter.add vs the Rust writer, same samples, same options.
    def write_python(path):
        t0 = time.perf_counter()
        with datasetrt.CacheWriter(path, source="bench", schema={"label": "int64"}) as w:
            add = w.add
            for p, label in zip(payloads, labels):
                add(p, label=label)
        return time.perf_counter() - t0

    write_py, write_rs = [], []
    for r in range(max(2, args.repeat // 2 * 2)):
        py_dir = os.path.join(args.dir, f"py{r}")
        rs_dir = os.path.join(args.dir, f"rs{r}")
        os.sync()  # start each write with no dirty pages from the previous one
        # Alternate which writer goes first, so neither always inherits the other's writeback.
        if r % 2 == 0:
            write_py.append(write_python(py_dir))
            os.sync()
            write_rs.append(
                datasetrt._native._testing._rust_write_benchmark(
                    rs_dir, "bench", blob, lengths, labels
                )
            )
        else:
            write_rs.append(
                datasetrt._native._testing._rust_write_benchmark(
                    rs_dir, "bench", blob, lengths, labels
                )
            )
            os.sync()
            write_py.append(write_python(py_dir))
        if r > 0:
            shutil.rmtree(py_dir)
        shutil.rmtree(rs_dir)
    path = os.path.join(args.dir, "py0")
    cache = datasetrt.Cache(path)
    assert len(cache) == n

    # The bare baseline: os.pread of each payload's byte range, offsets precomputed.
    index = open(os.path.join(path, "index.bin"), "rb").read()
    fds = {}
    ranges = []
    for i in range(n):
        shard, offset, _length = struct.unpack_from("<QQQ", index, 24 * i)
        if shard not in fds:
            fds[shard] = os.open(os.path.join(path, "shards", f"{shard:06}.bin"), os.O_RDONLY)
        header = os.pread(fds[shard], 8, offset)
        (json_len,) = struct.unpack("<Q", header)
        ranges.append((fds[shard], lengths[i], offset + 8 + json_len))
    order = list(range(n))
    rng.shuffle(order)
    work = [ranges[i] for i in order]
    assert os.pread(*work[0]) == payloads[order[0]]
    assert bytes(cache[order[0]].payload) == payloads[order[0]]

    # Warm the page cache.
    for fd in fds.values():
        while os.read(fd, 1 << 20):
            pass
    for fd, length, offset in work:
        os.pread(fd, length, offset)

    pread = os.pread

    def bare():
        for fd, length, offset in work:
            pread(fd, length, offset)

    def getitem():
        c = cache
        for i in order:
            _ = c[i].payload

    batches = [order[k : k + 256] for k in range(0, n, 256)]

    def read_many():
        rm = cache.read_many
        for b in batches:
            for s in rm(b):
                _ = s.payload

    t_bare = best(bare, args.repeat)
    t_get = best(getitem, args.repeat)
    t_many = best(read_many, args.repeat)

    t_loader = t_loader_fresh = t_loader_bytes = t_loader_1024 = None
    if not args.skip_loader:
        import torch.utils.data

        from datasetrt.torch import StreamingDataset

        def loader_with(transfer, persistent, batch_size=args.loader_batch):
            ds = StreamingDataset(
                [path],
                seed=3,
                shuffle="full",
                rank=0,
                world_size=1,
                batch_size=batch_size,
                collate="columnar",
                transfer=transfer,
            )
            dl = torch.utils.data.DataLoader(
                ds, batch_size=None, num_workers=2, prefetch_factor=4, persistent_workers=persistent
            )

            def loader():
                count = 0
                # A new DataLoader per epoch starts its 2 worker processes inside the timing.
                for batch in (
                    dl
                    if persistent
                    else torch.utils.data.DataLoader(
                        ds, batch_size=None, num_workers=2, prefetch_factor=4
                    )
                ):
                    # Every sample's payload, as the cache[i] loop takes c[i].payload.
                    for _payload in batch["payloads"]:
                        count += 1
                assert count == n, count

            if persistent:
                loader()  # starts the workers: not timed
            return loader

        t_loader = best(loader_with("locations", True), args.repeat)
        t_loader_fresh = best(loader_with("locations", False), max(2, args.repeat // 2))
        t_loader_bytes = best(loader_with("bytes", True), max(2, args.repeat // 2))
        t_loader_1024 = best(loader_with("locations", True, 1024), max(2, args.repeat // 2))

    print(
        f"samples: {n}, payload bytes: {sum(lengths)} ({sum(lengths) / n:.0f} B mean), "
        f"shards: {len(fds)}"
    )
    print(f"python {sys.version.split()[0]}, datasetrt from {os.path.dirname(datasetrt.__file__)}")
    rows = [
        ("bare os.pread loop", n / t_bare, None, None),
        ("cache[i] loop", n / t_get, (t_bare / t_get), 0.8),
        ("read_many(256)", n / t_many, (t_bare / t_many), 2.0),
    ]
    if t_loader is not None:
        rows.append(
            ("DataLoader, 2 workers, transfer=locations", n / t_loader, t_get / t_loader, 1.5)
        )
        rows.append(
            ("  the same, worker start-up timed", n / t_loader_fresh, t_get / t_loader_fresh, None)
        )
        rows.append(
            ("  the same, transfer=bytes", n / t_loader_bytes, t_get / t_loader_bytes, None)
        )
        rows.append(("  the same, batches of 1024", n / t_loader_1024, t_get / t_loader_1024, None))
    rows.append(("Rust writer", n / min(write_rs), None, None))
    rows.append(
        ("CacheWriter.add from Python", n / min(write_py), min(write_rs) / min(write_py), 0.5)
    )
    print(f"{'measure':44} {'samples/s':>12} {'ratio':>7} {'target':>7}")
    for name, rate, ratio, target in rows:
        shown = f"{ratio:7.2f}" if ratio is not None else " " * 7
        wanted = f">= {target:<4}" if target is not None else ""
        ok = "" if ratio is None or target is None else ("  ok" if ratio >= target else "  MISSED")
        print(f"{name:44} {rate:12,.0f} {shown} {wanted:>7}{ok}")
    print("ratios: cache[i] and read_many against the bare loop; DataLoader against cache[i];")
    print("        Python writer against the Rust writer (throughput over throughput)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
