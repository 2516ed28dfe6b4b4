// USDC payouts exactly once under faults (#18): providers earn every week, and every Monday's run pays
// them on litesvm behind JSON-RPC while the node drops answers after doing the work, times out, answers
// errors, and lets blockhashes expire, and the server is killed with SIGKILL at random moments of the
// run and started again. At the end the sum of the transfers on the chain equals the ledger's paid-out
// sum, each provider's token account holds exactly its payouts, no payout reached the chain twice and
// none was lost. WEEKS × PROVIDERS payouts: 20 × 10 = 200 here; bench/payouts.sh runs 1,000.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { customerWithCredit, storeRows } from '../lib/rentals.mjs';
import { PAYOUT_STEPS as STEPS, assertPaidOnce, atPayoutStep, nextMonday, settleEarnings, usdcChain, usdcPayees }
  from '../lib/payouts.mjs';

const WEEKS = Number(process.env.GPUNEX_PAYOUT_FAULT_WEEKS || 20);
const PROVIDERS = Number(process.env.GPUNEX_PAYOUT_FAULT_PROVIDERS || 10);
const START = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A deterministic generator, so a failing run can be replayed (GPUNEX_PAYOUT_FAULT_SEED).
function random(seed) {
  let s = seed >>> 0;
  return () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 2 ** 32; };
}

test(`${BACKEND}: ${WEEKS * PROVIDERS} USDC payouts through dropped answers, timeouts, errors, expired blockhashes and kill -9`, async () => {
  const seed = Number(process.env.GPUNEX_PAYOUT_FAULT_SEED || Date.now() % 100000);
  const rand = random(seed);
  const { chain, args: chainArgs } = await usdcChain();
  const server = new TestServer(['--test-clock', START, '--enable-test-clock', 'true', '--payouts-interval-s', '1',
    '--payout-min-weekly-micro', '1000000', '--worker-lease-s', '1', ...chainArgs]);
  server.keepPort = true;
  await server.start();
  const kills = [];
  try {
    await customerWithCredit(server, null);
    const admin = server.adminClient;
    const providers = await usdcPayees(server, PROVIDERS, 'fault-payee');
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

    const stepsHit = new Set();

    for (let week = 0; week < WEEKS; week++) {
      // This week's earnings: a settlement per provider, an hour before now (before next Monday).
      settleEarnings(server, providers, now - 3600e3, `fault_${week}`, () => 1_000_000 + Math.floor(rand() * 50_000_000));
      // Faults for the node's next answers; sometimes the blockhashes in flight expire.
      for (let i = 0; i < 12; i++) {
        const r = rand();
        chain.faults.push(r < 0.15 ? 'drop' : r < 0.25 ? 'timeout' : r < 0.35 ? 'error' : 'none');
      }
      const monday = nextMonday(now);
      await clockTo(monday + 3600e3);
      // Every other week the server is killed at one step of the run, in turn: before signing (the
      // node's balance answer held back), after storing the signed bytes (the send held back), after
      // sending (the answer lost), and before confirmation (landed, not yet seen as paid).
      if (week % 2 === 1) {
        const step = STEPS[((week - 1) / 2) % STEPS.length];
        // Waits (polling the store and the chain) for the moment `step` names, then kills the server.
        const hit = await atPayoutStep(server, chain, new Date(monday).toISOString().slice(0, 10), PROVIDERS, step);
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
    assertPaidOnce(server, chain, providers, WEEKS * PROVIDERS, `(seed ${seed})`);
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
