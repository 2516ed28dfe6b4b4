#!/usr/bin/env bash
# Requests per second for GET /healthz and for a static dashboard file (GET /favicon.svg) on
# gpunex-server (SQLite, Release build), and for a static 200 from nginx on loopback, measured by wrk
# in the same run with the same threads, connections and duration. Prints each and its ratio to
# nginx (issue #20's target: >= 0.7). Usage: bench/http.sh [DURATION_S] [CONNECTIONS] [THREADS]
#   GPUNEX_BIN_DIR: where gpunex-server is (default build/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
CONNS=${2:-64}
THREADS=${3:-2}
BIN=${GPUNEX_BIN_DIR:-build/bin}
command -v wrk >/dev/null || { echo "wrk is missing: run scripts/deps.sh" >&2; exit 1; }
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { echo "nginx is missing: run scripts/deps.sh" >&2; exit 1; }
. bench/lib/nginx.sh

WORK=$(mktemp -d /tmp/gpunex-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# gpunex-server, access log off so the figure is the server, not the log writer.
"$BIN/gpunex-server" --listen 127.0.0.1:0 --port-file "$WORK/port" --db "sqlite:$WORK/bench.db" \
  --log-level warn --access-log false >"$WORK/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
GPORT=$(cat "$WORK/port")

NPORT=$(free_port)
start_nginx "$NPORT" "$WORK/nginx"
pids+=("$NGINX_PID")

# CPU seconds (user+system) of processes so far: on a shared machine a steadier figure than requests/s.
cpu_s() { for p in "$@"; do cat "/proc/$p/stat"; done | awk -v hz="$(getconf CLK_TCK)" '{s += ($14+$15)/hz} END {print s}'; }
# wrk's requests/s; the CPU microseconds per request of processes $2... goes to $WORK/cpu.
rps() {
  local url=$1 c0 c1 r
  shift
  c0=$(cpu_s "$@")
  r=$(wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" --latency "$url" | tee -a "$WORK/wrk.log" | awk '/Requests\/sec/ {print $2}')
  c1=$(cpu_s "$@")
  awk -v a="$c0" -v b="$c1" -v r="$r" -v d="$DURATION" 'BEGIN { printf "%.1f\n", (b-a)/(r*d)*1e6 }' >"$WORK/cpu"
  echo "$r"
}
lat() { awk -v tag="$1" '$0 ~ tag {f=1} f && /99%/ {print $2; exit}' "$WORK/wrk.log"; }

curl -sf "http://127.0.0.1:$GPORT/healthz" >/dev/null
curl -sf "http://127.0.0.1:$GPORT/favicon.svg" >/dev/null
curl -sf "http://127.0.0.1:$NPORT/" >/dev/null
echo "== gpunex healthz" >>"$WORK/wrk.log"
GPID=${pids[0]}
NWORKERS=$(pgrep -P "$NGINX_PID" | tr '\n' ' ')
G=$(rps "http://127.0.0.1:$GPORT/healthz" "$GPID"); GC=$(cat "$WORK/cpu")
echo "== gpunex static" >>"$WORK/wrk.log"
S=$(rps "http://127.0.0.1:$GPORT/favicon.svg" "$GPID"); SC=$(cat "$WORK/cpu")
echo "== nginx" >>"$WORK/wrk.log"
# shellcheck disable=SC2086
N=$(rps "http://127.0.0.1:$NPORT/" $NWORKERS); NC=$(cat "$WORK/cpu")
GP99=$(lat "== gpunex healthz")
SP99=$(lat "== gpunex static")
NP99=$(lat "== nginx")

printf '%-34s %12s %10s %8s %12s\n' "loopback" "requests/s" "p99" "/nginx" "server CPU"
row() {
  printf '%-34s %12s %10s %8s %9s us\n' "$1" "$2" "$3" "$(awk -v g="$2" -v n="$N" 'BEGIN { printf "%.2f", g/n }')" "$4"
}
row "gpunex GET /healthz (SQLite)" "$G" "$GP99" "$GC"
row "gpunex GET /favicon.svg (static)" "$S" "$SP99" "$SC"
row "nginx static 200" "$N" "$NP99" "$NC"
echo "(wrk -t$THREADS -c$CONNS -d${DURATION}s each, one after the other; $(nproc) cores; target /nginx >= 0.7;"
echo " server CPU: user+system microseconds per request of gpunex-server, or of nginx's workers)"
