#!/usr/bin/env bash
# The C++ suites, and the API suites against sanitized server binaries, under
# AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/, SQLite).
# Usage: scripts/asan.sh [cpp|api|rentals|--build-only]: one part (make test runs them as tests of
# their own, side by side, the API folder in two halves by GPUNEX_TEST_SHARD: tests/js/run-tests.sh),
# all three without an argument; --build-only builds and stops (scripts/test.sh builds ahead in the
# background).
set -euo pipefail
cd "$(dirname "$0")/.."
part=${1:-all}
case $part in
  cpp | api | rentals | all | --build-only) ;;
  *) echo "usage: scripts/asan.sh [cpp|api|rentals|--build-only]" >&2; exit 2 ;;
esac
# The lock keeps a build ahead (scripts/test.sh) and this one from running ninja on one tree at once.
# What the suites below run; the load generator and the GPU check tool are benchmarks, not tests.
mkdir -p build-asan
flock build-asan/.build-lock bash -c '
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGPUNEX_SANITIZE=ON >/dev/null
  ninja -C build-asan unit_tests store_tests agent_tests server_agent_tests protocol_tests container_tests rental_tests \
    gpunex-server gpunex-agent gpunex'
[[ $part == --build-only ]] && exit 0
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
if [[ $part == cpp || $part == all ]]; then
  build-asan/bin/unit_tests --gtest_brief=1
  build-asan/bin/store_tests --gtest_brief=1
  build-asan/bin/agent_tests --gtest_brief=1
  build-asan/bin/server_agent_tests --gtest_brief=1
  build-asan/bin/protocol_tests --gtest_brief=1
  # The container runtime against the engine make test started (GPUNEX_TEST_DOCKER_HOST).
  build-asan/bin/container_tests --gtest_brief=1
  build-asan/bin/rental_tests --gtest_brief=1
fi
# make_run.test.mjs drives scripts/run.sh end to end (about 80 s, 3-4 min sanitized): the server and
# agent code it reaches is what agent.test.mjs and benchmarks.test.mjs run here too, so the sanitized
# pass leaves it to api_sqlite and api_postgres and keeps `make test` within its 30 minutes.
if [[ $part == api || $part == all ]]; then
  GPUNEX_TEST_EXCLUDE="make_run.test.mjs" \
    GPUNEX_BIN_DIR=$PWD/build-asan/bin GPUNEX_TEST_DB=sqlite tests/js/run-tests.sh tests/js/api --test-reporter=dot
fi
# Rentals and payouts: the API, the settlement crash and the USDC payouts, sanitized; the clock-driven,
# end-to-end and 200-payout fault files reach the same server code (and the agent's is in
# rental_tests above) and are left to rentals_sqlite and rentals_postgres.
if [[ $part == rentals || $part == all ]]; then
  GPUNEX_TEST_EXCLUDE="rentals_clock.test.mjs rentals_e2e.test.mjs payouts_faults.test.mjs" \
    GPUNEX_BIN_DIR=$PWD/build-asan/bin GPUNEX_TEST_DB=sqlite tests/js/run-tests.sh tests/js/rentals --test-reporter=dot
fi
