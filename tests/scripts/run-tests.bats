#!/usr/bin/env bats
# tests/js/run-tests.sh's shares (GPUNEX_TEST_SHARD, GPUNEX_TEST_WEIGHTS): every file runs in exactly one
# share, the weighted shares are about equally long, and a failing file fails its share; each file's
# temporary files are removed when it passed and kept when it failed.
# A stand-in node records the files it is given. Run: bats tests/scripts

setup() {
  ROOT="$(cd "$(dirname "$BATS_TEST_FILENAME")/../.." && pwd)"
  WORK="$(mktemp -d)"
  mkdir -p "$WORK/dir"
  export RAN="$WORK/ran"
  : >"$RAN"
  cat >"$WORK/node" <<'SH'
#!/usr/bin/env bash
file=${@: -1}
echo "$(basename "$file")" >>"$RAN"
# Leaves a file in its temporary folder, as a test's server or browser does, and says where.
mkdir -p "$TMPDIR/server" && echo data >"$TMPDIR/server/db" && echo "$TMPDIR" >>"$RAN.tmp"
[[ $(basename "$file") != "${FAIL_FILE:-}" ]]
SH
  chmod +x "$WORK/node"
  export NODE="$WORK/node"
  # One long file, two middling, several short: the every-other split puts 100+30+... on one side.
  printf '# a comment line is ignored\nalpha.test.mjs\t100\nbravo.test.mjs\t5\ncharlie.test.mjs\t30\n' >"$WORK/w.tsv"
  # A comment between figures, and a last line without its newline, are read as they should be.
  printf 'delta.test.mjs\t5\n# refreshed by hand\necho.test.mjs\t60\nfoxtrot.test.mjs\t5\ngolf.test.mjs\t40' >>"$WORK/w.tsv"
  for f in alpha bravo charlie delta echo foxtrot golf hotel; do : >"$WORK/dir/$f.test.mjs"; done
  unset GPUNEX_TEST_SHARD GPUNEX_TEST_WEIGHTS GPUNEX_TEST_EXCLUDE GPUNEX_TEST_OUTPUT FAIL_FILE
}

teardown() {
  rm -rf "$WORK"
}

seconds_of() {  # the weights of the files the shares ran (hotel: the default, 10)
  local total=0 f s
  while read -r f; do
    s=$(awk -F'\t' -v f="$f" '$1 == f { print $2 }' "$WORK/w.tsv")
    total=$((total + ${s:-10}))
  done
  echo "$total"
}

@test "without a share every file runs once, in name order" {
  run bash "$ROOT/tests/js/run-tests.sh" "$WORK/dir"
  [ "$status" -eq 0 ]
  [ "$(cat "$RAN")" = "$(printf '%s.test.mjs\n' alpha bravo charlie delta echo foxtrot golf hotel)" ]
}

@test "unweighted shares take every other file by name" {
  GPUNEX_TEST_SHARD=2/2 run bash "$ROOT/tests/js/run-tests.sh" "$WORK/dir"
  [ "$status" -eq 0 ]
  [ "$(cat "$RAN")" = "$(printf '%s.test.mjs\n' bravo delta foxtrot hotel)" ]
}

@test "weighted shares run every file exactly once and are about equally long" {
  export GPUNEX_TEST_WEIGHTS="$WORK/w.tsv"
  for k in 1 2; do
    GPUNEX_TEST_SHARD=$k/2 bash "$ROOT/tests/js/run-tests.sh" "$WORK/dir" >"$WORK/out$k"
    cp "$RAN" "$WORK/ran$k"
    : >"$RAN"
  done
  [ "$(sort "$WORK/ran1" "$WORK/ran2")" = "$(printf '%s.test.mjs\n' alpha bravo charlie delta echo foxtrot golf hotel)" ]
  one=$(seconds_of <"$WORK/ran1") two=$(seconds_of <"$WORK/ran2")
  echo "shares: $one s and $two s" >&3
  # 255 s in all: alpha (100) alone on one side with the short ones, echo+golf+charlie (130) on the other.
  [ $((one + two)) -eq 255 ]
  [ $((one > two ? one - two : two - one)) -le 10 ]
  grep -q "share 1/2: .* about $one s" "$WORK/out1"
  # Each share runs its files in name order.
  [ "$(cat "$WORK/ran2")" = "$(sort "$WORK/ran2")" ]
}

@test "an excluded file is named and not run, and weighs nothing in the split" {
  export GPUNEX_TEST_WEIGHTS="$WORK/w.tsv" GPUNEX_TEST_EXCLUDE="alpha.test.mjs"
  GPUNEX_TEST_SHARD=1/2 bash "$ROOT/tests/js/run-tests.sh" "$WORK/dir" >"$WORK/out1"
  GPUNEX_TEST_SHARD=2/2 bash "$ROOT/tests/js/run-tests.sh" "$WORK/dir" >"$WORK/out2"
  ! grep -qx alpha.test.mjs "$RAN"
  [ "$(sort "$RAN")" = "$(printf '%s.test.mjs\n' bravo charlie delta echo foxtrot golf hotel)" ]
  grep -q "alpha.test.mjs is not run" "$WORK/out1" "$WORK/out2"
  # Without alpha: 155 s, split 75 and 80 at best; alpha counted at 100 would leave one share near 55.
  one=$(grep -o 'about [0-9]* s' "$WORK/out1" | grep -o '[0-9]*') two=$(grep -o 'about [0-9]* s' "$WORK/out2" | grep -o '[0-9]*')
  [ $((one + two)) -eq 155 ]
}

@test "a failing file fails its share and is named; the other share passes" {
  export FAIL_FILE=charlie.test.mjs GPUNEX_TEST_WEIGHTS="$WORK/w.tsv"
  failed=0
  for k in 1 2; do
    GPUNEX_TEST_SHARD=$k/2 run bash "$ROOT/tests/js/run-tests.sh" "$WORK/dir"
    if [[ $output == *"failed in $WORK/dir: charlie.test.mjs"* ]]; then
      [ "$status" -eq 1 ]
      failed=$((failed + 1))
    else
      [ "$status" -eq 0 ]
    fi
  done
  [ "$failed" -eq 1 ]
  grep -qx charlie.test.mjs "$RAN"
}

@test "a bad share is refused" {
  GPUNEX_TEST_SHARD=3/2 run bash "$ROOT/tests/js/run-tests.sh" "$WORK/dir"
  [ "$status" -eq 2 ]
  [[ $output == *"GPUNEX_TEST_SHARD must be K/N"* ]]
  GPUNEX_TEST_SHARD=1/2 GPUNEX_TEST_WEIGHTS="$WORK/missing.tsv" run bash "$ROOT/tests/js/run-tests.sh" "$WORK/dir"
  [ "$status" -eq 2 ]
  [[ $output == *"cannot read GPUNEX_TEST_WEIGHTS"* ]]
  [ ! -s "$RAN" ]
}

@test "each file's temporary files are removed when it passed and kept, and named, when it failed" {
  export TMPDIR="$WORK/tmp"
  mkdir "$TMPDIR"
  FAIL_FILE=charlie.test.mjs run bash "$ROOT/tests/js/run-tests.sh" "$WORK/dir"
  [ "$status" -eq 1 ]
  [ "$(wc -l <"$RAN.tmp")" -eq 8 ]
  [ "$(sort -u "$RAN.tmp" | wc -l)" -eq 8 ]  # a folder of its own each
  kept=$(sed -n 3p "$RAN.tmp")  # charlie's
  [ -f "$kept/server/db" ]
  [ "$(stat -c %a "$kept")" = 755 ]  # other users (postgres, nginx's workers) reach what the tests make in it
  [[ $output == *"charlie.test.mjs's temporary files are kept in $kept"* ]]
  [ "$(ls "$TMPDIR")" = "$(basename "$kept")" ]  # the other seven are gone
}
