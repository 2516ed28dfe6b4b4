#!/usr/bin/env bash
# Builds the libFuzzer target with clang (+ ASan/UBSan) in build-fuzz/ and runs
# it for N seconds (default 60) from the seed corpus. Exit non-zero on a crash.
# `scripts/fuzz.sh --build-only` builds and stops (scripts/test.sh builds ahead in the background).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${1:-60}
# The lock keeps a build ahead (scripts/test.sh) and this one from running ninja on one tree at once.
mkdir -p build-fuzz
flock build-fuzz/.build-lock bash -c '
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGPUNEX_FUZZ=ON \
    -DGPUNEX_TESTS=OFF >/dev/null
  ninja -C build-fuzz fuzz_request'
[[ $SECONDS_TO_RUN == --build-only ]] && exit 0
WORK=$(mktemp -d /tmp/gpunex-fuzz.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cp tests/fuzz/corpus/* "$WORK/"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
build-fuzz/bin/fuzz_request -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -timeout=10 \
  -rss_limit_mb=4096 -artifact_prefix="$WORK/" -print_final_stats=1 "$WORK" 2>&1 | tail -n 25
echo "fuzz: ${SECONDS_TO_RUN}s without a crash"
