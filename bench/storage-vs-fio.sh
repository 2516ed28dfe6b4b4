#!/usr/bin/env bash
# The agent's storage benchmarks beside Debian's fio doing the same work: the
# same folder, file size, block size, direct I/O, one request in flight per
# thread (fio --ioengine=psync), the same thread count for random reads.
# Prints both figures and their ratio (agent / fio); they should agree within
# ±15%. Usage: bench/storage-vs-fio.sh [DIR] [FILE_MIB]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${GPUNEX_BIN_DIR:-build/bin}
DIR=${1:-build/bench-storage}
MIB=${2:-256}
command -v fio >/dev/null || { echo "fio is missing: run scripts/deps.sh" >&2; exit 1; }
[ -x "$BIN/gpunex-agent" ] || { echo "build gpunex-agent first (ninja -C build gpunex-agent)" >&2; exit 1; }
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
WORK=$(mktemp -d)
HUGE_BEFORE=
cleanup() {
  rm -rf "$WORK"
  rm -f "$DIR/fio-bench.tmp"
  if [ -n "$HUGE_BEFORE" ]; then echo "$HUGE_BEFORE" >/proc/sys/vm/nr_hugepages; fi
}
trap cleanup EXIT

# The agent's 1 MiB buffer sits on a transparent huge page (src/agent/bench/storage_bench.cpp,
# IoBuffer): one physically contiguous segment per request, where 4 KiB pages can make 256, which
# virtual disks serve one by one. fio's sequential jobs get the same from --mem=shmhuge, which needs
# free HugeTLB pages: when there are too few and this runs as root, it reserves four for the run
# and gives them back at exit. Otherwise fio uses malloc'd pages and the script says so.
huge_free() { awk '/^HugePages_Free:/ {print $2}' /proc/meminfo; }
FIO_SEQ_MEM=--mem=malloc
if [ "$(huge_free)" -lt 4 ] && [ -w /proc/sys/vm/nr_hugepages ]; then
  HUGE_BEFORE=$(cat /proc/sys/vm/nr_hugepages)
  echo $((HUGE_BEFORE + 4)) >/proc/sys/vm/nr_hugepages
fi
if [ "$(huge_free)" -ge 4 ]; then
  FIO_SEQ_MEM=--mem=shmhuge
else
  echo "note: no free huge pages for fio (run as root, or reserve 4 in /proc/sys/vm/nr_hugepages):" \
    "fio's 1 MiB buffers use 4 KiB pages, and on a virtual disk the agent may read and write faster" >&2
fi

echo "folder: $DIR ($(df -T "$DIR" | awk 'NR==2{print $2}')), file ${MIB} MiB, 1 MiB sequential blocks, 4 KiB random reads x 4 threads, O_DIRECT, fio $FIO_SEQ_MEM"

# Three rounds, each the agent's run then fio's, so a change in the machine's
# load reaches both alike. Within a round both make three passes of each case
# back to back in one process (the agent's own passes; fio's as three
# stonewalled jobs), because the first pass after a pause is the slowest for
# either tool; each round gives the median pass, and the figure is the median
# of the rounds.
FIO_COMMON=(--filename="$DIR/fio-bench.tmp" --size="${MIB}M" --direct=1 --ioengine=psync --iodepth=1
  --output-format=json)
median3() { sort -g | sed -n 2p; }
three_passes() {  # fio job options for three passes, one after the other, each reported alone
  echo --name=pass1 --stonewall --new_group --name=pass2 --stonewall --new_group --name=pass3 --stonewall --new_group
}
fio_seq() {  # $1: write|read; prints MB/s of the median pass
  # The reads follow an untimed write pass of the file, as the agent's do (it writes its file first).
  local prep=()
  [ "$1" = read ] && prep=(--name=prep --rw=write)
  # shellcheck disable=SC2046
  fio --rw="$1" --bs=1M --end_fsync=1 "$FIO_SEQ_MEM" "${FIO_COMMON[@]}" "${prep[@]}" $(three_passes) \
    >"$WORK/fio.json"
  jq -r ".jobs[] | select(.jobname != \"prep\") | .$1.bw_bytes / 1e6" "$WORK/fio.json" | median3
}
fio_rand() {  # IOPS of the median 1 s sample, 4 threads
  # shellcheck disable=SC2046
  fio --rw=randread --bs=4k --numjobs=4 --time_based --runtime=1 --group_reporting "${FIO_COMMON[@]}" \
    $(three_passes) >"$WORK/fio.json"
  jq -r '.jobs[].read.iops' "$WORK/fio.json" | median3
}
agent_run() {  # $1: the case; one agent run per case, as fio runs one job per case
  "$BIN/gpunex-agent" bench --only "$1" --json --data-dir "$DIR" --storage-mib "$MIB" >"$WORK/agent.json"
  jq -r --arg k "$1" '.report.machine[] | select(.key == $k) | .median' "$WORK/agent.json" >>"$WORK/agent.$1"
}
fio --name=layout --rw=write --bs=1M "${FIO_COMMON[@]}" >/dev/null  # the file fio_rand reads
for _ in 1 2 3; do
  agent_run storage.seq_write
  fio_seq write >>"$WORK/fio.storage.seq_write"
  agent_run storage.seq_read
  fio_seq read >>"$WORK/fio.storage.seq_read"
  agent_run storage.rand_read_4k
  fio_rand >>"$WORK/fio.storage.rand_read_4k"
done
agent() { median3 <"$WORK/agent.$1"; }
fio_median() { median3 <"$WORK/fio.$1"; }

printf '%-22s %14s %14s %8s\n' metric agent fio ratio
row() {
  awk -v m="$1" -v a="$2" -v f="$3" -v u="$4" 'BEGIN {
    r = (f > 0) ? a / f : 0
    printf "%-22s %10.0f %-3s %10.0f %-3s %8.3f %s\n", m, a, u, f, u, r, (r >= 0.85 && r <= 1.15) ? "ok" : "OUTSIDE +-15%"
  }'
}
row storage.seq_write "$(agent storage.seq_write)" "$(fio_median storage.seq_write)" MB/s
row storage.seq_read "$(agent storage.seq_read)" "$(fio_median storage.seq_read)" MB/s
row storage.rand_read_4k "$(agent storage.rand_read_4k)" "$(fio_median storage.rand_read_4k)" IOPS
