#!/usr/bin/env bash
# The agent's network benchmarks (HTTP to gpunex-server's /v1/bench/net/*)
# beside Debian's iperf3 on the same loopback: one TCP stream each way, the
# same number of bytes per sample (iperf3 -n), medians of 3 runs. The two take
# turns (agent, iperf3, agent, ...) so that load from other processes on a
# shared machine falls on both alike; 1 GiB samples last about a second at
# loopback speeds, where 256 MiB ones (0.2 s) are mostly scheduling noise.
# iperf3 moves 512 KiB per read and write (-l), the size the agent's client reads
# with and the server reads uploads with: on loopback both sides are bound by the
# CPU, and the figure follows the I/O size (iperf3 -l 128K, its default, gave
# 14 Gbit/s here where -l 512K gave 20 and -l 1M 25).
# Prints both and their ratio (agent / iperf3).
# Usage: bench/network-vs-iperf3.sh [MIB_PER_SAMPLE]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${GPUNEX_BIN_DIR:-build/bin}
MIB=${1:-1024}
command -v iperf3 >/dev/null || { echo "iperf3 is missing: run scripts/deps.sh" >&2; exit 1; }
command -v node >/dev/null || { echo "node is missing: run scripts/deps.sh" >&2; exit 1; }
for b in gpunex-agent gpunex-server; do
  [ -x "$BIN/$b" ] || { echo "build $b first (ninja -C build $b)" >&2; exit 1; }
done
WORK=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

GPUNEX_BIN_DIR=$(cd "$BIN" && pwd) node bench/lib/provider-server.mjs "$WORK/server" >"$WORK/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do [ -s "$WORK/server" ] && break; sleep 0.1; done
[ -s "$WORK/server" ] || { echo "gpunex-server did not start:"; cat "$WORK/server.log"; exit 1; } >&2
read -r URL KEY <"$WORK/server"

median3() { sort -g | sed -n 2p; }
# The agent's figure for case $1 (its median of 3 samples of MIB; 60 s allowed, far more than loopback needs), Mbit/s.
agent() {
  GPUNEX_API_KEY=$KEY "$BIN/gpunex-agent" bench --only "$1" --json --server "$URL" \
    --net-bytes "$((MIB * 1048576))" --net-time 60 >"$WORK/agent.json"
  jq -r --arg k "$1" '.report.machine[] | select(.key == $k) | .median' "$WORK/agent.json"
}

PORT=$(free_port)
iperf() {  # a one-shot iperf3 server per run; $1: "" (client sends: upload) or -R (server sends: download); prints Mbit/s
  iperf3 -s -1 -p "$PORT" >/dev/null 2>&1 &
  local spid=$!
  sleep 0.2
  iperf3 -c 127.0.0.1 -p "$PORT" -n "${MIB}M" -l 512K $1 -J >"$WORK/iperf.json"
  wait "$spid" 2>/dev/null || true
  jq -r '.end.sum_received.bits_per_second / 1e6' "$WORK/iperf.json"
}
for i in 1 2 3; do
  agent network.download >>"$WORK/agent.down"
  iperf -R >>"$WORK/iperf.down"
  agent network.upload >>"$WORK/agent.up"
  iperf "" >>"$WORK/iperf.up"
done
GPUNEX_API_KEY=$KEY "$BIN/gpunex-agent" bench --only network.latency_p50,network.latency_p99 --json \
  --server "$URL" >"$WORK/latency.json"
latency() { jq -r --arg k "$1" '.report.machine[] | select(.key == $k) | .median' "$WORK/latency.json"; }

echo "loopback, one TCP stream, ${MIB} MiB per sample, 512 KiB reads and writes, medians of 3 runs taking turns (agent: HTTP/1.1 via libcurl to gpunex-server)"
printf '%-20s %16s %16s %8s\n' metric agent iperf3 ratio
row() {
  awk -v m="$1" -v a="$2" -v f="$3" 'BEGIN {
    r = (f > 0) ? a / f : 0
    printf "%-20s %9.0f Mbit/s %9.0f Mbit/s %8.3f %s\n", m, a, f, r, (r >= 0.85 && r <= 1.15) ? "ok" : "OUTSIDE +-15%"
  }'
}
row network.download "$(median3 <"$WORK/agent.down")" "$(median3 <"$WORK/iperf.down")"
row network.upload "$(median3 <"$WORK/agent.up")" "$(median3 <"$WORK/iperf.up")"
printf '%-20s %9.3f ms (p99 %.3f ms)\n' network.latency_p50 "$(latency network.latency_p50)" "$(latency network.latency_p99)"
