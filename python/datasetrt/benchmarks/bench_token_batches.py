"""Batches of training rows delivered to the training process: datasetrt's token stream
against LitData's ``TokensLoader`` and against a floor, on the same tokens (docs/tokens.md).

The data: 300,000 documents of long-tailed lengths (mean about 2,000 tokens, ids below
50,257), about 594 M tokens, written once as a datasetrt token cache (``TokenWriter``, uint16
ids) and once by ``litdata.optimize`` with ``TokensLoader`` (each document a 1-D tensor of the
same ids); both in the page cache. Every arm delivers batches of 64 rows of 2,048 inputs (windows of
2,049 tokens) to this process and touches each tensor it gets; the figure is input tokens per
second over ``--batches`` batches after 5 untimed ones.

- ``dsrt``: ``datasetrt.torch.TokenStreamingDataset(seq_len=2048, mode="concat",
  batch_size=64)`` in ``DataLoader(batch_size=None, num_workers=W)``; each batch's
  ``input_ids``, ``labels``, ``position_ids``, ``cu_seqlens`` and ``loss_mask`` tensors. With
  ``W = 0`` two Rust threads read ahead and derive the columns; with ``W = 2`` each worker
  derives the columns of its batches into a slot of shared memory and the training process
  makes its tensors over the slot. ``dsrt0-i32`` and ``dsrt2-i32``: the same with
  ``ids_dtype="int32"`` (``input_ids``, ``labels`` and ``position_ids`` as int32, as LitData's
  tokens are: half the bytes to derive and hand over).
- ``litdata``: ``litdata.StreamingDataset(dir, item_loader=TokensLoader(block_size=2049),
  shuffle=True)`` in ``litdata.StreamingDataLoader(batch_size=64, num_workers=W)``; its one
  tensor of windows (no labels, positions or boundaries). ``litdata-seq``: the same with
  ``shuffle=False`` (chunks and windows in stored order), in case that is its faster setting.
- ``floor``: one process copying 64 random 2,049-token windows of the whole token array (an
  in-memory NumPy uint16 array) into a preallocated int64 tensor per batch.

Targets: ``dsrt`` (its fastest ``W`` and ``ids_dtype``) >= 3x ``litdata`` (its fastest ``W``
and shuffle), and again with ``W = 2`` on both sides (each side's fastest setting); ``dsrt``
(fastest) >= 0.5x ``floor``. The ratios of the int64 arms alone are reported too. Each round
opens every arm, then takes its ``--batches`` timed batches in ``--slices`` turns alternating
between the arms (each turn first drains, untimed, what the arm read ahead while the others
ran), so that the machine's pace, which drifts over seconds on a shared host, weighs on every
arm alike; the report is each arm's tokens/s per round and the ratios per round.

Needs ``litdata`` (``requirements-bench.txt``; not a test requirement):
``python bench_token_batches.py [--rounds 3] [--batches 4000] [--slices 8] [--dsrt-threads 2]
[--work DIR] [--arms ...]``. Run it on an otherwise idle machine: ``dsrt0`` spreads its work
over the training thread and ``--dsrt-threads`` Rust threads, which other load on two cores
takes from it far more than from the single-threaded ``floor``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader

import datasetrt
from datasetrt.torch import TokenStreamingDataset

SEQ_LEN = 2048
BATCH = 64
VOCAB = 50_257
DOCS = 300_000
# Batches taken untimed at the start of each slice: more than any arm reads ahead (two
# DataLoader workers of prefetch factor 2, or two Rust threads).
DRAIN = 8
SETTLE_SECONDS = 0.05


def make_documents(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    lengths = np.minimum(1 + rng.lognormal(np.log(1200), 1.0, DOCS), 60_000).astype(np.int64)
    return [rng.integers(0, VOCAB, n, dtype=np.uint16) for n in lengths]


def write_dsrt(docs: list[np.ndarray], out: Path) -> None:
    with datasetrt.TokenWriter(out, source="bench", vocab_size=VOCAB) as writer:
        for doc in docs:
            writer.add(doc)


def _litdata_item(doc: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(doc.astype(np.int32))


def write_litdata(docs: list[np.ndarray], out: Path) -> None:
    import litdata
    from litdata.streaming.item_loader import TokensLoader

    litdata.optimize(
        fn=_litdata_item,
        inputs=docs,
        output_dir=str(out),
        chunk_size=(SEQ_LEN + 1) * 1024,
        item_loader=TokensLoader(),
        num_workers=1,
    )


def touch_dsrt(batch) -> int:
    for name in ("input_ids", "labels", "position_ids", "loss_mask"):
        batch[name][0, 0].item()
    batch["cu_seqlens"][-1].item()
    return int(batch["input_ids"].shape[0]) * SEQ_LEN


class Arm:
    """One arm's batches and how a batch is touched (its tensors read, as a training step
    would), timed slice by slice."""

    def __init__(self, batches, touch) -> None:
        self.batches = batches
        self.touch = touch
        self.tokens = 0
        self.seconds = 0.0

    def run_slice(self, count: int) -> None:
        # Batches read ahead while other arms ran are taken untimed first, so each slice times
        # this arm's own pace from a drained pipeline.
        for _ in range(DRAIN):
            self.touch(next(self.batches))
        started = time.perf_counter()
        tokens = 0
        for _ in range(count):
            tokens += self.touch(next(self.batches))
        self.seconds += time.perf_counter() - started
        self.tokens += tokens

    def rate(self) -> float:
        return self.tokens / self.seconds


def dsrt_arm(cache: Path, workers: int, threads: int = 2, ids_dtype: str = "int64") -> Arm:
    ds = TokenStreamingDataset(
        [str(cache)],
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        rank=0,
        world_size=1,
        threads=threads,
        ids_dtype=ids_dtype,
    )
    return Arm(iter(DataLoader(ds, batch_size=None, num_workers=workers)), touch_dsrt)


def litdata_arm(out: Path, workers: int, shuffle: bool = True) -> Arm:
    from litdata import StreamingDataLoader, StreamingDataset
    from litdata.streaming.item_loader import TokensLoader

    ds = StreamingDataset(
        str(out),
        item_loader=TokensLoader(block_size=SEQ_LEN + 1),
        shuffle=shuffle,
        drop_last=True,
    )
    loader = StreamingDataLoader(ds, batch_size=BATCH, num_workers=workers)

    def touch(batch) -> int:
        batch[0, 0].item()
        return int(batch.shape[0]) * SEQ_LEN

    return Arm(iter(loader), touch)


def floor_arm(tokens: np.ndarray) -> Arm:
    rng = np.random.default_rng(1)
    out = np.empty((BATCH, SEQ_LEN + 1), dtype=np.int64)

    def floor_batches():
        while True:
            for i, start in enumerate(rng.integers(0, len(tokens) - SEQ_LEN - 1, BATCH)):
                out[i] = tokens[start : start + SEQ_LEN + 1]
            yield torch.from_numpy(out)

    def touch(batch) -> int:
        batch[0, 0].item()
        return BATCH * SEQ_LEN

    return Arm(floor_batches(), touch)


def run_round(arms: dict[str, Arm], batches: int, slices: int) -> dict[str, float]:
    """Every arm's tokens/s over `batches` timed batches, taken in `slices` turns that
    alternate between the arms (the machine's pace drifts over seconds; every arm meets the
    same drift)."""
    for arm in arms.values():
        for _ in range(5):
            arm.touch(next(arm.batches))
    names = list(arms)
    for turn in range(slices):
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            # What the previous arm's readers still had in flight finishes untimed.
            time.sleep(SETTLE_SECONDS)
            arms[name].run_slice(batches // slices)
    return {name: arm.rate() for name, arm in arms.items()}


def ratios_of(row: dict[str, float]) -> list[str]:
    """The target ratios of one round's rates: the fastest arms of each side against each
    other, then the int64 arms alone."""

    def best(prefix: str, workers: str = "", int64_only: bool = False) -> float | None:
        rates = [
            rate
            for arm, rate in row.items()
            if arm.startswith(prefix + workers) and not (int64_only and arm.endswith("-i32"))
        ]
        return max(rates) if rates else None

    ratios = []
    for label, int64_only in (("", False), (" (int64)", True)):
        dsrt, lit = best("dsrt", int64_only=int64_only), best("litdata")
        if dsrt and lit:
            ratios.append(f"best/best{label} {dsrt / lit:.2f}")
        dsrt2, lit2 = best("dsrt", "2", int64_only), best("litdata", "2")
        if dsrt2 and lit2:
            ratios.append(f"2w/2w{label} {dsrt2 / lit2:.2f}")
        if dsrt and "floor" in row:
            ratios.append(f"best/floor{label} {dsrt / row['floor']:.2f}")
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    # An epoch of the data is about 4,500 batches: 5 untimed, then per slice DRAIN untimed and
    # the slice's timed ones fit in one. A slice of the fastest arms takes about 0.1 s: shorter
    # ones let one stall of the host decide a round.
    parser.add_argument("--batches", type=int, default=4000)
    parser.add_argument(
        "--dsrt-threads",
        type=int,
        default=2,
        help="Rust threads reading ahead in the dsrt0 arm (TokenStreamingDataset threads=)",
    )
    parser.add_argument(
        "--slices",
        type=int,
        default=8,
        help="turns each round's timed batches are split into, alternating between the arms",
    )
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument(
        "--arms",
        default="dsrt0,dsrt2,dsrt0-i32,dsrt2-i32,litdata0,litdata2,litdata0-seq,litdata2-seq,floor",
    )
    args = parser.parse_args()
    arms = args.arms.split(",")
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-token-batches-"))
    docs = make_documents()
    total = sum(len(d) for d in docs)
    print(f"{len(docs)} documents, {total} tokens")
    # Named by the data's size, so a work directory of other data is never read as this.
    cache, lit = work / f"dsrt-{DOCS}", work / f"litdata-{DOCS}"
    if not cache.exists():
        write_dsrt(docs, cache)
    if any(a.startswith("litdata") for a in arms) and not lit.exists():
        write_litdata(docs, lit)
    tokens = np.concatenate(docs)
    makers = {
        "dsrt0": lambda: dsrt_arm(cache, 0, args.dsrt_threads),
        "dsrt2": lambda: dsrt_arm(cache, 2),
        "dsrt0-i32": lambda: dsrt_arm(cache, 0, args.dsrt_threads, "int32"),
        "dsrt2-i32": lambda: dsrt_arm(cache, 2, ids_dtype="int32"),
        "litdata0": lambda: litdata_arm(lit, 0),
        "litdata2": lambda: litdata_arm(lit, 2),
        "litdata0-seq": lambda: litdata_arm(lit, 0, shuffle=False),
        "litdata2-seq": lambda: litdata_arm(lit, 2, shuffle=False),
        "floor": lambda: floor_arm(tokens),
    }
    results: dict[str, list[float]] = {a: [] for a in arms}
    for r in range(args.rounds):
        row = run_round({a: makers[a]() for a in arms}, args.batches, args.slices)
        for arm, rate in row.items():
            results[arm].append(rate)
            print(f"round {r}: {arm:12} {rate / 1e6:8.1f} M tokens/s", flush=True)
        print(f"round {r}: " + ", ".join(ratios_of(row)), flush=True)
    for arm in arms if args.rounds else []:
        print(f"{arm:12} median {statistics.median(results[arm]) / 1e6:8.1f} M tokens/s")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
