"""What the loader stats cost per batch of the token-batch benchmark (64 rows of 2,048 inputs,
the cache bench_token_batches.py wrote under ``--work``): a DataLoader worker's ``stats()``
dict, and that dict pickled with the batch and unpickled in the training process, against a
worker's read of the batch (docs/benchmarks.md, "Loader stats overhead").

``python stats_cost.py WORK_DIR``
"""

import pickle
import sys
import time

from bench_token_batches import DOCS  # this script's directory is on sys.path

from datasetrt.torch import TokenStreamingDataset, TokenTensors

cache = f"{sys.argv[1]}/dsrt-{DOCS}"
ds = TokenStreamingDataset([cache], seq_len=2048, batch_size=64, rank=0, world_size=1)
plan = ds._plan()
batch = plan.read(0, 64, expand=False)
n = 20000
t = time.perf_counter()
for _ in range(n):
    stats = plan.stats()
per_stats = (time.perf_counter() - t) / n
plain = pickle.dumps(TokenTensors(batch))
carried = pickle.dumps(TokenTensors(batch, (("k", 0), 0, stats)))
m = 2000
t = time.perf_counter()
for _ in range(m):
    pickle.loads(plain)
per_plain = (time.perf_counter() - t) / m
t = time.perf_counter()
for _ in range(m):
    pickle.loads(carried)
per_carried = (time.perf_counter() - t) / m
t = time.perf_counter()
k = 100
for i in range(k):
    plan.read(i * 64, (i + 1) * 64, expand=False)
per_read = (time.perf_counter() - t) / k
print(f"stats() {per_stats * 1e6:.1f} us; batch pickle {len(plain)} B, with stats {len(carried)} B")
extra = per_carried - per_plain
print(f"unpickle {per_plain * 1e6:.1f} us, with stats {per_carried * 1e6:.1f} us")
print(f"the stats add {extra * 1e6:.1f} us per batch in the training process")
print(f"worker read of one compact batch {per_read * 1e3:.2f} ms")
