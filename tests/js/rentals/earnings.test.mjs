// The provider's earnings tracker (#18): GET /v1/provider/earnings adds the settlements the ledger
// credited to the provider (80% of what customers paid) and the live accrual of running rentals,
// marked as not settled, grouped by day, GPU, model or machine; every grouping adds up to the same
// total, and the settled part is exactly the provider's ledger account.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer } from '../lib/server.mjs';
import { AgentVoice, RENTAL_SERVER_ARGS, agentlessMachine, customerWithCredit, storeRows } from '../lib/rentals.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const micro = (usdc) => Math.round(Number(usdc) * 1e6);
const RENT = { image: 'docker.io/library/busybox:1.36' };

test(`${BACKEND}: the earnings tracker adds settled and live earnings the same way in every grouping`, async () => {
  const server = await new TestServer(RENTAL_SERVER_ARGS).start();
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
    await voice.send([{ rental_id: a.json.id, type: 'running' }, { rental_id: b.json.id, type: 'running' }]);
    await sleep(2000);
    await ann.request('POST', `/v1/rentals/${a.json.id}/stop`);
    await voice.send([{ rental_id: a.json.id, type: 'ended', exit_code: 0 }]);
    await sleep(500);

    const byDay = await get('?group_by=day');
    const [[ledgerSum]] = storeRows(server, `SELECT SUM(amount) FROM ledger_entries WHERE account LIKE 'provider:%'`);
    assert.equal(micro(byDay.settled), Number(ledgerSum), 'settled is the provider account in the ledger');
    assert.ok(micro(byDay.settled) > 0);
    assert.ok(micro(byDay.unsettled) > 0, 'the running rental accrues');
    assert.equal(micro(byDay.total), micro(byDay.settled) + micro(byDay.unsettled));
    assert.equal(byDay.groups.length, 1);
    assert.equal(byDay.groups[0].key, new Date().toISOString().slice(0, 10));
    assert.equal(byDay.balance, byDay.settled);
    assert.equal(byDay.pending_payout.schedule, 'weekly');
    assert.equal(new Date(`${byDay.pending_payout.next_date}T00:00:00Z`).getUTCDay(), 1, 'a Monday');
    assert.equal(byDay.pending_payout.above_minimum, false);

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
  } finally {
    if (provider) await provider.agent.stop();
    await server.stop();
  }
});
