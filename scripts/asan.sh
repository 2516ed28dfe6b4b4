#!/usr/bin/env bash
# The C++ suites under AddressSanitizer + UndefinedBehaviorSanitizer, in build-asan/.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGPUNEX_SANITIZE=ON >/dev/null
ninja -C build-asan unit_tests store_tests
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
build-asan/bin/unit_tests --gtest_brief=1
build-asan/bin/store_tests --gtest_brief=1
