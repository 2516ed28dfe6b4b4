// USDC payouts on the test chain (solana_chain.mjs), for the payout tests that kill servers mid-run:
// the chain with a funded hot wallet and the server flags that pay from it, providers paid weekly to
// wallets of their own, a week's earnings written to the ledger, the moments of a run a test kills a
// server at (found by polling the store and the chain), and the exactly-once check at the end.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Keypair } from '@solana/web3.js';
import { approvedProvider } from './provider.mjs';
import { nextWeekday, storeRows } from './rentals.mjs';
import { SolanaTestChain, associatedTokenAccount } from './solana_chain.mjs';

// The chain, its hot wallet holding `usdc` base units, and the server flags that pay from it (the
// wallet's key in a file only its owner reads, as the server demands).
export async function usdcChain({ usdc = 10n ** 15n, rpcTimeoutMs = 300 } = {}) {
  const hot = Keypair.generate();
  const chain = await new SolanaTestChain({ hotSeed: hot.secretKey.slice(0, 32), usdc }).start();
  const keyFile = path.join(mkdtempSync(path.join(tmpdir(), 'gpunex-hot-')), 'hot.json');
  writeFileSync(keyFile, JSON.stringify([...hot.secretKey]));
  chmodSync(keyFile, 0o600);
  const args = ['--solana-rpc-url', chain.url, '--solana-keypair-file', keyFile, '--solana-usdc-mint', chain.mint,
    '--solana-rpc-timeout-ms', String(rpcTimeoutMs)];
  return { chain, args };
}

// `count` approved providers, each paid weekly in USDC to a fresh wallet: [{id, wallet, expected: 0n}].
export async function usdcPayees(server, count, prefix = 'payee') {
  const providers = [];
  for (let i = 0; i < count; i++) {
    const email = `${prefix}${i}@example.com`;
    const p = await approvedProvider(server, email);
    const wallet = Keypair.generate().publicKey.toBase58();
    const put = await p.client.request('PUT', '/v1/provider/payout-settings', { body: {
      method: 'solana_usdc', schedule: 'weekly', wallet_address: wallet, password: 'correct-horse-battery' } });
    assert.equal(put.status, 200, put.body);
    const [[id]] = storeRows(server,
      `SELECT p.id FROM providers p JOIN users u ON u.id = p.user_id WHERE u.email = '${email}'`);
    providers.push({ id, wallet, expected: 0n });
  }
  return providers;
}

// Runs SQL on the server's store while it serves.
export function storeExec(server, statement) {
  const r = server.db.startsWith('sqlite:')
    ? spawnSync('sqlite3', ['-cmd', '.timeout 10000', server.db.slice(7), statement], { encoding: 'utf8' })
    : spawnSync('psql', [server.db, '-q', '-v', 'ON_ERROR_STOP=1', '-c', statement], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${statement}: ${r.stderr}`);
}

// A settlement per provider at `atMs` (the ledger rows a rental's settlement writes), of
// `amount(provider)` micro-USDC, added to each provider's `expected`. `tag` names the week.
export function settleEarnings(server, providers, atMs, tag, amount) {
  for (const p of providers) {
    const micro = amount(p);
    const tx = `ltx_${tag}_${p.id}`;
    storeExec(server, `INSERT INTO ledger_transactions (id, kind, actor, reason, reference, created_at) VALUES `
      + `('${tx}', 'settlement', 'test', 'payout test', '${tag}', ${atMs}); `
      + `INSERT INTO ledger_entries (tx_id, seq, account, amount, created_at) VALUES `
      + `('${tx}', 0, 'customer:payout-test-customer', ${-micro}, ${atMs}), `
      + `('${tx}', 1, 'provider:${p.id}', ${micro}, ${atMs});`);
    p.expected += BigInt(micro);
  }
}

// Midnight UTC of the first Monday after `ms`: a weekly USDC payout day, and its earnings' cut-off.
export function nextMonday(ms) {
  return nextWeekday(ms, 1);
}

// The moments of a payout run a test kills a server at: before signing (the node's balance answer
// held back), after storing the signed bytes (the send held back: not on the chain), after sending
// (on the chain, the node's answer lost), and before confirmation (all landed, not all seen as paid).
export const PAYOUT_STEPS = ['before signing', 'after storing', 'after sending', 'before confirmation'];

// Holds the node's answers back so that `step` lasts, and polls the store and the chain until `day`'s
// `count` payouts (YYYY-MM-DD) are at it. True when seen within about four seconds; the faults not
// used by then are cleared. `begin`, if given, is called once the answers are held back (what starts
// the run: the earnings written, say), so that the run cannot pass the step before.
export async function atPayoutStep(server, chain, day, count, step, { begin } = {}) {
  if (!PAYOUT_STEPS.includes(step)) throw new Error(`no payout step ${step}`);
  if (step === 'before signing') chain.methodFaults.getTokenAccountBalance = ['timeout'];
  if (step === 'after storing') chain.methodFaults.sendTransaction = ['timeout', 'timeout'];
  if (step === 'after sending') chain.methodFaults.sendTransaction = ['drop', 'drop'];
  await begin?.();
  let hit = false;
  for (let i = 0; i < 400 && !hit; i++) {
    // [id, status, signature]
    const rows = storeRows(server, `SELECT id, status, COALESCE(signature, '') FROM payouts WHERE payout_day = '${day}'`);
    if (step === 'before signing') hit = rows.length > 0 && rows.every((r) => r[1] === 'pending');
    if (step === 'after storing') hit = rows.some((r) => r[1] === 'sending' && !chain.seen.has(r[2]));
    if (step === 'after sending') hit = rows.some((r) => r[1] === 'sending' && chain.seen.has(r[2]));
    if (step === 'before confirmation') {
      hit = rows.length === count && rows.every((r) => chain.seen.has(r[2])) && rows.some((r) => r[1] === 'sending');
    }
    if (!hit) await sleep(10);
  }
  chain.methodFaults = {};
  return hit;
}

// Exactly once: `count` payouts, all paid, one landed transaction each (none reached the chain twice),
// each provider's token account holding exactly its `expected`, and the ledger's paid-out sum what the
// chain received, with nothing left in flight. `note` goes into the messages (a seed, say).
export function assertPaidOnce(server, chain, providers, count, note = '') {
  const [[payouts, paid]] = storeRows(server, "SELECT COUNT(*), SUM(CASE WHEN status = 'paid' THEN 1 ELSE 0 END) FROM payouts");
  assert.equal(Number(payouts), count, `${count} payouts ${note}`);
  assert.equal(Number(paid), count, `every payout paid ${note}`);
  assert.equal(chain.sent.length, count, `no payout reached the chain twice ${note}`);
  let onChain = 0n;
  for (const p of providers) {
    const held = chain.tokenBalance(associatedTokenAccount(p.wallet, chain.mint));
    assert.equal(held, p.expected, `provider ${p.id}: its token account holds exactly its payouts ${note}`);
    onChain += held;
  }
  const [[paidOut]] = storeRows(server, `SELECT SUM(amount) FROM ledger_entries WHERE account = 'platform:money_out'`);
  assert.equal(BigInt(paidOut), onChain, `the ledger paid out what the chain received ${note}`);
  const [[inFlight]] = storeRows(server,
    `SELECT COALESCE(SUM(amount), 0) FROM ledger_entries WHERE account = 'platform:payouts_in_flight'`);
  assert.equal(Number(inFlight), 0, `nothing left in flight ${note}`);
}
