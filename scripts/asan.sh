#!/usr/bin/env bash
# The C++ suites, and the API scenarios against sanitized server binaries, under
# AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/, SQLite).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGPUNEX_SANITIZE=ON >/dev/null
ninja -C build-asan
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
build-asan/bin/unit_tests --gtest_brief=1
build-asan/bin/store_tests --gtest_brief=1
GPUNEX_BIN_DIR=$PWD/build-asan/bin GPUNEX_TEST_DB=sqlite node --test --test-concurrency=1 --test-reporter=dot tests/js/api/
