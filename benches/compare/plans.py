#!/usr/bin/env python3
"""Plans against the materialized plan they replaced, in one run: two `dsrt` binaries (the
current one and one built from the commit before constant-memory plans) on the same caches.

    python3 benches/compare/plans.py --old OLD/dsrt --new target/release/dsrt [--runs 3]

For each run, alternating old and new:

- first sample: `dsrt iterate C10M --rank 3 --world-size 8 --limit 1 --workers 0` on a
  10M-sample cache: wall time, and the process's peak RssAnon (VmHWM minus the file-backed
  part is not exposed, so `RssAnon` is sampled from /proc while it runs, the largest kept).
  Target: new <= 0.5x old time; the plan adds <= 8 MB of anonymous memory.
- epoch: `dsrt iterate C2M --workers 2 --json` on a 2M-sample cache of 512-byte payloads:
  samples/s, best of three alternating pairs. Target: new >= 0.95x old. With `--python` and
  `--old-pythonpath` (the old release wheel unpacked or installed with `pip install --target
DIR`; `--new-pythonpath` likewise for the current one, built with `maturin build --release`), a
  PyTorch `DataLoader` epoch (`python/datasetrt/benchmarks/bench_plan.py`) with each package.

Both sides do the same work: open the same cache, plan the same epoch, read the same samples
(the orders differ; the samples and their count do not).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time


def pack(dsrt, out, samples, payload_bytes, shard_bytes):
    if os.path.exists(os.path.join(out, "manifest.json")):
        return
    proc = subprocess.Popen(
        [dsrt, "pack", "--jsonl", "-", "--payload-field", "p", "--payload-encoding", "text",
         "--out", out, "--source", os.path.basename(out), "--max-shard-bytes", str(shard_bytes)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    body = "x" * payload_bytes
    chunk = []
    for i in range(samples):
        chunk.append('{"n": %d, "p": "%s"}\n' % (i, body))
        if len(chunk) == 100_000:
            proc.stdin.write("".join(chunk).encode())
            chunk = []
    proc.stdin.write("".join(chunk).encode())
    proc.stdin.close()
    if proc.wait() != 0:
        sys.exit(f"packing {out} failed")


def rss_anon_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def first_sample(dsrt, cache):
    args = [dsrt, "iterate", cache, "--rank", "3", "--world-size", "8", "--limit", "1",
            "--workers", "0", "--json"]
    started = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    peak = 0
    while proc.poll() is None:
        value = rss_anon_kb(proc.pid)
        if value is not None:
            peak = max(peak, value)
        time.sleep(0.002)
    elapsed = time.perf_counter() - started
    proc.stdout.read()
    if proc.returncode != 0:
        sys.exit(f"{args} failed")
    return elapsed, peak / 1024


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def epoch(dsrt, cache):
    """(samples per wall second, samples per CPU second of the process and its threads)."""
    before = children_cpu()
    out = subprocess.run([dsrt, "iterate", cache, "--workers", "2", "--json"],
                         check=True, capture_output=True).stdout
    summary = json.loads(out)
    return summary["samples_per_second"], summary["samples"] / (children_cpu() - before)


def python_epoch(python, pythonpath, cache):
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python",
                          "datasetrt", "benchmarks", "bench_plan.py")
    before = children_cpu()
    out = subprocess.run([python, script, cache], check=True, capture_output=True, env=env)
    fields = out.stdout.decode().split()
    # CPU of the training process and its DataLoader workers (all waited for).
    return float(fields[-1]), int(fields[-2]) / (children_cpu() - before)


def best(pairs):
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--python", help="a Python with torch and the current datasetrt")
    parser.add_argument("--old-pythonpath", help="a directory holding the old datasetrt package")
    parser.add_argument("--new-pythonpath", help="a directory holding the current package "
                        "(default: the one --python imports)")
    parser.add_argument("--dir", default="/dev/shm/dsrt-plan-bench")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    c10m = os.path.join(args.dir, "c10m")
    c2m = os.path.join(args.dir, "c2m")
    pack(args.new, c10m, 10_000_000, 8, 1 << 20)
    pack(args.new, c2m, 2_000_000, 512, 16 << 20)
    for run in range(1, args.runs + 1):
        old_t, old_rss = min(first_sample(args.old, c10m) for _ in range(3))
        new_t, new_rss = min(first_sample(args.new, c10m) for _ in range(3))
        # Epochs: three alternating pairs, the best of each side (the machine drifts by
        # more than the difference between the sides within a minute).
        olds, news = [], []
        for _ in range(3):
            olds.append(epoch(args.old, c2m))
            news.append(epoch(args.new, c2m))
        (old_w, old_c), (new_w, new_c) = best(olds), best(news)
        line = (f"run {run}: first sample {new_t:.3f} s vs {old_t:.3f} s = {new_t / old_t:.2f}x; "
                f"peak RssAnon {new_rss:.1f} MB vs {old_rss:.1f} MB; "
                f"Rust epoch {new_w / old_w:.3f}x wall, {new_c / old_c:.3f}x CPU "
                f"({new_w:,.0f} vs {old_w:,.0f} samples/s)")
        if args.python and args.old_pythonpath:
            olds, news = [], []
            for _ in range(3):
                olds.append(python_epoch(args.python, args.old_pythonpath, c2m))
                news.append(python_epoch(args.python, args.new_pythonpath, c2m))
            (old_w, old_c), (new_w, new_c) = best(olds), best(news)
            line += (f"; Python epoch {new_w / old_w:.3f}x wall, {new_c / old_c:.3f}x CPU "
                     f"({new_w:,.0f} vs {old_w:,.0f} samples/s)")
        print(line, flush=True)


if __name__ == "__main__":
    main()
