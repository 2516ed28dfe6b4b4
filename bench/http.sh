#!/usr/bin/env bash
# Requests per second for GET /healthz on gpunex-server (SQLite, Release
# build), and for a static 200 from nginx on loopback, measured by wrk in the
# same run with the same threads, connections and duration. Prints both and
# their ratio. Usage: bench/http.sh [DURATION_S] [CONNECTIONS] [THREADS]
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

rps() { wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" --latency "$1" | tee -a "$WORK/wrk.log" | awk '/Requests\/sec/ {print $2}'; }
lat() { awk -v tag="$1" '$0 ~ tag {f=1} f && /99%/ {print $2; exit}' "$WORK/wrk.log"; }

curl -sf "http://127.0.0.1:$GPORT/healthz" >/dev/null
curl -sf "http://127.0.0.1:$NPORT/" >/dev/null
echo "== gpunex" >>"$WORK/wrk.log"
G=$(rps "http://127.0.0.1:$GPORT/healthz")
echo "== nginx" >>"$WORK/wrk.log"
N=$(rps "http://127.0.0.1:$NPORT/")
GP99=$(lat "== gpunex")
NP99=$(lat "== nginx")

printf '%-28s %14s %10s\n' "GET /healthz, loopback" "requests/s" "p99"
printf '%-28s %14s %10s\n' "gpunex-server (SQLite)" "$G" "$GP99"
printf '%-28s %14s %10s\n' "nginx static 200" "$N" "$NP99"
awk -v g="$G" -v n="$N" 'BEGIN { printf "ratio gpunex/nginx: %.2f  (wrk -t%s -c%s -d%ss, %s cores)\n", g/n, "'"$THREADS"'", "'"$CONNS"'", "'"$DURATION"'", "'"$(nproc)"'" }'
