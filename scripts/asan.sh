#!/usr/bin/env bash
# The C++ suites, and the API suites against sanitized server binaries, under
# AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/, SQLite).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGPUNEX_SANITIZE=ON >/dev/null
# What the suites below run; the load generator and the GPU check tool are benchmarks, not tests.
ninja -C build-asan unit_tests store_tests agent_tests server_agent_tests gpunex-server gpunex-agent gpunex
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
build-asan/bin/unit_tests --gtest_brief=1
build-asan/bin/store_tests --gtest_brief=1
build-asan/bin/agent_tests --gtest_brief=1
build-asan/bin/server_agent_tests --gtest_brief=1
GPUNEX_BIN_DIR=$PWD/build-asan/bin GPUNEX_TEST_DB=sqlite tests/js/run-tests.sh tests/js/api --test-reporter=dot
