#!/bin/bash
# Loader stats on vs off on the token-batch benchmark (docs/benchmarks.md, "Loader stats
# overhead"): two release wheels, ON_WHEELS (with the stats) and OFF_WHEELS (built from a
# commit before them), installed in turn into the active virtualenv, three alternating runs of
# bench_token_batches.py's dsrt arms each.
#   ON_WHEELS=/tmp/on OFF_WHEELS=/tmp/off WORK=/tmp/tb bash bench_stats_on_off.sh
set -e
UV=${UV:-uv}
PY=${PYTHON:-python}
B=$(dirname "$0")/bench_token_batches.py
for run in 1 2 3; do
  for arm in on off; do
    if [ $arm = on ]; then W=$ON_WHEELS; else W=$OFF_WHEELS; fi
    $UV pip install -q --reinstall --no-deps $W/*.whl
    echo "== run $run metrics $arm $(uptime | sed 's/.*load/load/')"
    $PY $B --rounds 3 --batches 440 --arms dsrt0,dsrt2 --work "${WORK:-/tmp/tb}" 2>&1 | grep -E "median"
  done
done
