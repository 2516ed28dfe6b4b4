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
// A third week the holder is paused (SIGSTOP) mid-run instead, and woken once another replica has
// taken over and paid: it finishes its round on what it read before the pause, and still no payout
// is signed or sent twice, and it does not take the lease back.
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

  now() {
    return this.loop ? this.base + (performance.now() - this.t0) : this.base;
  }

  // Its clock stands from here on. Waits for a move in flight: a replica about to be paused would
  // hold the moves up (and with them the others' clocks, so that no lease lapsed).
  async drop(server) {
    this.clients.delete(server);
    await this.ticking;
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
      this.ticking = Promise.all([...this.clients.keys()].map((s) => this.set(s, ms).catch(() => {})));  // one just killed
      return this.ticking;
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

test(`${BACKEND}: the payouts worker's lease holder killed (or paused) mid-run, another replica takes the run over within the lease time and pays each payout once`, { skip }, async () => {
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
  const paused = new Set();
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

    const weeks = [[0, 'after sending', 'SIGKILL'], [1, 'after storing', 'SIGKILL'], [2, 'after storing', 'SIGSTOP']];
    for (const [week, step, signal] of weeks) {
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
      // round makes the payouts and sends them, and is killed (or paused) at `step`.
      const hit = await atPayoutStep(holder, chain, day, PROVIDERS, step, {
        begin: () => settleEarnings(holder, providers, monday - 3600e3, `lease_${week}`,
          () => 1_000_000 + Math.floor(Math.random() * 50_000_000)),
      });
      assert.ok(hit, `the run reached "${step}"`);
      if (signal === 'SIGSTOP') {
        // Paused while its payouts worker waits on the node (sends held 300 ms, with a good 100 ms to
        // go), not inside a store transaction, whose locks would hold the other replica up.
        chain.methodFaults.sendTransaction = Array(PROVIDERS).fill('timeout');
        await until('a send held by the node', () => [...chain.held].some((h) =>
          h.method === 'sendTransaction' && performance.now() - h.since < 150), 5000, 5);
      }
      await clocks.drop(holder);
      holder.proc.kill(signal);
      const killedAt = performance.now();
      const clockAtKill = clocks.now();
      if (signal === 'SIGSTOP') {
        paused.add(holder);
        chain.methodFaults = {};
      } else {
        await holder.exited;
      }

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
      console.log(`week ${week}: holder ${signal === 'SIGKILL' ? 'killed' : 'paused'} ${step} (${atKill.map((r) => r[1]).join(', ')}); the lease had ` +
        `${left.toFixed(0)} ms left; another replica took it over after ${ms.toFixed(0)} ms ` +
        `(lease ${LEASE_S} s, rounds every ${ROUND_S} s)`);
      // Within the lease time, and one round of the taker's to notice it lapsed (a second's slack for
      // the clocks' 100 ms steps, the store polled every 50 ms and a busy host).
      assert.ok(ms <= (LEASE_S + ROUND_S + 1) * 1000, `taken over after ${ms.toFixed(0)} ms`);
      assert.ok(taken.expires - LEASE_S * 1000 >= dead.expires,
        `taken at ${iso(taken.expires - LEASE_S * 1000)}, not before the dead holder's lease lapsed at ${iso(dead.expires)}`);
      const old = holder;
      [holder] = alive().filter((s) => s !== old);
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
      if (signal === 'SIGSTOP') {
        // Woken, it ends its round (payouts it read unsigned are signed by now: its stores are refused),
        // finds its lease taken on its next round, and its clock is moved on again.
        // Only it calls the node from here: the new holder has nothing left to do.
        const calls = { ...chain.calls };
        old.proc.kill('SIGCONT');
        paused.delete(old);
        await sleep(2 * ROUND_S * 1000);
        await clocks.add(old);
        await sleep(2 * ROUND_S * 1000);
        const since = (method) => (chain.calls[method] || 0) - (calls[method] || 0);
        console.log(`week ${week}: woken, the old holder asked the node for ${since('getLatestBlockhash')} blockhash(es) ` +
          `to sign payouts the new holder had paid, and sent ${since('sendTransaction')} transaction(s)`);
        assert.ok(since('getLatestBlockhash') > 0, 'the woken holder went on with its round');
        assert.equal(since('sendTransaction'), 0, 'the woken holder sent nothing: its signatures were refused');
        assert.equal(lease().holder, holderId, 'the woken holder did not take the lease back');
        assert.ok(alive().includes(old), 'the woken holder serves on');
      }
      assert.equal(chain.sent.length, (week + 1) * PROVIDERS, `week ${week}: one landed transaction per payout`);
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
      if (signal === 'SIGKILL') await clocks.add(await replica());
    }

    assertPaidOnce(holder, chain, providers, weeks.length * PROVIDERS);
    console.log(`takeovers after ${takeovers.map((ms) => `${ms.toFixed(0)} ms`).join(', ')} (lease ${LEASE_S} s)`);
  } finally {
    for (const s of paused) s.proc.kill('SIGCONT');  // a failure left it paused: it would not stop
    await clocks.stop();
    for (const s of replicas) await s.stop();
    await chain.stop();
  }
});
