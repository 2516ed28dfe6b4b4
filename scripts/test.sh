#!/usr/bin/env bash
# `make test`: builds, starts the services the tests need (a throwaway
# PostgreSQL cluster), runs every test through ctest, and stops the services.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-Release}
# One test more than cores: the API, rentals and browser suites wait on servers, agents and browsers
# most of the time (api_sqlite: about 100 s of CPU in 320 s), and the builds ahead (below, nice 19)
# take what CPU they leave.
JOBS=${JOBS:-$(($(nproc) + 1))}

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" >/dev/null
ninja -C "$BUILD_DIR"

export GPUNEX_TEST_OUTPUT="$ROOT/test-output"
rm -rf "$GPUNEX_TEST_OUTPUT"
mkdir -p "$GPUNEX_TEST_OUTPUT"
WORK=$(mktemp -d /tmp/gpunex-test.XXXXXX)
chmod 0755 "$WORK"  # the postgres user (when run as root) must reach the cluster folder
PGDIR="$WORK/pg"
cleanup() {
  if [[ -n ${BUILD_AHEAD:-} ]]; then
    kill -- "-$BUILD_AHEAD" 2>/dev/null || true  # its own process group: the scripts, flock, ninja
  fi
  scripts/pg.sh stop "$PGDIR" >/dev/null 2>&1 || true
  scripts/podman.sh stop "$WORK/podman" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

GPUNEX_TEST_PG_URL=$(scripts/pg.sh start "$PGDIR")
export GPUNEX_TEST_PG_URL
echo "test: PostgreSQL at $GPUNEX_TEST_PG_URL"
# The container engine for the container tests: Podman's Docker-compatible API service.
GPUNEX_TEST_DOCKER_HOST=$(scripts/podman.sh start "$WORK/podman")
export GPUNEX_TEST_DOCKER_HOST
echo "test: container engine (Podman, Docker API) at $GPUNEX_TEST_DOCKER_HOST"
# Every test's temporary files (the servers' data folders, the browsers' profiles, the CLI homes) go
# under this run's folder and are removed with it: they were left in /tmp (9,244 entries and 3.8 GB
# there after a week of runs). Set after PostgreSQL and Podman start, which keep their own folders above.
export TMPDIR="$WORK/tmp"
mkdir -m 1777 "$TMPDIR"

# The sanitizer and fuzz trees build ahead, in the background at the lowest CPU priority, while the
# first suites run: those wait on servers, agents and browsers much of the time, and nice 19 takes
# only the CPU they leave. The sanitizer and fuzz tests (last by their COST) then find their
# binaries built, or wait for them (each script takes its tree's lock, so two builds never overlap
# on one tree). A failure here is reported by those tests. The log says when each tree was ready.
# Only for a whole run: `make test` with ctest arguments (-R api_sqlite) builds nothing extra.
if (($# == 0)); then
  setsid nice -n 19 bash -c 'scripts/asan.sh --build-only && echo "build-ahead: build-asan ready at $(date -u +%T)" &&
    scripts/fuzz.sh --build-only && echo "build-ahead: build-fuzz ready at $(date -u +%T)"' \
    >"$GPUNEX_TEST_OUTPUT/build-ahead.log" 2>&1 &
  BUILD_AHEAD=$!
fi

echo "test: ctest -j $JOBS from $(date -u +%T)"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" --timeout 900 "$@"
