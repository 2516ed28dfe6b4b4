#!/usr/bin/env bash
# Heartbeats through nginx to 1, 2 and 3 gpunex-server replicas on one PostgreSQL (scripts/cluster.sh),
# then AGENTS_BIG simulated agents against 3 replicas: heartbeats per second, p50/p99, errors, the
# replicas' CPU per heartbeat, and the scaling ratio against one replica. The scaling rows send each
# agent's heartbeat every FAST_INTERVAL s (default 1: 20,000 agents ask 20,000/s, more than one replica
# answers, so hb/s is the cluster's capacity); the last row is a real fleet's pace, every 15 s. Each row is a fresh cluster
# (an empty database). The figures are this machine's: replicas, PostgreSQL, nginx and the load
# generator share its cores (printed), so a ratio near 1 on 2 cores says the cores are spent, not that
# replicas do not scale.
# Usage: bench/cluster.sh [DURATION_S] [AGENTS] [AGENTS_BIG] [CONNECTIONS]
#   defaults: 30 s, 20,000 agents per row, 100,000 for the last row, 64 keep-alive connections.
#   GPUNEX_BENCH_REPLICAS: the replica counts of the scaling rows (default "1 2 3").
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-30}
AGENTS=${2:-20000}
AGENTS_BIG=${3:-100000}
CONNS=${4:-64}
INTERVAL=15
FAST_INTERVAL=${GPUNEX_BENCH_FAST_INTERVAL:-1}
REPLICAS=${GPUNEX_BENCH_REPLICAS:-"1 2 3"}
BIN=${GPUNEX_BIN_DIR:-build/bin}
LOADGEN=${GPUNEX_LOADGEN:-$BIN/gpunex-loadgen}
[ -x "$BIN/gpunex-server" ] || { echo "$BIN/gpunex-server is missing (set GPUNEX_BIN_DIR)" >&2; exit 1; }
[ -x "$LOADGEN" ] || { echo "$LOADGEN is missing: ninja -C build gpunex-loadgen" >&2; exit 1; }
. bench/lib/provider_key.sh

WORK=$(mktemp -d /tmp/gpunex-cluster-bench.XXXXXX)
chmod 755 "$WORK"  # PostgreSQL runs as its own user when the bench runs as root (CI)
export GPUNEX_CLUSTER_DIR=$WORK/cluster GPUNEX_BIN_DIR=$BIN
export GPUNEX_CLUSTER_SERVER_ARGS="--heartbeat-interval $INTERVAL --access-log false"
cleanup() {
  scripts/cluster.sh down >/dev/null 2>&1 || true
  [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{print ($14+$15)/hz}' "/proc/$1/stat" 2>/dev/null || echo 0; }
replicas_cpu() { # the replicas' CPU seconds, summed
  local t=0 f
  for f in "$GPUNEX_CLUSTER_DIR"/replica-*/pid; do t=$(awk -v a="$t" -v b="$(cpu_s "$(cat "$f")")" 'BEGIN{print a+b}'); done
  echo "$t"
}

# One row: a fresh cluster of $1 replicas, $2 agents through nginx, a beat each $3 s; writes $WORK/row-$1-$2.json.
row() {
  local n=$1 agents=$2 interval=$3 url key s0 shb s1 lpid
  rm -rf "$GPUNEX_CLUSTER_DIR"
  url=$(scripts/cluster.sh up "$n" 2>"$WORK/up-$n.log") || { cat "$WORK/up-$n.log" >&2; exit 1; }
  key=$(provider_key "$url" "$(cat "$GPUNEX_CLUSTER_DIR/db-url")" "$BIN/gpunex-server")
  echo "== $n replica(s), $agents agents: registering, then ${DURATION}s of heartbeats every ${interval}s" >&2
  s0=$(replicas_cpu)
  "$LOADGEN" --server "$url" --api-key "$key" --agents "$agents" --interval "$interval" --duration "$DURATION" \
    --connections "$CONNS" --json >"$WORK/loadgen-$n-$agents.json" 2>"$WORK/loadgen-$n-$agents.log" &
  lpid=$!
  shb=""
  while kill -0 "$lpid" 2>/dev/null; do
    if grep -q 'heartbeats start' "$WORK/loadgen-$n-$agents.log" 2>/dev/null; then shb=$(replicas_cpu); break; fi
    sleep 0.05
  done
  wait "$lpid" || true
  s1=$(replicas_cpu)
  tail -n 2 "$WORK/loadgen-$n-$agents.log" >&2
  python3 - "$WORK/loadgen-$n-$agents.json" "$n" "${shb:-$s0}" "$s1" >"$WORK/row-$n-$agents.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    d = {"error": str(e)}
d["replicas"] = int(sys.argv[2])
d["replicas_cpu_s"] = float(sys.argv[4]) - float(sys.argv[3])
print(json.dumps(d))
PY
  scripts/cluster.sh down >/dev/null 2>&1
}

for n in $REPLICAS; do row "$n" "$AGENTS" "$FAST_INTERVAL"; done
if [ "$AGENTS_BIG" -gt 0 ]; then row 3 "$AGENTS_BIG" "$INTERVAL"; fi

echo
python3 - "$WORK" "$AGENTS" "$AGENTS_BIG" "$REPLICAS" <<'PY'
import json, os, sys
work, agents, big, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split()
rows = [(int(n), agents, True) for n in reps] + ([(3, big, False)] if big > 0 else [])
print(f"{'replicas':>8} {'agents':>8} {'reg s':>7} {'hb/s':>8} {'target/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
      f"{'errors':>7} {'missed':>7} {'CPU/hb ms':>9} {'vs 1':>6}")
base = None
for n, a, scaling in rows:
    try:
        d = json.load(open(os.path.join(work, f"row-{n}-{a}.json")))
        r, h = d["registration"], d["heartbeats"]
    except Exception as e:
        print(f"{n:>8} {a:>8} failed: {e}")
        continue
    per_hb = d["replicas_cpu_s"] / h["ok"] * 1000 if h.get("ok") else float("nan")
    if n == 1 and scaling:
        base = h["per_second"]
    ratio = f"{h['per_second'] / base:.2f}" if base and scaling else "-"
    print(f"{n:>8} {a:>8} {r['seconds']:>7.1f} {h['per_second']:>8.0f} {h['target_per_second']:>9.0f} "
          f"{h['p50_ms']:>8.1f} {h['p99_ms']:>8.1f} {h['errors'] + r['errors']:>7} {h.get('missed', 0):>7} "
          f"{per_hb:>9.3f} {ratio:>6}")
    for k in (r, h):
        if k.get("first_error"):
            print("   first error:", k["first_error"][:200])
PY
echo "hb/s: heartbeats answered per second through nginx; target/s: agents / interval (${FAST_INTERVAL} s in the"
echo "scaling rows, ${INTERVAL} s in the fleet row); CPU/hb: the replicas'"
echo "CPU (user+system, summed) per answered heartbeat, registration excluded; vs 1: hb/s against one replica."
echo "($(nproc) cores shared by the replicas, PostgreSQL, nginx and gpunex-loadgen; ${DURATION}s of heartbeats per row, ${CONNS} connections)"
