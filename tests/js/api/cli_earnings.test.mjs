// gpunex earnings (#18): a provider's earnings as GET /v1/provider/earnings answers them: the
// range's total, today, the last 7 and 30 days, the pending payout and the groups (--group-by day,
// gpu, model or machine; --from/--to), --json the API's answer itself, --csv the server's CSV; bad
// arguments are refused before anything is sent, the server's refusals print its message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { gpunex, homeLoggedIn } from '../lib/cli.mjs';
import { AgentVoice, RENTAL_SERVER_ARGS, agentlessMachine, customerWithCredit } from '../lib/rentals.mjs';

test('gpunex earnings: argument errors, before anything is sent', () => {
  const home = homeLoggedIn('http://127.0.0.1:9', 'test-token', 'earner@example.com');
  const fails = (r, pattern) => {
    assert.notEqual(r.code, 0, r.out);
    assert.match(r.err, pattern);
    assert.doesNotMatch(r.err, /127\.0\.0\.1:9|Couldn't connect|refused/i, 'nothing was sent');
  };
  fails(gpunex(home, ['earnings', '--group-by', 'week']), /--group-by/);
  const both = gpunex(home, ['earnings', '--csv', '--json']);
  assert.equal(both.code, 1);
  assert.equal(JSON.parse(both.out).error.message, '--csv and --json exclude each other', 'a JSON error, as --json asks');
  const fresh = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
  const r = gpunex(fresh, ['--server', 'http://127.0.0.1:9', 'earnings']);
  assert.equal(r.code, 1);
  assert.equal(r.err, 'error: not logged in to http://127.0.0.1:9; run `gpunex login`\n');
  const help = gpunex(home, ['earnings', '--help']);
  for (const s of ['--group-by', '--from', '--to', '--csv', '--json']) assert.ok(help.out.includes(s), s);
});

test(`${BACKEND}: gpunex earnings shows the API's figures, groups and CSV`, async () => {
  const server = await new TestServer(RENTAL_SERVER_ARGS).start();
  let provider;
  try {
    provider = await agentlessMachine(server, 'earner@example.com', { gpus: 2, price: '36.00' });
    const voice = new AgentVoice(server, provider.key, provider.machine.id);
    const ann = await customerWithCredit(server, '1000.00');
    const rent = await ann.request('POST', '/v1/rentals', { body: { machine_id: provider.machine.id, gpu_count: 2,
      image: 'docker.io/library/busybox:1.36' } });
    assert.equal(rent.status, 201, rent.body);
    await voice.send([{ rental_id: rent.json.id, type: 'running' }]);
    await new Promise((r) => setTimeout(r, 1500));
    await ann.request('POST', `/v1/rentals/${rent.json.id}/stop`);
    await voice.send([{ rental_id: rent.json.id, type: 'ended', exit_code: 0 }]);
    const api = async (q) => {
      const r = await provider.client.request('GET', `/v1/provider/earnings${q}`);
      assert.equal(r.status, 200, r.body);
      return r;
    };
    await until('the rental to be settled', async () => (await api('')).json.settled !== '0.000000', 10000);
    // A fixed range (the default one ends now, which moves): the days the server's default covers.
    const dflt = (await api('')).json;
    const from = dflt.from.slice(0, 10);
    const to = new Date(Date.parse(dflt.to) + 86400000).toISOString().slice(0, 10);
    const home = homeLoggedIn(server.url, provider.client.token, 'earner@example.com');

    for (const by of ['day', 'gpu', 'model', 'machine']) {
      const q = `?group_by=${by}&from=${from}&to=${to}`;
      const expected = (await api(q)).json;
      const json = gpunex(home, ['earnings', '--group-by', by, '--from', from, '--to', to, '--json']);
      assert.equal(json.code, 0, json.err);
      assert.deepEqual(JSON.parse(json.out), expected, by);

      const text = gpunex(home, ['earnings', '--group-by', by, '--from', from, '--to', to]);
      assert.equal(text.code, 0, text.err);
      assert.match(text.out, new RegExp(`^earnings from ${expected.from} to ${expected.to}: ${expected.total} USDC ` +
        `\\(settled ${expected.settled}, not settled yet ${expected.unsettled}\\)$`, 'm'));
      assert.match(text.out, new RegExp(`^today ${expected.today}, last 7 days ${expected.last_7_days}, ` +
        `last 30 days ${expected.last_30_days} USDC$`, 'm'));
      assert.ok(text.out.includes(`\nthis week (since ${expected.this_period.from}): ${expected.this_period.amount} USDC\n`),
        text.out);
      const p = expected.pending_payout;
      assert.match(text.out, new RegExp(`^pending payout: ${p.amount} USDC on ${p.next_date} \\(weekly, no payout method ` +
        `chosen yet\\); below the minimum of ${p.minimum} USDC$`, 'm'));
      assert.match(text.out, new RegExp(`^${by.toUpperCase()} +SETTLED +NOT SETTLED +TOTAL USDC$`, 'm'));
      assert.ok(expected.groups.length > 0);
      for (const g of expected.groups) {
        assert.match(text.out, new RegExp(`^${g.key} +${g.settled} +${g.unsettled} +${g.total}$`, 'm'), `${by}: ${text.out}`);
      }

      const csv = gpunex(home, ['earnings', '--group-by', by, '--from', from, '--to', to, '--csv']);
      assert.equal(csv.code, 0, csv.err);
      assert.equal(csv.out, (await api(`${q}&format=csv`)).body);
    }
    const empty = gpunex(home, ['earnings', '--from', '2020-01-01', '--to', '2020-02-01']);
    assert.equal(empty.code, 0, empty.err);
    assert.match(empty.out, /^no earnings in this range$/m);

    const bad = gpunex(home, ['earnings', '--from', 'yesterday']);
    assert.equal(bad.code, 1);
    assert.match(bad.err, /from must be a date \(2026-12-01\) or an RFC 3339 time \(field: from, --from\)/);
  } finally {
    if (provider) await provider.agent.stop();
    await server.stop();
  }
});
