#!/usr/bin/env bash
# Runs the test files of a folder with `node --test`, one file at a time; fails if any file failed.
# Usage: tests/js/run-tests.sh DIR [node --test options, e.g. --test-reporter=dot]. $NODE picks node.
# $GPUNEX_TEST_EXCLUDE: space-separated file names of DIR not to run here (each is named in the output).
# $GPUNEX_TEST_SHARD=K/N: only the K-th of N shares of DIR's files, so that one folder can run as N tests
# side by side; all N shares run every file once. Without weights a share is every N-th file from the
# K-th, in name order. $GPUNEX_TEST_WEIGHTS=FILE (lines `name<TAB>seconds`, as file-times.tsv's 4th and
# 5th columns) makes the shares about equally long instead: longest file first, each to the share with
# the fewest seconds so far (a file the weights do not name counts $GPUNEX_TEST_WEIGHT_DEFAULT, 10 s).
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
files=("$dir"/*.test.mjs)
if ((shard_n > 1)) && [[ -n ${GPUNEX_TEST_WEIGHTS:-} ]]; then
  [[ -f $GPUNEX_TEST_WEIGHTS && -r $GPUNEX_TEST_WEIGHTS ]] ||
    { echo "run-tests: cannot read GPUNEX_TEST_WEIGHTS=$GPUNEX_TEST_WEIGHTS" >&2; exit 2; }
  declare -A weight=()
  # Other lines (comments) are skipped; a last line without its newline still counts.
  while IFS=$'\t' read -r name seconds _ || [[ -n ${name:-} ]]; do
    if [[ ${seconds:-} =~ ^[0-9]+$ ]]; then weight[$name]=$seconds; fi
    name=""
  done <"$GPUNEX_TEST_WEIGHTS"
  load=() mine=()
  for ((k = 1; k <= shard_n; k++)); do load[k]=0; done
  # Longest first, ties by name, so that every share computes the same split.
  while read -r seconds path; do
    least=1
    for ((k = 2; k <= shard_n; k++)); do ((load[k] < load[least])) && least=$k; done
    load[least]=$((load[least] + seconds))
    ((least == shard_k)) && mine+=("$path")
  done < <(for path in "${files[@]}"; do
    name=${path##*/}
    seconds=${weight[$name]:-${GPUNEX_TEST_WEIGHT_DEFAULT:-10}}
    [[ " ${GPUNEX_TEST_EXCLUDE:-} " == *" $name "* ]] && seconds=0  # listed below, not run
    printf '%s %s\n' "$seconds" "$path"
  done | sort -k1,1nr -k2,2)
  echo "run-tests: share $shard_k/$shard_n: ${#mine[@]} files, about ${load[shard_k]} s by $GPUNEX_TEST_WEIGHTS"
  files=()
  ((${#mine[@]})) && mapfile -t files < <(printf '%s\n' "${mine[@]}" | sort)
  shard_n=1 shard_k=1  # the share is chosen: the loop below runs all of it
fi
i=0
for file in "${files[@]}"; do
  i=$((i + 1))
  (((i - 1) % shard_n == shard_k - 1)) || continue
  if [[ " ${GPUNEX_TEST_EXCLUDE:-} " == *" $(basename "$file") "* ]]; then
    echo "run-tests: $(basename "$file") is not run in this suite (GPUNEX_TEST_EXCLUDE)"
    continue
  fi
  start=$SECONDS
  status=passed
  # The file's temporary files (servers' data folders, browser profiles, CLI homes) in a folder of its
  # own: removed when the file passed, kept (and named) when it failed.
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpunex-file.XXXXXX") || { echo "run-tests: cannot make a temporary folder" >&2; exit 2; }
  chmod 0755 "$tmp"  # the postgres user (when run as root) must reach the clusters tests make in it
  TMPDIR=$tmp "${NODE:-node}" --test "$@" "$file" || { failed+=("$(basename "$file")"); status=failed; }
  if [[ $status == passed ]]; then
    rm -rf "$tmp" 2>/dev/null || true
  else
    echo "run-tests: $(basename "$file")'s temporary files are kept in $tmp" >&2
  fi
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
