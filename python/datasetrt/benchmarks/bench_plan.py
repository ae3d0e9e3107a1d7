"""One epoch of a cache through PyTorch: DataLoader(StreamingDataset(...), num_workers=2) in
columnar batches of 256, as a training job reads it; prints samples per second last.

    python bench_plan.py CACHE

`benches/compare/plans.py` runs it with the current package and the one before
constant-memory plans (through PYTHONPATH), alternating, for the plans issue's throughput
target (>= 0.95x)."""

import sys
import time

from torch.utils.data import DataLoader

import datasetrt
from datasetrt.torch import StreamingDataset


def main() -> None:
    cache = sys.argv[1]
    ds = StreamingDataset([cache], seed=0, batch_size=256, collate="columnar", rank=0, world_size=1)
    loader = DataLoader(ds, batch_size=None, num_workers=2)
    started = time.perf_counter()
    samples = 0
    for batch in loader:
        samples += len(batch)
    elapsed = time.perf_counter() - started
    print(datasetrt.__file__, samples, f"{samples / elapsed:.0f}")


if __name__ == "__main__":
    main()
