// The provider's earnings tracker (#18): GET /v1/provider/earnings adds the settlements the ledger
// credited to the provider (80% of what customers paid) and the live accrual of running rentals,
// marked as not settled, grouped by day, GPU, model or machine; every grouping adds up to the same
// total, and the settled part is exactly the provider's ledger account.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { gpunex, homeLoggedIn } from '../lib/cli.mjs';
import { approvedProvider } from '../lib/provider.mjs';
import { AgentVoice, RENTAL_SERVER_ARGS, agentlessMachine, customerWithCredit, midweekStart, moveTestClock,
  storeRows } from '../lib/rentals.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const micro = (usdc) => Math.round(Number(usdc) * 1e6);
const RENT = { image: 'docker.io/library/busybox:1.36' };

// On the server's test clock, which stands still between moves: a rental that ran across midnight
// would have its earnings on two days.
test(`${BACKEND}: the earnings tracker adds settled and live earnings the same way in every grouping`, async () => {
  const server = await new TestServer([...RENTAL_SERVER_ARGS, '--test-clock', midweekStart(), '--enable-test-clock',
    'true']).start();
  const clock = (seconds) => moveTestClock(server, seconds);
  let provider;
  try {
    provider = await agentlessMachine(server, 'earner@example.com', { gpus: 2, price: '36.00' });
    const voice = new AgentVoice(server, provider.key, provider.machine.id);
    const ann = await customerWithCredit(server, '1000.00');
    const get = async (query = '') => {
      const r = await provider.client.request('GET', `/v1/provider/earnings${query}`);
      assert.equal(r.status, 200, r.body);
      return r.json;
    };
    const empty = await get();
    assert.equal(empty.total, '0.000000');
    assert.deepEqual(empty.groups, []);

    // One rental runs two seconds and ends (settled); another keeps running (accrues, unsettled).
    const a = await ann.request('POST', '/v1/rentals', { body: { machine_id: provider.machine.id, ...RENT } });
    const b = await ann.request('POST', '/v1/rentals', { body: { machine_id: provider.machine.id, ...RENT } });
    const t0 = await clock(0);
    await voice.send([{ rental_id: a.json.id, type: 'running', at: t0 }, { rental_id: b.json.id, type: 'running', at: t0 }]);
    const t1 = await clock(2);
    await ann.request('POST', `/v1/rentals/${a.json.id}/stop`);
    await voice.send([{ rental_id: a.json.id, type: 'ended', exit_code: 0, at: t1 }]);
    await sleep(500);

    const byDay = await get('?group_by=day');
    const [[ledgerSum]] = storeRows(server, `SELECT SUM(amount) FROM ledger_entries WHERE account LIKE 'provider:%'`);
    assert.equal(micro(byDay.settled), Number(ledgerSum), 'settled is the provider account in the ledger');
    assert.ok(micro(byDay.settled) > 0);
    assert.ok(micro(byDay.unsettled) > 0, 'the running rental accrues');
    assert.equal(micro(byDay.total), micro(byDay.settled) + micro(byDay.unsettled));
    assert.equal(byDay.groups.length, 1);
    assert.equal(byDay.groups[0].key, t0.slice(0, 10));
    assert.equal(byDay.balance, byDay.settled);
    // This week so far (weekly payouts): since Monday 00:00 UTC, the running rental's share included.
    const monday = new Date(`${t0.slice(0, 10)}T00:00:00Z`);
    monday.setUTCDate(monday.getUTCDate() - ((monday.getUTCDay() + 6) % 7));
    assert.equal(Date.parse(byDay.this_period.from), monday.getTime(), byDay.this_period.from);
    assert.equal(micro(byDay.this_period.amount), micro(byDay.total), 'everything was earned this week');
    assert.equal(byDay.pending_payout.schedule, 'weekly');
    assert.equal(new Date(`${byDay.pending_payout.next_date}T00:00:00Z`).getUTCDay(), 1, 'a Monday');
    assert.equal(byDay.pending_payout.above_minimum, false);
    assert.equal(byDay.pending_payout.method, null, 'no payout method chosen yet');
    assert.equal(byDay.pending_payout.minimum, '20.000000');

    // Every grouping adds up to the same settled figure; the GPUs split their rentals exactly.
    for (const by of ['gpu', 'model', 'machine']) {
      const g = await get(`?group_by=${by}`);
      assert.equal(g.settled, byDay.settled, by);
      const sum = g.groups.reduce((s, x) => s + micro(x.settled), 0);
      assert.equal(sum, micro(g.settled), `${by}: ${JSON.stringify(g.groups)}`);
    }
    const gpus = await get('?group_by=gpu');
    assert.deepEqual(gpus.groups.map((x) => x.key).sort(), [...a.json.gpus, ...b.json.gpus].sort());
    assert.equal((await get('?group_by=model')).groups[0].key, 'L40S');
    assert.equal((await get('?group_by=machine')).groups[0].key, provider.machine.id);
    assert.equal(byDay.today, byDay.total);
    assert.equal(byDay.last_30_days, byDay.total);

    // A range before any of it has nothing.
    assert.equal((await get('?from=2020-01-01&to=2020-02-01')).total, '0.000000');

    // Bad input names the field; customers have no earnings.
    for (const [q, field] of [['?group_by=week', 'group_by'], ['?from=yesterday', 'from'],
      ['?from=2026-02-01&to=2026-01-01', 'from'], ['?from=2020-01-01&to=2026-01-01', 'from']]) {
      const r = await provider.client.request('GET', `/v1/provider/earnings${q}`);
      assert.equal(r.status, 400, `${q}: ${r.body}`);
      assert.equal(r.json.error.field, field, q);
    }
    assert.equal((await ann.request('GET', '/v1/provider/earnings')).status, 403);
    const badFormat = await provider.client.request('GET', '/v1/provider/earnings?format=xml');
    assert.equal(badFormat.status, 400);
    assert.equal(badFormat.json.error.field, 'format');

    // With nothing running any more the figures stand still: the CSV of each grouping has the
    // JSON's groups, row for row, in USDC with 6 decimals.
    const t2 = await clock(1);
    await ann.request('POST', `/v1/rentals/${b.json.id}/stop`);
    await voice.send([{ rental_id: b.json.id, type: 'ended', exit_code: 0, at: t2 }]);
    await until('B to be settled', async () => (await get()).unsettled === '0.000000');
    for (const by of ['day', 'gpu', 'model', 'machine']) {
      const json = await get(`?group_by=${by}`);
      const csv = await provider.client.request('GET', `/v1/provider/earnings?group_by=${by}&format=csv`);
      assert.equal(csv.status, 200, csv.body);
      assert.match(csv.headers.get('content-type'), /^text\/csv/);
      const day = (t) => t.slice(0, 10);
      const lastDay = new Date(Date.parse(json.to) - 1).toISOString().slice(0, 10);
      assert.equal(csv.headers.get('content-disposition'),
        `attachment; filename="gpunex-earnings-${day(json.from)}-${lastDay}-by-${by}.csv"`);
      assert.ok(csv.body.endsWith('\r\n'), 'CRLF lines');
      const [header, ...rows] = csv.body.trimEnd().split('\r\n').map((l) => l.split(','));
      assert.deepEqual(header, [by, 'settled_usdc', 'unsettled_usdc', 'total_usdc']);
      assert.deepEqual(rows, json.groups.map((g) => [g.key, g.settled, g.unsettled, g.total]), by);
      for (const r of rows) for (const v of r.slice(1)) assert.match(v, /^\d+\.\d{6}$/);
    }
    const empty30 = await provider.client.request('GET', '/v1/provider/earnings?from=2020-01-01&to=2020-02-01&format=csv');
    assert.equal(empty30.body, 'day,settled_usdc,unsettled_usdc,total_usdc\r\n');
    assert.match(empty30.headers.get('content-disposition'), /gpunex-earnings-2020-01-01-2020-01-31-by-day\.csv/);
  } finally {
    if (provider) await provider.agent.stop();
    await server.stop();
  }
});

// The pending payout follows the payout settings in force: their schedule (day and minimum) and
// method (a monthly SEPA payout skips TARGET2's 1 January). On the server's test clock, a Monday:
// 28 December 2026; 1 January 2027 is a Friday.
test(`${BACKEND}: the pending payout follows the provider's payout schedule and method`, async () => {
  const server = await new TestServer(['--test-clock', '2026-12-28T12:00:00Z', '--enable-test-clock', 'true']).start();
  try {
    const WALLET = 'GJRs4FwHtemZ5ZE9x3FNvJ8TMwitKTh21yxdRPqn7npE';
    const HELD = 'USDC payouts are held: the operator has not set up the Solana wallet they are paid from yet. '
      + 'Your earnings stay with you and go out once it is (or choose a SEPA bank transfer).';
    const pending = async (client) => {
      const r = await client.request('GET', '/v1/provider/earnings');
      assert.equal(r.status, 200, r.body);
      return r.json.pending_payout;
    };
    const settle = async (client, body) => {
      const r = await client.request('PUT', '/v1/provider/payout-settings', { body: { password: 'correct-horse-battery', ...body } });
      assert.equal(r.status, 200, r.body);
    };
    const advance = (seconds) => moveTestClock(server, seconds);
    // On that Monday nothing was earned before the day began: today's run pays nothing, next Monday's is next.
    const weekly = await approvedProvider(server, 'weekly@example.com');
    assert.deepEqual(await pending(weekly.client), { schedule: 'weekly', method: null, next_date: '2027-01-04',
      amount: '0.000000', minimum: '20.000000', above_minimum: false, held_reason: null });
    await settle(weekly.client, { method: 'solana_usdc', wallet_address: WALLET, schedule: 'weekly' });
    assert.equal((await pending(weekly.client)).method, 'solana_usdc');
    // This server has no Solana wallet to pay from (no solana_rpc_url): a USDC payout says it is held.
    assert.equal((await pending(weekly.client)).held_reason, HELD);
    const home = homeLoggedIn(server.url, weekly.client.token, 'weekly@example.com');
    for (const args of [['earnings'], ['payouts']]) {
      const r = gpunex(home, args);
      assert.equal(r.code, 0, r.err);
      assert.ok(r.out.includes(`\n${HELD}\n`), `gpunex ${args[0]}: ${r.out}`);
    }

    const wallet = await approvedProvider(server, 'monthly-wallet@example.com');
    await settle(wallet.client, { method: 'solana_usdc', wallet_address: WALLET, schedule: 'monthly' });
    assert.deepEqual(await pending(wallet.client), { schedule: 'monthly', method: 'solana_usdc',
      next_date: '2027-01-01', amount: '0.000000', minimum: '1.000000', above_minimum: false, held_reason: HELD });

    const bank = await approvedProvider(server, 'monthly-bank@example.com');
    await settle(bank.client, { method: 'sepa', account_holder: 'Payee GmbH', iban: 'DE89370400440532013000',
      schedule: 'monthly' });
    assert.deepEqual(await pending(bank.client), { schedule: 'monthly', method: 'sepa', next_date: '2027-01-04',
      amount: '0.000000', minimum: '1.000000', above_minimum: false, held_reason: null });
    // A new destination waits its cool-down (48 h): in force from 30 December, before the next payout
    // day, so that payout goes by the new method, on its calendar (1 January). (A second later: two
    // changes in the same millisecond have no order.)
    await advance(1);
    await settle(bank.client, { method: 'solana_usdc', wallet_address: WALLET, schedule: 'monthly' });
    const byWallet = { schedule: 'monthly', method: 'solana_usdc', next_date: '2027-01-01', amount: '0.000000',
      minimum: '1.000000', above_minimum: false, held_reason: HELD };
    assert.deepEqual(await pending(bank.client), byWallet);
    await advance(49 * 3600);
    assert.deepEqual(await pending(bank.client), byWallet);
    // A change made on 30 December is in force from 1 January 13:00: that day's run (at 00:00) still pays
    // by the wallet, and says so.
    await settle(wallet.client, { method: 'sepa', account_holder: 'Payee GmbH', iban: 'DE89370400440532013000',
      schedule: 'monthly' });
    assert.deepEqual(await pending(wallet.client), byWallet);
  } finally {
    await server.stop();
  }
});
