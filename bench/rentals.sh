#!/usr/bin/env bash
# Rentals (#16), two figures:
#
# 1. Scheduler throughput: rentals placed per second on a marketplace of simulated machines
#    (bench/lib/market_fill.sql, as bench/market.sh fills it), by CUSTOMERS customers renting one GPU
#    of one model at a time, all at once, until RENTALS are placed or none is free; then the store
#    is checked for GPUs given to two live rentals (there must be none).
# 2. Start latency: the time from POST /v1/rentals to the rental running (the real gpunex-agent on
#    simulated GPUs, containers on Podman's Docker API, the image already present), p50 and p95 over
#    STARTS rentals, side by side with Podman's own create + start of the same image through the
#    same API     . Target: p50 at most Podman's plus 1 s.
#
# Usage: bench/rentals.sh [RENTALS] [STARTS]
#   RENTALS: rentals to place (default 2000); STARTS: rentals started and stopped (default 50).
#   GPUNEX_BENCH_MACHINES / GPUNEX_BENCH_PROVIDERS: market size (default 2000 / 400);
#   GPUNEX_BENCH_CUSTOMERS: concurrent customers (default 50); GPUNEX_BIN_DIR: the programs;
#   GPUNEX_BENCH_PARTS: "scheduler start" (default) or one of them; KEEP_WORK=1 keeps the work folder.
set -euo pipefail
cd "$(dirname "$0")/.."
RENTALS=${1:-2000}
STARTS=${2:-50}
MACHINES=${GPUNEX_BENCH_MACHINES:-2000}
PROVIDERS=${GPUNEX_BENCH_PROVIDERS:-400}
CUSTOMERS=${GPUNEX_BENCH_CUSTOMERS:-50}
PARTS=${GPUNEX_BENCH_PARTS:-scheduler start}
BIN=${GPUNEX_BIN_DIR:-build/bin}
[ -x "$BIN/gpunex-server" ] || { echo "$BIN/gpunex-server is missing (set GPUNEX_BIN_DIR)" >&2; exit 1; }
export GPUNEX_BIN_DIR=$BIN
for tool in curl sqlite3 node podman python3; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: run scripts/deps.sh" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/gpunex-rentals.XXXXXX)
SPID=
PODDIR=
cleanup() {
  [ -z "$SPID" ] || kill "$SPID" 2>/dev/null || true
  wait 2>/dev/null || true
  [ -z "$PODDIR" ] || scripts/podman.sh stop "$PODDIR" >/dev/null 2>&1 || true
  [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

start_server() { # DB_URL LOG_NAME EXTRA_ARGS...
  local db=$1 log=$2
  shift 2
  rm -f "$WORK/port"
  "$BIN/gpunex-server" --listen 127.0.0.1:0 --port-file "$WORK/port" --db "$db" --data-dir "$WORK/data" \
    --log-level warn --access-log false --auth-rate-limit-per-minute 100000 --allow-simulated-offers "$@" \
    >>"$WORK/server-$log.log" 2>&1 &
  SPID=$!
  for _ in $(seq 300); do [ -s "$WORK/port" ] && break; sleep 0.1; done
  [ -s "$WORK/port" ] || { echo "gpunex-server did not start:" >&2; cat "$WORK/server-$log.log" >&2; exit 1; }
  URL="http://127.0.0.1:$(cat "$WORK/port")"
}
stop_server() {
  kill "$SPID"
  wait "$SPID" || true
  SPID=
}
admin() { # makes the operator account on DB_URL
  printf 'operator-password-1\n' | "$BIN/gpunex-server" admin create-user --db "$1" --email root@example.com \
    --role admin --password-stdin >/dev/null
}

# ---- 1. scheduler throughput ----
scheduler() {
DB="sqlite:$WORK/market.db"
echo "== scheduler: filling $MACHINES machines of $PROVIDERS providers" >&2
start_server "$DB" fill
stop_server
now_s=$(date +%s)
sed -e "s/@NOW@/${now_s}000/g" -e "s/@DAY@/CAST(86400000 AS BIGINT)/g" -e "s/@HOUR@/CAST(3600000 AS BIGINT)/g" \
  -e "s/@PROVIDERS@/$PROVIDERS/g" -e "s/@MACHINES@/$MACHINES/g" \
  -e "s/@MAINT_START@/$(date -u -d "@$((now_s - 7200))" +%FT%TZ)/g" \
  -e "s/@MAINT_END@/$(date -u -d "@$((now_s + 79200))" +%FT%TZ)/g" bench/lib/market_fill.sql | sqlite3 -bail "$WORK/market.db"
admin "$DB"
# Heartbeats and benchmark rounds every hour: the filled machines stay online and no worker scans
# them while rentals are placed.
start_server "$DB" scheduler --heartbeat-interval 3600 --benchmark-schedule-interval-ms 3600000 \
  --rentals-tick-ms 600000
MODEL=RTX-4090
echo "== scheduler: $CUSTOMERS customers renting $MODEL GPUs until $RENTALS are placed" >&2
node bench/lib/rentals_load.mjs "$URL" root@example.com operator-password-1 "$CUSTOMERS" "$RENTALS" "$MODEL" \
  >"$WORK/scheduler.json"
stop_server
DOUBLE=$(sqlite3 "$WORK/market.db" "SELECT COUNT(*) FROM (SELECT r.machine_id, g.uuid FROM rental_gpus g
  JOIN rentals r ON r.id = g.rental_id WHERE r.state <> 'ended' GROUP BY r.machine_id, g.uuid HAVING COUNT(*) > 1)")
LIVE=$(sqlite3 "$WORK/market.db" "SELECT COUNT(*) FROM rentals WHERE state <> 'ended'")
ALLOCATED=$(sqlite3 "$WORK/market.db" "SELECT COUNT(*) FROM gpu_allocations")
python3 - "$WORK/scheduler.json" "$DOUBLE" "$LIVE" "$ALLOCATED" "$MACHINES" >"$WORK/scheduler.txt" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
double, live, allocated, machines = (int(x) for x in sys.argv[2:6])
print(f"Scheduler: {machines} machines (about {machines * 5} GPUs), RTX-4090 rentals by filters, "
      f"concurrent customers")
print(f"  placed {s['placed']} in {s['seconds']:.1f} s: {s['per_second']:.0f} rentals/s; "
      f"POST p50 {s['p50_ms']:.1f} ms, p95 {s['p95_ms']:.1f} ms; other answers {s['refused']}")
print(f"  live rentals {live}, allocated GPUs {allocated}, GPUs in two live rentals: {double} "
      f"-> {'PASS' if double == 0 and allocated == live else 'FAIL'}")
PY
}

# ---- 2. start latency ----
start_latency() {
PODDIR="$WORK/podman"
DOCKER_HOST=$(scripts/podman.sh start "$PODDIR")
IMAGE=localhost/gpunex-test:1
echo "== start latency: $STARTS rentals on the real agent ($DOCKER_HOST), image $IMAGE" >&2
node bench/lib/rentals_start.mjs "$STARTS" "$IMAGE" "$DOCKER_HOST" >"$WORK/start.json"
python3 - "$WORK/start.json" >"$WORK/start.txt" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
print(f"Start latency over {t['starts']} rentals (image present), ms    p50      p95")
print(f"  gpunex: POST /v1/rentals -> running            {t['gpunex_p50_ms']:8.0f} {t['gpunex_p95_ms']:8.0f}")
print(f"  podman: create + start (Docker API)            {t['podman_p50_ms']:8.0f} {t['podman_p95_ms']:8.0f}")
ok = t['gpunex_p50_ms'] <= t['podman_p50_ms'] + 1000
print(f"  target: p50 at most podman's + 1000 ms -> {'PASS' if ok else 'MISS'}")
PY
}

for part in $PARTS; do
  case $part in
    scheduler) scheduler ;;
    start) start_latency ;;
    *) echo "unknown part: $part" >&2; exit 2 ;;
  esac
done
echo
for part in $PARTS; do
  cat "$WORK/$part.txt"
  echo
done
