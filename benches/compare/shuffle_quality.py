#!/usr/bin/env python3
"""Shuffle figures of one rank's order, from `dsrt iterate --keys` output: the mean number of
distinct shards among 256 consecutive samples (64 blocks spread over the rank's steps, as
`dsrt plan` picks them) and Spearman's rank correlation of the samples' physical order with
their steps. For comparing plans of different builds on the same cache.

    dsrt iterate CACHE --keys --workers 0 > keys.txt
    python3 benches/compare/shuffle_quality.py CACHE keys.txt
"""

import os
import struct
import sys


def main() -> None:
    cache, keys_file = sys.argv[1], sys.argv[2]
    rows = open(os.path.join(cache, "index.bin"), "rb").read()
    shard_of = [struct.unpack_from("<Q", rows, 24 * i)[0] for i in range(len(rows) // 24)]
    samples = [int(line.split()[1]) for line in open(keys_file)]
    steps, block = len(samples), 256
    blocks = min(steps // block, 64) or 1
    stride = max(steps // block, 1) // blocks
    distinct, measured = [], []
    for b in range(blocks):
        first = b * max(stride, 1) * block
        chunk = samples[first : first + block]
        distinct.append(len({shard_of[s] for s in chunk}))
        measured.extend(chunk)
    n = len(measured)
    order = sorted(range(n), key=lambda i: measured[i])
    ranks = [0.0] * n
    for rank, i in enumerate(order):
        ranks[i] = float(rank)
    mean = (n - 1) / 2
    cov = sum((i - mean) * (r - mean) for i, r in enumerate(ranks))
    var = sum((i - mean) ** 2 for i in range(n))
    print(f"distinct shards per 256: {sum(distinct) / len(distinct):.2f}; "
          f"rank correlation with physical order: {cov / var:.4f} (over {n} steps)")


if __name__ == "__main__":
    main()
