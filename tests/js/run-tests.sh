#!/usr/bin/env bash
# Runs the test files of a folder with `node --test`, one file at a time; fails if any file failed.
# Usage: tests/js/run-tests.sh DIR [node --test options, e.g. --test-reporter=dot]. $NODE picks node.
# $GPUNEX_TEST_EXCLUDE: space-separated file names of DIR not to run here (each is named in the output).
# $GPUNEX_TEST_SHARD=K/N: only the K-th of N shares of DIR's files (every N-th file from the K-th, in
# name order), so that one folder can run as N tests side by side; all N shares run every file once.
# With $GPUNEX_TEST_OUTPUT set (make test sets it), each file's seconds are added to file-times.tsv there:
# folder, store, build tree, file, seconds, passed or failed.
#
# One at a time because the files start servers, agents and browsers with timed expectations (a
# machine Online within 20 s) that a crowded host misses. `node --test --test-concurrency=1 DIR`
# does that on Node >= 20.10, but Debian bookworm's own nodejs (18.19, which scripts/deps.sh
# installs when no node is on PATH) has no --test-concurrency and runs a folder's files in
# parallel. One `node --test FILE` after another behaves the same on both.
set -uo pipefail
dir=$1
shift
failed=()
shard_k=1 shard_n=1
if [[ -n ${GPUNEX_TEST_SHARD:-} ]]; then
  if [[ ! $GPUNEX_TEST_SHARD =~ ^([1-9][0-9]*)/([1-9][0-9]*)$ ]] || ((BASH_REMATCH[1] > BASH_REMATCH[2])); then
    echo "run-tests: GPUNEX_TEST_SHARD must be K/N with 1 <= K <= N, not '$GPUNEX_TEST_SHARD'" >&2
    exit 2
  fi
  shard_k=${BASH_REMATCH[1]} shard_n=${BASH_REMATCH[2]}
fi
i=0
for file in "$dir"/*.test.mjs; do
  i=$((i + 1))
  (((i - 1) % shard_n == shard_k - 1)) || continue
  if [[ " ${GPUNEX_TEST_EXCLUDE:-} " == *" $(basename "$file") "* ]]; then
    echo "run-tests: $(basename "$file") is not run in this suite (GPUNEX_TEST_EXCLUDE)"
    continue
  fi
  start=$SECONDS
  status=passed
  "${NODE:-node}" --test "$@" "$file" || { failed+=("$(basename "$file")"); status=failed; }
  # Each file's time, to split a folder into shares of equal length (GPUNEX_TEST_SHARD) from figures.
  if [[ -n ${GPUNEX_TEST_OUTPUT:-} ]]; then
    printf '%s\t%s\t%s\t%s\t%d\t%s\n' "$(basename "$dir")" "${GPUNEX_TEST_DB:-}" \
      "$(basename "$(dirname "${GPUNEX_BIN_DIR:-build/bin}")")" "$(basename "$file")" $((SECONDS - start)) "$status" \
      >>"$GPUNEX_TEST_OUTPUT/file-times.tsv"
  fi
done
if ((${#failed[@]})); then
  echo "run-tests: failed in $dir: ${failed[*]}" >&2
  exit 1
fi
