// USDC payouts exactly once under faults (#18): providers earn every week, and every Monday's run pays
// them on litesvm behind JSON-RPC while the node drops answers after doing the work, times out, answers
// errors, and lets blockhashes expire, and the server is killed with SIGKILL at random moments of the
// run and started again. At the end the sum of the transfers on the chain equals the ledger's paid-out
// sum, each provider's token account holds exactly its payouts, no payout reached the chain twice and
// none was lost. WEEKS × PROVIDERS payouts: 20 × 10 = 200 here; bench/payouts.sh runs 1,000.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Keypair } from '@solana/web3.js';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { approvedProvider } from '../lib/provider.mjs';
import { customerWithCredit, storeRows } from '../lib/rentals.mjs';
import { SolanaTestChain, associatedTokenAccount } from '../lib/solana_chain.mjs';

const WEEKS = Number(process.env.GPUNEX_PAYOUT_FAULT_WEEKS || 20);
const PROVIDERS = Number(process.env.GPUNEX_PAYOUT_FAULT_PROVIDERS || 10);
const START = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const STEPS = ['before signing', 'after storing', 'after sending', 'before confirmation'];

// A deterministic generator, so a failing run can be replayed (GPUNEX_PAYOUT_FAULT_SEED).
function random(seed) {
  let s = seed >>> 0;
  return () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 2 ** 32; };
}

// Runs SQL on the server's store while it serves (the ledger rows a settlement would write).
function storeExec(server, statement) {
  const r = server.db.startsWith('sqlite:')
    ? spawnSync('sqlite3', ['-cmd', '.timeout 10000', server.db.slice(7), statement], { encoding: 'utf8' })
    : spawnSync('psql', [server.db, '-q', '-v', 'ON_ERROR_STOP=1', '-c', statement], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${statement}: ${r.stderr}`);
}

test(`${BACKEND}: ${WEEKS * PROVIDERS} USDC payouts through dropped answers, timeouts, errors, expired blockhashes and kill -9`, async () => {
  const seed = Number(process.env.GPUNEX_PAYOUT_FAULT_SEED || Date.now() % 100000);
  const rand = random(seed);
  const hot = Keypair.generate();
  const chain = await new SolanaTestChain({ hotSeed: hot.secretKey.slice(0, 32), usdc: 10n ** 15n }).start();
  const keyFile = path.join(mkdtempSync(path.join(tmpdir(), 'gpunex-hot-')), 'hot.json');
  writeFileSync(keyFile, JSON.stringify([...hot.secretKey]));
  chmodSync(keyFile, 0o600);
  const server = new TestServer(['--test-clock', START, '--enable-test-clock', 'true', '--payouts-interval-s', '1',
    '--payout-min-weekly-micro', '1000000', '--worker-lease-s', '1', '--solana-rpc-url', chain.url,
    '--solana-keypair-file', keyFile, '--solana-usdc-mint', chain.mint, '--solana-rpc-timeout-ms', '300']);
  server.keepPort = true;
  await server.start();
  const kills = [];
  try {
    await customerWithCredit(server, null);
    const admin = server.adminClient;
    const providers = [];
    for (let i = 0; i < PROVIDERS; i++) {
      const email = `fault-payee${i}@example.com`;
      const p = await approvedProvider(server, email);
      const wallet = Keypair.generate().publicKey.toBase58();
      const put = await p.client.request('PUT', '/v1/provider/payout-settings', { body: {
        method: 'solana_usdc', schedule: 'weekly', wallet_address: wallet, password: 'correct-horse-battery' } });
      assert.equal(put.status, 200, put.body);
      const [[id]] = storeRows(server,
        `SELECT p.id FROM providers p JOIN users u ON u.id = p.user_id WHERE u.email = '${email}'`);
      providers.push({ id, wallet, expected: 0n });
    }
    let now = Date.parse((await admin.request('POST', '/v1/test/clock', { body: { advance_seconds: 0 } })).json.now);
    const clockTo = async (ms) => {
      const move = () => admin.request('POST', '/v1/test/clock', { body: { advance_seconds: Math.ceil((ms - now) / 1000) } });
      let r = await move();
      if (r.status === 401) {  // weeks on, the operator's session has expired: log in again
        await admin.login(`root.${process.pid}@example.com`, 'operator-password-1');
        r = await move();
      }
      assert.equal(r.status, 200, r.body);
      now = Date.parse(r.json.now);
    };
    const restart = async () => {
      server.proc.kill('SIGKILL');
      await server.exited;
      // The test clock starts again where it stood (it stands still between moves).
      server.extraArgs[server.extraArgs.indexOf('--test-clock') + 1] = new Date(now).toISOString();
      await server.start();
      // Leases are timed by the server's clock, which stands still here: six seconds on, the dead
      // process's lease on the payouts worker (five of its one-second rounds) has lapsed.
      await clockTo(now + 6000);
    };

    // This week's payouts as the store has them: [id, status, signature].
    const thisWeek = (day) => storeRows(server, `SELECT id, status, COALESCE(signature, '') FROM payouts WHERE payout_day = '${day}'`);
    const stepsHit = new Set();
    // Waits (polling the store and the chain) for the moment `step` names, then kills the server.
    const killAt = async (step) => {
      const day = new Date(now).toISOString().slice(0, 10);
      if (step === 'before signing') chain.methodFaults.getTokenAccountBalance = ['timeout'];
      if (step === 'after storing') chain.methodFaults.sendTransaction = ['timeout', 'timeout'];
      if (step === 'after sending') chain.methodFaults.sendTransaction = ['drop', 'drop'];
      let hit = false;
      for (let i = 0; i < 400 && !hit; i++) {
        const rows = thisWeek(day);
        if (step === 'before signing') hit = rows.length > 0 && rows.every((r) => r[1] === 'pending');
        if (step === 'after storing') hit = rows.some((r) => r[1] === 'sending' && !chain.seen.has(r[2]));
        if (step === 'after sending') hit = rows.some((r) => r[1] === 'sending' && chain.seen.has(r[2]));
        if (step === 'before confirmation') {
          hit = rows.length === PROVIDERS && rows.every((r) => chain.seen.has(r[2])) && rows.some((r) => r[1] === 'sending');
        }
        if (!hit) await sleep(10);
      }
      chain.methodFaults = {};
      return hit;
    };

    for (let week = 0; week < WEEKS; week++) {
      // This week's earnings: a settlement per provider, an hour before now (before next Monday).
      for (const p of providers) {
        const amount = 1_000_000 + Math.floor(rand() * 50_000_000);
        const tx = `ltx_fault_${week}_${p.id}`;
        storeExec(server, `INSERT INTO ledger_transactions (id, kind, actor, reason, reference, created_at) VALUES `
          + `('${tx}', 'settlement', 'test', 'fault loop', 'week ${week}', ${now - 3600e3}); `
          + `INSERT INTO ledger_entries (tx_id, seq, account, amount, created_at) VALUES `
          + `('${tx}', 0, 'customer:fault-customer', ${-amount}, ${now - 3600e3}), `
          + `('${tx}', 1, 'provider:${p.id}', ${amount}, ${now - 3600e3});`);
        p.expected += BigInt(amount);
      }
      // Faults for the node's next answers; sometimes the blockhashes in flight expire.
      for (let i = 0; i < 12; i++) {
        const r = rand();
        chain.faults.push(r < 0.15 ? 'drop' : r < 0.25 ? 'timeout' : r < 0.35 ? 'error' : 'none');
      }
      const d = new Date(now);
      const monday = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + (((8 - d.getUTCDay()) % 7) || 7));
      await clockTo(monday + 3600e3);
      // Every other week the server is killed at one step of the run, in turn: before signing (the
      // node's balance answer held back), after storing the signed bytes (the send held back), after
      // sending (the answer lost), and before confirmation (landed, not yet seen as paid).
      if (week % 2 === 1) {
        const step = STEPS[((week - 1) / 2) % STEPS.length];
        const hit = await killAt(step);
        kills.push(`${step}${hit ? '' : ' (missed)'}`);
        if (hit) stepsHit.add(step);
        // Stored bytes that never landed, and their blockhash gone: only a new signature can pay.
        if (step === 'after storing' || rand() < 0.5) chain.expireBlockhash();
        await restart();
      } else if (rand() < 0.3) {
        await sleep(Math.floor(rand() * 1000));
        chain.expireBlockhash();
      }
      await until(`week ${week}'s payouts to be paid (seed ${seed})`, async () => {
        const [[open]] = storeRows(server, `SELECT COUNT(*) FROM payouts WHERE status NOT IN ('paid')`);
        const [[made]] = storeRows(server, `SELECT COUNT(*) FROM payouts`);
        return Number(open) === 0 && Number(made) === (week + 1) * PROVIDERS ? true : null;
      }, 30000).catch((e) => {
        console.log(storeRows(server, 'SELECT id, payout_day, status, signature IS NOT NULL, last_valid_block_height, signed_count, failure_reason FROM payouts ORDER BY payout_day'));
        console.log(storeRows(server, 'SELECT id, payout_day, status, held_reason FROM payout_runs'));
        console.log(server.logs.join('').slice(-3000));
        throw e;
      });
    }

    // Exactly once: one landed transaction per payout, and every balance agrees.
    const [[payouts]] = storeRows(server, 'SELECT COUNT(*) FROM payouts');
    assert.equal(Number(payouts), WEEKS * PROVIDERS);
    assert.equal(chain.sent.length, WEEKS * PROVIDERS, `no payout reached the chain twice (seed ${seed})`);
    let onChain = 0n;
    for (const p of providers) {
      const held = chain.tokenBalance(associatedTokenAccount(p.wallet, chain.mint));
      assert.equal(held, p.expected, `provider ${p.id}: its token account holds exactly its payouts (seed ${seed})`);
      onChain += held;
    }
    const [[paidOut]] = storeRows(server, `SELECT SUM(amount) FROM ledger_entries WHERE account = 'platform:money_out'`);
    assert.equal(BigInt(paidOut), onChain, 'the ledger paid out what the chain received');
    const [[inFlight]] = storeRows(server,
      `SELECT COALESCE(SUM(amount), 0) FROM ledger_entries WHERE account = 'platform:payouts_in_flight'`);
    assert.equal(Number(inFlight), 0, 'nothing left in flight');
    const [[resigned]] = storeRows(server, 'SELECT COUNT(*) FROM payouts WHERE signed_count > 1');
    console.log(`# seed ${seed}: ${WEEKS * PROVIDERS} payouts, kills: ${kills.join(', ')}; ${resigned} re-signed after expiry`);
    if (WEEKS >= 8) {
      assert.deepEqual([...stepsHit].sort(), [...STEPS].sort(), `killed at every step (${kills.join(', ')})`);
      assert.ok(Number(resigned) > 0, 'a payout was signed anew after its blockhash expired');
    }
  } finally {
    await server.stop();
    await chain.stop();
  }
});
