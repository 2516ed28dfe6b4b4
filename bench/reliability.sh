#!/usr/bin/env bash
# The reliability score (issue 17) of a whole fleet, recomputed from scratch: 20,000 machines, each
# with 30 days of per-minute presence (outages now and then), four kinds of schedule (24/7; Berlin
# office hours across the DST change with weekly maintenance; an overnight window in New York; Tokyo
# 24/7 with one-off and monthly maintenance), rentals and weekly benchmark runs of 1-8 GPUs.
# bench/reliability_bench.cpp (gpunex-reliability-bench) makes each machine's inputs, judges its 30
# days minute by minute, scores every day's end and now, and adds what the Performance endpoint does
# (recovery, events in words). Printed: per machine p50/p99/max (thread CPU time), the whole fleet on
# 1 and on 2 threads, and peak memory. Targets: a full recompute under a minute on 2 cores, one
# machine under 5 ms.
# Then the worker's rounds on a real store (SQLite file; GPUNEX_BENCH_DB=postgresql://... for PostgreSQL,
# an empty database): STORE_MACHINES machines with 60 days of presence rows and the older window's days
# stored, the first round (this window judged from presence_minute) and the next (a minute later: only
# today's new minutes; the median of ten).
# Usage: bench/reliability.sh [MACHINES] [STORE_MACHINES]   (defaults 20000 and 50; 0 skips the store;
#   GPUNEX_BIN_DIR: default build/bin)
set -euo pipefail
cd "$(dirname "$0")/.."
MACHINES=${1:-20000}
STORE_MACHINES=${2:-50}
BIN=${GPUNEX_BIN_DIR:-build/bin}
if [ ! -x "$BIN/gpunex-reliability-bench" ]; then
  [ -d build ] || { echo "$BIN/gpunex-reliability-bench is missing: build first (make build)" >&2; exit 1; }
  ninja -C build gpunex-reliability-bench >/dev/null
fi
OUT=${GPUNEX_BENCH_OUT:-test-output/bench}
mkdir -p "$OUT"
status=0
for threads in 1 2; do
  "$BIN/gpunex-reliability-bench" --machines "$MACHINES" --threads "$threads" --json "$OUT/reliability-${threads}.json" || status=1
  echo
done
echo "JSON: $OUT/reliability-1.json, $OUT/reliability-2.json"
if [ "$STORE_MACHINES" -gt 0 ]; then
  echo
  "$BIN/gpunex-reliability-bench" --store "$STORE_MACHINES" ${GPUNEX_BENCH_DB:+--db "$GPUNEX_BENCH_DB"} || status=1
fi
exit $status
