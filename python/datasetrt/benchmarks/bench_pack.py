"""Converting an ImageFolder: ``dsrt pack --from-imagefolder --jobs 2`` against LitData's
``optimize`` (2 workers) and MosaicML Streaming's ``MDSWriter``, on the same files.

The input is an ImageFolder of 20,000 files of 20-120 KB (10 classes, about 1.4 GB), in the
page cache after an untimed pass of every arm. Each arm writes a fresh output directory,
durably where the tool does (``dsrt pack`` fsyncs; the others do not, which favours them):

- ``dsrt``: the ``dsrt`` binary (``--dsrt PATH``, default ``target/release/dsrt``), uncompressed,
  default shard size, 2 jobs.
- ``convert``: ``datasetrt.convert(fn, inputs, out, num_workers=2)`` with ``fn`` yielding the
  file's bytes and its label, LitData's shape (an installed ``datasetrt`` wheel, release build).
- ``litdata``: ``litdata.optimize(fn, inputs, output_dir, num_workers=2, chunk_bytes="64MB")``
  with ``fn`` returning the file's bytes and its label, as LitData's README converts ImageNet.
- ``mds``: one ``streaming.MDSWriter(columns={"image": "bytes", "label": "int"})`` writing
  every file (Streaming's documented conversion, one process).
- ``mds_sha256``: the same with ``hashes=["sha256"]``, so it hashes every shard byte as a
  cache's manifest must (the same work but the fsync; no target, the like-for-like figure).

Each round runs every arm once, in an order that rotates from round to round, each after a
``sync`` and a second's pause (so no arm pays for the writeback another left); the report is
each arm's median samples/s and the median of the per-round ratios of ``dsrt`` and ``convert``
over ``litdata`` and ``mds``. Targets: >= 2 over LitData and >= 4 over ``MDSWriter``, each.

Needs ``litdata`` and ``mosaicml-streaming`` (not test requirements):
``python bench_pack.py [--rounds 3] [--dsrt target/release/dsrt] [--work DIR]
[--arms dsrt,convert,litdata,mds,mds_sha256]`` (a ratio is reported when both of its arms ran).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

FILES = 20_000
CLASSES = 10


def make_input(root: Path) -> int:
    rng = random.Random(1)
    total = 0
    for i in range(FILES):
        d = root / f"n{i % CLASSES:08}"
        d.mkdir(parents=True, exist_ok=True)
        data = rng.randbytes(20_000 + rng.randrange(100_000))
        (d / f"{i:06}.JPEG").write_bytes(data)
        total += len(data)
    return total


def inputs_of(root: Path) -> list[tuple[str, int]]:
    classes = sorted(p.name for p in root.iterdir())
    out = []
    for label, cls in enumerate(classes):
        for f in sorted((root / cls).iterdir()):
            out.append((str(f), label))
    return out


def read_sample(item: tuple[str, int]) -> dict:
    path, label = item
    with open(path, "rb") as f:
        return {"image": f.read(), "label": label}


def run_dsrt(dsrt: str, root: Path, out: Path) -> None:
    subprocess.run(
        [dsrt, "pack", "--from-imagefolder", str(root), "--out", str(out), "--source", "bench"]
        + ["--jobs", "2"],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def convert_sample(item: tuple[str, int]):
    path, label = item
    with open(path, "rb") as f:
        yield f.read(), {"label": label}


def run_convert(items: list[tuple[str, int]], out: Path) -> None:
    import datasetrt

    datasetrt.convert(
        convert_sample, items, out, source="bench", schema={"label": "int64"}, num_workers=2
    )


def run_litdata(items: list[tuple[str, int]], out: Path) -> None:
    import litdata

    litdata.optimize(
        fn=read_sample,
        inputs=items,
        output_dir=str(out),
        num_workers=2,
        chunk_bytes="64MB",
    )


def run_mds(items: list[tuple[str, int]], out: Path, hashes: list[str] | None = None) -> None:
    from streaming import MDSWriter

    columns = {"image": "bytes", "label": "int"}
    with MDSWriter(out=str(out), columns=columns, hashes=hashes) as writer:
        for item in items:
            writer.write(read_sample(item))


def settle() -> None:
    """Lets the disk write back what the arm before left dirty, so no arm pays for another's."""
    os.sync()
    time.sleep(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dsrt", default="target/release/dsrt")
    parser.add_argument("--work", default=None)
    parser.add_argument(
        "--arms",
        default="dsrt,convert,litdata,mds,mds_sha256",
        help="comma-separated arms to run (default: all five)",
    )
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-pack-"))
    root = work / "imagefolder"
    if not root.exists():
        size = make_input(root)
    else:
        size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    items = inputs_of(root)
    assert len(items) == FILES
    arms = {
        "dsrt": lambda out: run_dsrt(args.dsrt, root, out),
        "convert": lambda out: run_convert(items, out),
        "litdata": lambda out: run_litdata(items, out),
        "mds": lambda out: run_mds(items, out),
        "mds_sha256": lambda out: run_mds(items, out, hashes=["sha256"]),
    }
    chosen = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = [a for a in chosen if a not in arms]
    if unknown or not chosen:
        parser.error(f"--arms: unknown arm(s) {unknown}; the arms are {', '.join(arms)}")
    arms = {name: arms[name] for name in arms if name in chosen}
    print(f"bench_pack: {FILES} files, {size / 1e9:.2f} GB; {args.rounds} rounds", flush=True)
    for name, arm in arms.items():  # untimed: page cache, imports, worker start-up paths
        out = work / f"warm-{name}"
        arm(out)
        shutil.rmtree(out)
    times: dict[str, list[float]] = {name: [] for name in arms}
    # (faster arm, baseline): the targets are dsrt and convert over litdata and mds.
    baselines = ("litdata", "mds", "mds_sha256")
    pairs = [(a, b) for a in ("dsrt", "convert") for b in baselines if {a, b} <= set(arms)]
    ratios: dict[tuple[str, str], list[float]] = {pair: [] for pair in pairs}
    names = list(arms)
    for r in range(args.rounds):
        took = {}
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            out = work / f"out-{name}"
            settle()
            start = time.perf_counter()
            arms[name](out)
            took[name] = time.perf_counter() - start
            shutil.rmtree(out)
        for name in names:
            times[name].append(took[name])
        for fast, base in ratios:
            ratios[(fast, base)].append(took[base] / took[fast])
        print(
            f"round {r + 1}: " + ", ".join(f"{n} {FILES / took[n]:,.0f} samples/s" for n in names),
            flush=True,
        )
    for name in names:
        rate = FILES / statistics.median(times[name])
        print(f"{name:>8}: {rate:>10,.0f} samples/s ({rate * size / FILES / 1e6:,.0f} MB/s)")
    for (fast, base), values in ratios.items():
        print(
            f"{fast} / {base}: median {statistics.median(values):.2f} "
            f"(low {min(values):.2f}, high {max(values):.2f})"
        )
    if args.work is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
