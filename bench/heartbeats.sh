#!/usr/bin/env bash
# Agent heartbeats a Release gpunex-server (SQLite unless GPUNEX_BENCH_DB) sustains on loopback:
# gpunex-loadgen simulates 2,000 and then 20,000 agents at a 15 s interval
# (registration first, then DURATION_S of heartbeats), against one approved
# provider's API key made through the public API. In the same run wrk measures
# nginx's static 200 as the baseline (as bench/http.sh does). Prints a table, and the server's CPU per
# heartbeat over all heartbeats and in the steady state (from two intervals after the first heartbeats:
# give DURATION_S of at least 60 for a useful figure); on a PostgreSQL of this machine, its CPU per
# heartbeat in the same window too.
# Target: 20,000 agents with p99 under 100 ms.
# Usage: bench/heartbeats.sh [DURATION_S] [AGENT_COUNTS] [CONNECTIONS]
#   GPUNEX_BIN_DIR: gpunex-server (default build/bin); GPUNEX_LOADGEN: loadgen binary
#   (default build/bin/gpunex-loadgen); GPUNEX_SERVER_ARGS: extra server flags (e.g. --threads 8);
#   GPUNEX_BENCH_DB: store URL instead of a fresh SQLite file, e.g. an empty PostgreSQL database.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-60}
COUNTS=${2:-"2000 20000"}
CONNS=${3:-64}
INTERVAL=15
BIN=${GPUNEX_BIN_DIR:-build/bin}
LOADGEN=${GPUNEX_LOADGEN:-build/bin/gpunex-loadgen}
[ -x "$BIN/gpunex-server" ] || { echo "$BIN/gpunex-server is missing (set GPUNEX_BIN_DIR)" >&2; exit 1; }
[ -x "$LOADGEN" ] || { echo "$LOADGEN is missing: ninja -C build gpunex-loadgen" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk is missing: run scripts/deps.sh" >&2; exit 1; }
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { echo "nginx is missing: run scripts/deps.sh" >&2; exit 1; }
. bench/lib/nginx.sh
. bench/lib/provider_key.sh

WORK=$(mktemp -d /tmp/gpunex-hb.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

DB=${GPUNEX_BENCH_DB:-sqlite:$WORK/bench.db}
STORE=$([[ $DB == sqlite:* ]] && echo SQLite || echo PostgreSQL)
"$BIN/gpunex-server" --listen 127.0.0.1:0 --port-file "$WORK/port" --db "$DB" --data-dir "$WORK/data" \
  --log-level warn --access-log false --heartbeat-interval "$INTERVAL" ${GPUNEX_SERVER_ARGS:-} >"$WORK/server.log" 2>&1 &
pids+=($!)
SPID=$!
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
[ -s "$WORK/port" ] || { echo "gpunex-server did not start:" >&2; cat "$WORK/server.log" >&2; exit 1; }
URL="http://127.0.0.1:$(cat "$WORK/port")"

# An approved provider with an API key, through the public API (bench/lib/provider_key.sh).
KEY=$(provider_key "$URL" "$DB" "$BIN/gpunex-server")

# nginx static 200, measured like bench/http.sh.
NPORT=$(free_port)
start_nginx "$NPORT" "$WORK/nginx"
pids+=("$NGINX_PID")
wrk -t2 -c"$CONNS" -d10s --latency "http://127.0.0.1:$NPORT/" >"$WORK/wrk.log"
NRPS=$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk.log")
NP50=$(awk '/ 50%/ {print $2}' "$WORK/wrk.log")
NP99=$(awk '/ 99%/ {print $2}' "$WORK/wrk.log")

curl -s "$URL/metrics" >"$WORK/metrics-before.txt" || true
# Heartbeats the server has answered so far (its /metrics counter).
heartbeats_served() {
  curl -s "$URL/metrics" | awk '/^gpunex_http_request_duration_seconds_count\{route="\/v1\/agent\/heartbeat"\}/ {print $2; f=1} END {if (!f) print 0}'
}
# CPU seconds (user+system) a process has used so far.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{print ($14+$15)/hz}' "/proc/$1/stat"; }
# PostgreSQL's CPU seconds so far (the postmaster, its live children, and the children it reaped), when it
# runs on this machine and its data directory is readable; else no figure. Printed as two figures: the
# whole, then the part of it in the backends serving client connections (the statements, their protocol
# and their I/O); the rest is background work (autovacuum, the WAL writer, checkpoints).
PGPM=""
if [ "$STORE" = PostgreSQL ]; then
  pgdata=$(psql "$DB" -XAtc 'SHOW data_directory' 2>/dev/null || true)
  [ -n "$pgdata" ] && [ -r "$pgdata/postmaster.pid" ] && PGPM=$(head -n 1 "$pgdata/postmaster.pid")
  [ -n "$PGPM" ] && [ -r "/proc/$PGPM/stat" ] || PGPM=""
fi
pg_cpu_s() {
  local t b=0 c v
  t=$(awk '{print $14+$15+$16+$17}' "/proc/$PGPM/stat")
  for c in $(pgrep -P "$PGPM"); do
    v=$(awk '{print $14+$15}' "/proc/$c/stat" 2>/dev/null || echo 0)
    t=$((t + v))
    # A client backend's title: "postgres: USER DATABASE HOST(PORT) STATE" (or [local] on a socket).
    if tr '\0' ' ' <"/proc/$c/cmdline" 2>/dev/null | grep -qE '^postgres: [^ ]+ [^ ]+ (\[local\]|[0-9A-Fa-f.:]+\([0-9]+\))'; then
      b=$((b + v))
    fi
  done
  awk -v t="$t" -v b="$b" -v hz="$(getconf CLK_TCK)" 'BEGIN{print t/hz, b/hz}'
}
cpu=()
for N in $COUNTS; do
  echo "== $N agents: registering, then ${DURATION}s of heartbeats every ${INTERVAL}s" >&2
  s0=$(cpu_s "$SPID")
  /usr/bin/time -f '%U %S %e' -o "$WORK/loadgen-$N.time" \
    "$LOADGEN" --server "$URL" --api-key "$KEY" --agents "$N" --interval "$INTERVAL" --duration "$DURATION" \
    --connections "$CONNS" --json >"$WORK/loadgen-$N.json" 2>"$WORK/loadgen-$N.log" &
  LPID=$!
  # The server's CPU from the moment heartbeats start (registration excluded), for CPU per heartbeat.
  shb=""
  while kill -0 "$LPID" 2>/dev/null; do
    if grep -q 'heartbeats start' "$WORK/loadgen-$N.log" 2>/dev/null; then shb=$(cpu_s "$SPID"); break; fi
    sleep 0.05
  done
  # Steady state: from two intervals after the heartbeats start (each agent's first beats deliver its
  # first-registration benchmark run and schedule its spot checks, which a fleet that registered long
  # ago does not do) to the end, counted by the server's own heartbeat counter.
  ss0="" sc0="" pg0=""
  steady_from=$(( $(date +%s) + 2 * INTERVAL ))
  while kill -0 "$LPID" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$steady_from" ]; then
      ss0=$(cpu_s "$SPID"); sc0=$(heartbeats_served); [ -n "$PGPM" ] && pg0=$(pg_cpu_s); break
    fi
    sleep 0.2
  done
  wait "$LPID" || true
  s1=$(cpu_s "$SPID")
  sc1=$(heartbeats_served)
  pg1=""
  [ -n "$pg0" ] && pg1=$(pg_cpu_s)
  read -r pg0 pgb0 <<<"${pg0:-}"
  read -r pg1 pgb1 <<<"${pg1:-}"
  hbok=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["heartbeats"]["ok"])' \
    "$WORK/loadgen-$N.json" 2>/dev/null || echo 0)
  read -r lu ls le < <(tail -n 1 "$WORK/loadgen-$N.time") || true
  cpu+=("$N agents: CPU over ${le}s wall: gpunex-server $(awk -v a="$s0" -v b="$s1" 'BEGIN{printf "%.1f", b-a}') s, gpunex-loadgen $(awk -v a="$lu" -v b="$ls" 'BEGIN{printf "%.1f", a+b}') s (load average $(cut -d' ' -f1-3 /proc/loadavg))")
  cpu+=("$N agents: server CPU per heartbeat, steady state: $(awk -v a="$ss0" -v b="$s1" -v c0="$sc0" -v c1="$sc1" 'BEGIN{ if (a != "" && c1 > c0) printf "%.3f ms (%.1f s over %d heartbeats, from %d s after the first)", (b-a)/(c1-c0)*1000, b-a, c1-c0, 2*'"$INTERVAL"'; else print "? (run longer than two intervals)" }')")
  if [ -n "$pg1" ]; then
    cpu+=("$N agents: PostgreSQL CPU per heartbeat, steady state: $(awk -v a="$pg0" -v b="$pg1" -v ba="$pgb0" -v bb="$pgb1" -v c0="$sc0" -v c1="$sc1" 'BEGIN{ if (c1 > c0) printf "%.3f ms (%.1f s in the same window; client backends %.3f ms, the rest background work: autovacuum after the registrations weighs in short runs)", (b-a)/(c1-c0)*1000, b-a, (bb-ba)/(c1-c0)*1000; else print "?" }')")
  fi
  cpu+=("$N agents: server CPU per heartbeat: $(awk -v a="${shb:-$s1}" -v b="$s1" -v n="$hbok" 'BEGIN{ if (n > 0) printf "%.3f ms (%.1f s over %d heartbeats, registration excluded)", (b-a)/n*1000, b-a, n; else print "?" }')")
  # The loadgen does the same work per heartbeat on any build of the server, so its CPU time measures how
  # fast this (shared, virtual) machine ran meanwhile: the ratio moves less from run to run than the
  # milliseconds above, and compares two builds run one after the other better.
  cpu+=("$N agents: server CPU / loadgen CPU: $(awk -v a="$s0" -v b="$s1" -v u="$lu" -v s="$ls" 'BEGIN{ if (u + s > 0) printf "%.2f", (b-a)/(u+s); else print "?" }') (registration included in both)")
  tail -n 3 "$WORK/loadgen-$N.log" >&2
  curl -s "$URL/metrics" >"$WORK/metrics-$N.txt" || true
done

echo
printf '%-8s %8s %9s %9s %8s %8s %8s %7s %8s %9s\n' agents "reg s" "hb/s" "target/s" "p50 ms" "p99 ms" "max ms" errors missed "send lag"
for N in $COUNTS; do
  python3 - "$WORK/loadgen-$N.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"{'?':<8} loadgen failed: {e}"); sys.exit()
r, h = d["registration"], d["heartbeats"]
print(f"{d['agents']:<8} {r['seconds']:>8.1f} {h['per_second']:>9.0f} {h['target_per_second']:>9.0f} "
      f"{h['p50_ms']:>8.1f} {h['p99_ms']:>8.1f} {h['max_ms']:>8.1f} {h['errors'] + r['errors']:>7} "
      f"{h.get('missed', 0):>8} {h['max_send_lag_ms']/1000:>8.1f}s")
for k in (r, h):
    if k["first_error"]: print("   first error:", k["first_error"][:200])
PY
done
echo "errors: HTTP or transport failures; missed: beats that fell due but were never sent because every"
echo "connection was still waiting on the server (send lag: the longest a due beat waited for a connection)."
echo "nginx static 200 (wrk -t2 -c$CONNS -d10s): $NRPS requests/s, p50 $NP50, p99 $NP99"
printf '%s\n' "${cpu[@]}"
echo "($(nproc) cores, gpunex-server $BIN, $STORE, ${CONNS} keep-alive connections, ${DURATION}s of heartbeats per row)"
# Where the server's time went during each row, from its /metrics histograms (delta over the row):
# requests and store statements, count, mean and the p99 bucket bound.
echo
echo "server-side time per row (from /metrics; p99 = upper bound of the bucket holding the 99th percentile):"
prev="$WORK/metrics-before.txt"
for N in $COUNTS; do
  python3 - "$prev" "$WORK/metrics-$N.txt" "$N" <<'PY'
import re, sys
def load(f):
    out = {}
    try: lines = open(f).read().splitlines()
    except OSError: return out
    for l in lines:
        m = re.match(r'^(gpunex_(?:http_request|store_statement)_duration_seconds)_(bucket|sum|count)\{(.*)\} (\S+)$', l)
        if not m: continue
        name, kind, labels, v = m.groups()
        le = re.search(r'le="([^"]+)"', labels)
        key = re.sub(r',?le="[^"]+"', '', labels)
        if 'route=' in key and '/v1/agent/' not in key: continue
        d = out.setdefault(key, {'b': {}, 'sum': 0.0, 'count': 0.0})
        if kind == 'bucket': d['b'][le.group(1)] = float(v)
        else: d[kind] = float(v)
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
print(f"-- {sys.argv[3]} agents")
for key, d in sorted(b.items()):
    p = a.get(key, {'b': {}, 'sum': 0.0, 'count': 0.0})
    n = d['count'] - p['count']
    if n <= 0: continue
    mean = (d['sum'] - p['sum']) / n * 1000
    p99 = '?'
    for le in sorted(d['b'], key=lambda x: float('inf') if x == '+Inf' else float(x)):
        if d['b'][le] - p['b'].get(le, 0) >= 0.99 * n:
            p99 = le if le == '+Inf' else f"{float(le)*1000:g}"; break
    print(f"   {key:<40} {int(n):>9} calls  mean {mean:8.2f} ms  p99 <= {p99} ms")
PY
  prev="$WORK/metrics-$N.txt"
done
