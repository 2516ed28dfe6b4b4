#!/usr/bin/env bash
# USDC payouts exactly once, the long run (issue 18): tests/js/rentals/payouts_faults.test.mjs with
# 100 weeks × 10 providers = 1,000 payouts on litesvm behind JSON-RPC, with dropped answers, timeouts,
# errors, expired blockhashes and kill -9 of the server (make test runs 200). It prints the seed, the
# kills and the re-signings; it fails if the chain and the ledger disagree by one micro-USDC.
# Usage: bench/payouts.sh [WEEKS] [PROVIDERS]   (GPUNEX_TEST_DB=postgres with GPUNEX_TEST_PG_URL for
#   PostgreSQL; GPUNEX_PAYOUT_FAULT_SEED replays a run)
set -euo pipefail
cd "$(dirname "$0")/.."
export GPUNEX_PAYOUT_FAULT_WEEKS=${1:-100}
export GPUNEX_PAYOUT_FAULT_PROVIDERS=${2:-10}
export GPUNEX_TEST_DB=${GPUNEX_TEST_DB:-sqlite}
export GPUNEX_BIN_DIR=${GPUNEX_BIN_DIR:-$PWD/build/bin}
[ -x "$GPUNEX_BIN_DIR/gpunex-server" ] || { echo "$GPUNEX_BIN_DIR/gpunex-server is missing: make build" >&2; exit 1; }
cd tests/js
start=$(date +%s)
status=0
node --test rentals/payouts_faults.test.mjs >"${TMPDIR:-/tmp}/gpunex-payouts-bench.log" 2>&1 || status=$?
grep -E '^(not )?ok|seed|error' "${TMPDIR:-/tmp}/gpunex-payouts-bench.log" || true
echo "payouts: $((GPUNEX_PAYOUT_FAULT_WEEKS * GPUNEX_PAYOUT_FAULT_PROVIDERS)) in $(( $(date +%s) - start )) s"
exit $status
