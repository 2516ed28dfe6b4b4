// Payouts across replicas (issue 20): gpunex-server replicas on one PostgreSQL store pay USDC on
// litesvm, and the replica holding the payouts worker's lease is killed (SIGKILL, so the lease is not
// given back) in the middle of a run, twice: once with a payout's transaction on the chain but the
// node's answer lost (neither confirmed nor recorded as paid), once with a payout's signed bytes
// stored but not yet on the chain; the rest of the run not yet signed either time. Each time another
// replica takes the lease over within the lease time (measured from the kill, printed) and not before
// the dead holder's lease lapsed, finishes the run, and every payout is transferred exactly once: the
// dead holder's transaction finished rather than signed again, one landed transaction per payout,
// each wallet holding exactly its payouts, the ledger's paid-out sum what the chain received. A fresh
// replica replaces the dead one, so the second kill falls on the replica that took over the first.
//
// The replicas' test clocks run at the wall clock's pace (the test sets them together every 100 ms):
// leases are timed by the server's clock, and on clocks standing still a dead holder's lease would
// never lapse. PostgreSQL only: one process owns a SQLite database.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { BACKEND, Client, TestServer, until } from '../lib/server.mjs';
import { customerWithCredit, storeRows } from '../lib/rentals.mjs';
import { assertPaidOnce, atPayoutStep, nextMonday, settleEarnings, usdcChain, usdcPayees } from '../lib/payouts.mjs';

const skip = BACKEND !== 'postgres' && 'replicas share a PostgreSQL database';
const ROUND_S = 1;  // --payouts-interval-s: how often a replica runs the worker, or tries to take its lease
const LEASE_S = 5;  // --worker-lease-s (a lease outlives at least five rounds, so this is the lease time)
const PROVIDERS = 5;
const ADMIN = [`root.${process.pid}@example.com`, 'operator-password-1'];  // customerWithCredit's operator
const iso = (ms) => new Date(Math.floor(ms)).toISOString();

// The replicas' test clocks, moved together through each one's POST /v1/test/clock: standing at a
// time, or (run) running from it at the wall clock's pace, set every 100 ms.
class ReplicaClocks {
  constructor(ms) {
    this.base = ms;
    this.clients = new Map();
  }

  async add(server) {
    const c = new Client(server.url);
    await c.login(...ADMIN);
    this.clients.set(server, c);
  }

  drop(server) {
    this.clients.delete(server);
  }

  now() {
    return this.loop ? this.base + (performance.now() - this.t0) : this.base;
  }

  async set(server, ms) {
    const c = this.clients.get(server);
    const move = () => c.request('POST', '/v1/test/clock', { body: { now: iso(ms) } });
    let r = await move();
    if (r.status === 401) {  // a jump to the payout day outlived the operator's session: log in again
      await c.login(...ADMIN);
      r = await move();
    }
    assert.equal(r.status, 200, r.body);
  }

  async run(fromMs) {
    await this.stop();
    this.base = fromMs;
    this.t0 = performance.now();
    const tick = () => {
      const ms = this.now();
      return Promise.all([...this.clients.keys()].map((s) => this.set(s, ms).catch(() => {})));  // a replica just killed
    };
    await tick();
    this.loop = (async () => {
      while (!this.stopping) {
        await sleep(100);
        await tick();
      }
    })();
  }

  // Stops them where they stand.
  async stop() {
    if (!this.loop) return;
    this.stopping = true;
    await this.loop;
    this.base = this.now();
    this.loop = null;
    this.stopping = false;
  }
}

test(`${BACKEND}: the payouts worker's lease holder killed mid-run, another replica takes the run over within the lease time and pays each payout once`, { skip }, async () => {
  const { chain, args: chainArgs } = await usdcChain();
  const clocks = new ReplicaClocks(Math.floor(Date.now() / 1000) * 1000);
  const replicas = [];
  // A replica on the shared store, its test clock where the others' stand.
  const replica = async () => {
    const s = new TestServer(['--test-clock', iso(clocks.now()), '--enable-test-clock', 'true',
      '--payouts-interval-s', String(ROUND_S), '--payout-min-weekly-micro', '1000000', '--worker-lease-s', String(LEASE_S),
      ...chainArgs]);
    if (replicas.length) s.sharing(replicas[0]);
    await s.start();
    replicas.push(s);
    return s;
  };
  const alive = () => replicas.filter((s) => s.proc.exitCode === null && s.proc.signalCode === null);
  // The payouts worker's lease as the store has it: {holder, expires} (the holder's clock, ms).
  const lease = () => {
    const rows = storeRows(replicas[0], "SELECT holder, expires_at FROM leases WHERE name = 'payouts'");
    return rows.length ? { holder: rows[0][0], expires: Number(rows[0][1]) } : null;
  };
  const takeovers = [];
  try {
    let holder = await replica();
    await customerWithCredit(holder, null);  // the operator
    const providers = await usdcPayees(holder, PROVIDERS, 'lease-payee');
    // The first replica holds the lease before the second starts: their clocks agree (standing still
    // here, then running together), so the second cannot take it while the first renews it.
    let holderId = (await until('the first replica to take the payouts lease', lease, 10000, 50)).holder;
    await replica();
    for (const s of replicas) await clocks.add(s);

    for (const [week, step] of [[0, 'after sending'], [1, 'after storing']]) {
      const monday = nextMonday(clocks.now());
      const day = iso(monday).slice(0, 10);
      // To 01:00 on the payout day: the holder first, and once it has renewed its lease on that time,
      // every replica, running from there (moved together, the others could find its lease lapsed).
      await clocks.stop();
      await clocks.set(holder, monday + 3600e3);
      await until('the holder to renew its lease on the payout day', () => {
        const l = lease();
        return l && l.holder === holderId && l.expires >= monday + 3600e3;
      }, 10000, 50);
      await clocks.run(monday + 3600e3);

      // The week's earnings, settled before the payout day's cut-off (midnight): the holder's next
      // round makes the payouts and sends them, and is killed at `step`.
      const hit = await atPayoutStep(holder, chain, day, PROVIDERS, step, {
        begin: () => settleEarnings(holder, providers, monday - 3600e3, `lease_${week}`,
          () => 1_000_000 + Math.floor(Math.random() * 50_000_000)),
      });
      assert.ok(hit, `the run reached "${step}"`);
      holder.proc.kill('SIGKILL');
      const killedAt = performance.now();
      const clockAtKill = clocks.now();
      clocks.drop(holder);
      await holder.exited;

      const dead = lease();
      assert.equal(dead.holder, holderId, 'no other replica took the lease while its holder lived');
      // [id, status, signature]: mid-run, some payout in flight and some not yet sent.
      const atKill = storeRows(replicas[0],
        `SELECT id, status, COALESCE(signature, '') FROM payouts WHERE payout_day = '${day}' ORDER BY id`);
      const inFlight = atKill.filter((r) => r[1] === 'sending');
      assert.ok(inFlight.length > 0, `a payout in flight at the kill: ${JSON.stringify(atKill)}`);
      assert.ok(atKill.length < PROVIDERS || atKill.some((r) => r[1] === 'pending'),
        `the run not finished at the kill: ${JSON.stringify(atKill)}`);

      const taken = await until('another replica to take the payouts lease over',
        () => { const l = lease(); return l && l.holder !== dead.holder && l; }, (LEASE_S + 10) * 1000, 50);
      const ms = performance.now() - killedAt;
      const left = dead.expires - clockAtKill;
      takeovers.push(ms);
      console.log(`week ${week}: holder killed ${step} (${atKill.map((r) => r[1]).join(', ')}); the lease had ` +
        `${left.toFixed(0)} ms left; another replica took it over after ${ms.toFixed(0)} ms ` +
        `(lease ${LEASE_S} s, rounds every ${ROUND_S} s)`);
      // Within the lease time, and one round of the taker's to notice it lapsed (a second's slack for
      // the clocks' 100 ms steps, the store polled every 50 ms and a busy host).
      assert.ok(ms <= (LEASE_S + ROUND_S + 1) * 1000, `taken over after ${ms.toFixed(0)} ms`);
      assert.ok(taken.expires - LEASE_S * 1000 >= dead.expires,
        `taken at ${iso(taken.expires - LEASE_S * 1000)}, not before the dead holder's lease lapsed at ${iso(dead.expires)}`);
      [holder] = alive();
      holderId = taken.holder;

      await until(`${day}'s payouts paid after the takeover`, () => {
        const [[made, open]] = storeRows(holder,
          `SELECT COUNT(*), SUM(CASE WHEN status = 'paid' THEN 0 ELSE 1 END) FROM payouts WHERE payout_day = '${day}'`);
        return Number(made) === PROVIDERS && Number(open) === 0;
      }, 30000, 100).catch((e) => {
        console.log(storeRows(holder, 'SELECT id, payout_day, status, signature, signed_count, failure_reason FROM payouts'));
        console.log(alive().map((s) => s.logs.join('').slice(-3000)).join('\n'));
        throw e;
      });
      // The dead holder's transaction was finished (confirmed, or its stored bytes sent again), not
      // signed anew: each payout signed once, the one in flight paid by the signature stored at the kill.
      const after = new Map(storeRows(holder,
        `SELECT id, signature, signed_count FROM payouts WHERE payout_day = '${day}'`).map((r) => [r[0], r]));
      for (const [id, , signature] of inFlight) {
        assert.equal(after.get(id)[1], signature, `payout ${id}: paid by the transaction in flight at the kill`);
        assert.ok(chain.sent.includes(signature), `payout ${id}: its transaction landed`);
      }
      for (const [id, , signed] of after.values()) assert.equal(Number(signed), 1, `payout ${id} signed once`);

      // A fresh replica in the dead one's place, for the next week's holder to be killed in turn.
      await clocks.add(await replica());
    }

    assertPaidOnce(holder, chain, providers, 2 * PROVIDERS);
    console.log(`takeovers after ${takeovers.map((ms) => `${ms.toFixed(0)} ms`).join(' and ')} (lease ${LEASE_S} s)`);
  } finally {
    await clocks.stop();
    for (const s of replicas) await s.stop();
    await chain.stop();
  }
});
