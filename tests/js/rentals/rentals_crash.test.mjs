// A settlement is one store transaction keyed by the rental's running total (#16): a server killed
// with SIGKILL while it settles every second, again and again, neither charges twice nor loses a
// second of use. The ledger afterwards holds exactly what the rental's metered time costs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer } from '../lib/server.mjs';
import { AgentVoice, RENTAL_SERVER_ARGS, agentlessMachine, customerWithCredit, storeRows } from '../lib/rentals.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const micro = (usdc) => Math.round(Number(usdc) * 1e6);

test(`${BACKEND}: killing the server during settlements neither double-charges nor loses usage`, async () => {
  const server = await new TestServer([...RENTAL_SERVER_ARGS.filter((a, i, all) => a !== '--rentals-tick-ms'
    && all[i - 1] !== '--rentals-tick-ms'), '--rentals-settle-interval-s', '1', '--rentals-tick-ms', '100', '--worker-lease-s', '1']).start();
  let provider;
  try {
    provider = await agentlessMachine(server, 'crash-provider@example.com', { gpus: 1, price: '3.60' });
    const ann = await customerWithCredit(server, '100.00');
    const voice = new AgentVoice(server, provider.key, provider.machine.id);
    const made = await ann.request('POST', '/v1/rentals', { body: { machine_id: provider.machine.id,
      image: 'docker.io/library/busybox:1.36' } });
    assert.equal(made.status, 201, made.body);
    const id = made.json.id;
    assert.equal((await voice.send([{ rental_id: id, type: 'running' }])).status, 200);

    // Kill it at moments that fall anywhere in the worker's settlements, and start it again (its
    // worker lease, held by the dead process, lapses within a second: --worker-lease-s 1).
    for (let i = 0; i < 6; i++) {
      await sleep(600 + ((i * 337) % 500));
      server.proc.kill('SIGKILL');
      await server.exited;
      await server.start();
      for (const c of [ann, voice.agent]) c.baseUrl = server.url;
    }
    await sleep(1500);
    const settledBefore = storeRows(server, `SELECT COUNT(*) FROM ledger_transactions WHERE reference = '${id}'`)[0][0];
    assert.ok(Number(settledBefore) >= 3, `settled ${settledBefore} times while running`);
    assert.equal((await ann.request('POST', `/v1/rentals/${id}/stop`)).status, 200);
    assert.equal((await voice.send([{ rental_id: id, type: 'ended', exit_code: 143 }])).status, 200);
    const ended = (await ann.request('GET', `/v1/rentals/${id}`)).json;
    assert.equal(ended.state, 'ended');

    const ranMs = Date.parse(ended.ended_at) - Date.parse(ended.running_since);
    const owed = Math.floor((3600000 * ranMs) / 3600000);  // 3.60 USDC an hour: 1 micro-USDC a millisecond
    assert.equal(micro(ended.cost_so_far), owed);
    const [[customer]] = storeRows(server, `SELECT customer_id FROM rentals WHERE id = '${id}'`);
    const [[charged]] = storeRows(server, `SELECT -SUM(amount) FROM ledger_entries WHERE account = 'customer:${customer}'
      AND tx_id IN (SELECT id FROM ledger_transactions WHERE reference = '${id}')`);
    assert.equal(Number(charged), owed, 'the settlements add up to the metered time, once');
    const [[total]] = storeRows(server, 'SELECT SUM(amount) FROM ledger_entries');
    assert.equal(Number(total), 0);
    const [[keys, distinct]] = storeRows(server, `SELECT COUNT(dedupe_key), COUNT(DISTINCT dedupe_key) FROM ledger_transactions
      WHERE reference = '${id}'`);
    assert.equal(keys, distinct);
  } finally {
    if (provider) await provider.agent.stop();
    await server.stop();
  }
});
