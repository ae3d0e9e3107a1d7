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
  `--old-pythonpath` (the old package installed with `pip install --target DIR`), also a
  PyTorch `DataLoader` epoch (`python/datasetrt/benchmarks/bench_plan.py`) with each package.

Both sides do the same work: open the same cache, plan the same epoch, read the same samples
(the orders differ; the samples and their count do not).
"""

import argparse
import json
import os
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


def epoch(dsrt, cache):
    out = subprocess.run([dsrt, "iterate", cache, "--workers", "2", "--json"],
                         check=True, capture_output=True).stdout
    return json.loads(out)["samples_per_second"]


def python_epoch(python, pythonpath, cache):
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python",
                          "datasetrt", "benchmarks", "bench_plan.py")
    out = subprocess.run([python, script, cache], check=True, capture_output=True, env=env)
    return float(out.stdout.decode().split()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--python", help="a Python with torch and the current datasetrt")
    parser.add_argument("--old-pythonpath", help="a directory holding the old datasetrt package")
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
        old_e = new_e = 0.0
        for _ in range(3):
            old_e = max(old_e, epoch(args.old, c2m))
            new_e = max(new_e, epoch(args.new, c2m))
        line = (f"run {run}: first sample {new_t:.3f} s vs {old_t:.3f} s = {new_t / old_t:.2f}x; "
                f"peak RssAnon {new_rss:.1f} MB vs {old_rss:.1f} MB; "
                f"Rust epoch {new_e:,.0f} vs {old_e:,.0f} samples/s = {new_e / old_e:.3f}x")
        if args.python and args.old_pythonpath:
            old_p = new_p = 0.0
            for _ in range(3):
                old_p = max(old_p, python_epoch(args.python, args.old_pythonpath, c2m))
                new_p = max(new_p, python_epoch(args.python, None, c2m))
            line += f"; Python epoch {new_p:,.0f} vs {old_p:,.0f} samples/s = {new_p / old_p:.3f}x"
        print(line, flush=True)


if __name__ == "__main__":
    main()
