#!/usr/bin/env bash
# Two builds of gpunex-server compared on the heartbeat path: bench/heartbeats.sh with 20,000 agents run
# for each build in turn (A, B, A, B, ...), a fresh store each run, so that both see the same machine
# through the same minutes. Prints each run's steady-state CPU per heartbeat (the server's, and
# PostgreSQL's when the store is a PostgreSQL on this machine), then both builds' figures side by side.
# One run's figure swings by 10% or more on a shared machine (a reliability round or a telemetry flush
# more in its window); compare the rounds, not one pair.
# Usage: bench/heartbeats-ab.sh BIN_DIR_A BIN_DIR_B [ROUNDS] [DURATION_S] [AGENTS]
#   (defaults 2 rounds, 150 s, 20000 agents); each BIN_DIR holds a gpunex-server.
#   GPUNEX_BENCH_PG: a PostgreSQL URL where this may CREATE and DROP the databases gpunex_ab_<n>
#   (e.g. postgresql://postgres@127.0.0.1:55432/postgres, scripts/pg.sh's); without it, SQLite.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n 2,12p "$0" >&2; exit 2; }
A=$1 B=$2 ROUNDS=${3:-2} DURATION=${4:-150} AGENTS=${5:-20000}
for d in "$A" "$B"; do [ -x "$d/gpunex-server" ] || { echo "$d/gpunex-server is missing" >&2; exit 1; }; done
PG=${GPUNEX_BENCH_PG:-}
OUT=$(mktemp -d /tmp/gpunex-hb-ab.XXXXXX)
db_url() { echo "${PG%/*}/gpunex_ab_$1"; }
drop_db() { [ -z "$PG" ] || psql "$PG" -Xqc "DROP DATABASE IF EXISTS gpunex_ab_$1" >/dev/null 2>&1; }
# "server PG" figures (ms of CPU per heartbeat in the steady state) from a heartbeats.sh output.
figures() {
  local s p
  s=$(sed -n 's/.*server CPU per heartbeat, steady state: \([0-9.]*\) ms.*/\1/p' "$1" | tail -n 1)
  p=$(sed -n 's/.*PostgreSQL CPU per heartbeat, steady state: \([0-9.]*\) ms.*/\1/p' "$1" | tail -n 1)
  echo "${s:-?} ${p:--}"
}
n=0
for round in $(seq "$ROUNDS"); do
  for side in A B; do
    n=$((n + 1))
    dir=$([ "$side" = A ] && echo "$A" || echo "$B")
    db=""
    if [ -n "$PG" ]; then
      drop_db "$n"
      psql "$PG" -Xqc "CREATE DATABASE gpunex_ab_$n" >/dev/null
      db=$(db_url "$n")
    fi
    GPUNEX_BIN_DIR=$dir GPUNEX_BENCH_DB=$db bench/heartbeats.sh "$DURATION" "$AGENTS" >"$OUT/$side-$round.txt" 2>&1 || true
    drop_db "$n"
    read -r s p < <(figures "$OUT/$side-$round.txt")
    echo "round $round $side ($dir): server $s ms, PostgreSQL $p ms per heartbeat" >&2
    echo "$round $side $s $p" >>"$OUT/figures"
  done
done
echo
printf '%-6s %-22s %-22s\n' round "A: server / database" "B: server / database"
for round in $(seq "$ROUNDS"); do
  a=$(awk -v r="$round" '$1 == r && $2 == "A" {print $3 " / " $4}' "$OUT/figures")
  b=$(awk -v r="$round" '$1 == r && $2 == "B" {print $3 " / " $4}' "$OUT/figures")
  printf '%-6s %-22s %-22s\n' "$round" "$a ms" "$b ms"
done
echo "(A = $A, B = $B; $AGENTS agents, ${DURATION}s of heartbeats a run, steady state from 30 s after the first;"
echo " $([ -n "$PG" ] && echo "PostgreSQL, a fresh database a run" || echo "SQLite, a fresh file a run"); $(nproc) cores; each run's whole output in $OUT)"
