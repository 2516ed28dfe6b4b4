#!/usr/bin/env bash
# The clock guard: runs the C++ suites and the API scenarios with the system clock moved by
# Debian's libfaketime, so that a test which only passes on the day it was written fails on the
# day it is written. Usage: scripts/moved-clock.sh ahead-400d|monday-midnight [BUILD_DIR]
#
#   ahead-400d       the wall clock 400 days ahead of today
#   monday-midnight  the wall clock at the next Monday 23:59:30 UTC at least 400 days ahead, so
#                    the run crosses midnight into Tuesday (a new day, a new week-day) 30 s in
#
# Both are offsets ("+Ns"), not a fixed start ("@DATE"): with an offset every process (node,
# the server it starts, the agents) reads the same moved clock; with "@DATE" each process
# would start its own clock at DATE when it loads. FAKETIME_DONT_FAKE_MONOTONIC=1 keeps the
# monotonic clock real: with it faked, timed waits (condition variables, poll) hang.
#
# What does not run here, and why:
# - the browser tests: Chromium's sandboxed zygote and GPU processes do not load LD_PRELOAD
#   libraries consistently, so the page and the server would read different clocks;
# - the other API tests (TLS, mail, shutdown...): they exercise transports, not dates, and
#   already run once on the real clock; the scenarios cover every endpoint that compares a
#   time with the server's clock;
# - PostgreSQL itself: the cluster runs on the real clock. The server and the store pass their
#   own clock as query parameters, so the PostgreSQL store suite still runs here and fails if
#   a query starts reading the database's now() instead.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODE=${1:?usage: scripts/moved-clock.sh ahead-400d|monday-midnight [BUILD_DIR]}
BUILD_DIR=${2:-${BUILD_DIR:-build}}
case "$BUILD_DIR" in /*) BIN="$BUILD_DIR/bin" ;; *) BIN="$ROOT/$BUILD_DIR/bin" ;; esac
command -v faketime >/dev/null || { echo "moved-clock: faketime is missing (scripts/deps.sh installs it)" >&2; exit 1; }

now=$(date -u +%s)
case "$MODE" in
  ahead-400d) target=$((now + 400 * 86400)) ;;
  monday-midnight)
    base=$((now + 400 * 86400))
    # Days until the next Monday (date +%u: 1 = Monday) after the base day.
    dow=$(date -u -d "@$base" +%u)
    days=$(((8 - dow) % 7))
    ((days == 0)) && days=7
    day=$(date -u -d "@$((base + days * 86400))" +%F)
    target=$(date -u -d "$day 23:59:30" +%s)
    ;;
  *) echo "moved-clock: unknown mode $MODE (ahead-400d or monday-midnight)" >&2; exit 2 ;;
esac
offset=$((target - now))

# faketime appends libfaketime to LD_PRELOAD, so the passthrough (built beside the suites) comes first
# and keeps the monotonic timers Boost.Asio arms working: tests/support/timerfd_passthrough.cpp.
PASSTHROUGH="${BIN%/bin}/lib/timerfd_passthrough.so"
[ -f "$PASSTHROUGH" ] || { echo "moved-clock: $PASSTHROUGH is missing (built with the tests)" >&2; exit 1; }
export TZ=UTC FAKETIME_DONT_FAKE_MONOTONIC=1
moved() { LD_PRELOAD="$PASSTHROUGH${LD_PRELOAD:+:$LD_PRELOAD}" faketime -f "+${offset}s" "$@"; }
echo "moved-clock: $MODE: the clock reads $(moved date -u '+%a %F %T UTC') (real: $(date -u '+%F %T'))"

failed=()
run() {
  local name=$1
  shift
  echo "moved-clock: $name"
  if ! moved "$@"; then failed+=("$name"); fi
}
run unit_tests "$BIN/unit_tests" --gtest_brief=1
run server_agent_tests "$BIN/server_agent_tests" --gtest_brief=1
run agent_tests "$BIN/agent_tests" --gtest_brief=1
run store_sqlite "$BIN/store_tests" --gtest_brief=1 --gtest_filter='*/sqlite:StoreOpen.*'
if [ -n "${GPUNEX_TEST_PG_URL:-}" ]; then
  run store_postgres "$BIN/store_tests" --gtest_brief=1 --gtest_filter='*/postgres'
fi
backends=(sqlite)
[ -n "${GPUNEX_TEST_PG_URL:-}" ] && backends+=(postgres)
for backend in "${backends[@]}"; do
  run "api_scenarios_$backend" env GPUNEX_TEST_DB="$backend" GPUNEX_BIN_DIR="$BIN" \
    "${NODE:-node}" --test "$ROOT/tests/js/api/scenarios.test.mjs"
done

if ((${#failed[@]})); then
  echo "moved-clock: $MODE: failed: ${failed[*]}" >&2
  exit 1
fi
echo "moved-clock: $MODE: all passed"
