// A request whose replica died after it reserved its Idempotency-Key (issue 20's chaos test found it): the
// key stays "in progress", and the customer's retry used to get 409 until the key was pruned an hour later.
// Now a retry takes the key over once the first attempt has committed nothing for idempotency_takeover_s,
// and runs the request once; a first attempt that committed something keeps its key (the retry would do
// its work twice). The dead attempt is the row a killed replica leaves, written here into the store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { BACKEND, TestServer, canonicalJson } from '../lib/server.mjs';
import { AgentVoice, RENTAL_SERVER_ARGS, agentlessMachine, customerWithCredit, storeRows } from '../lib/rentals.mjs';
import { storeExec } from '../lib/payouts.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const TAKEOVER_S = 1;

test(`${BACKEND}: a retry takes over the Idempotency-Key of an attempt that died before committing, once`, async () => {
  const server = await new TestServer([...RENTAL_SERVER_ARGS, '--idempotency-takeover-s', String(TAKEOVER_S)]).start();
  let provider;
  try {
    provider = await agentlessMachine(server, 'takeover@example.com', { gpus: 2 });
    const customer = await customerWithCredit(server, '100.00');
    const [[userId]] = storeRows(server, "SELECT id FROM users WHERE email LIKE 'customer%'");
    const body = { machine_id: provider.machine.id, image: 'docker.io/library/busybox:1.36' };
    // What a replica killed mid-request leaves: the key reserved (status 0: nothing committed; -1: committed).
    const dead = (key, status) => {
      const hash = createHash('sha256').update(`POST /v1/rentals\n${canonicalJson(body)}`).digest('hex');
      storeExec(server, 'INSERT INTO idempotency_keys (scope, idem_key, request_hash, status, body, created_at) ' +
        `VALUES ('${userId}', '${key}', '${hash}', ${status}, '', ${Date.now()})`);
    };
    const rent = (key) => customer.request('POST', '/v1/rentals', { body, headers: { 'Idempotency-Key': key } });
    const rentals = () => Number(storeRows(server, `SELECT COUNT(*) FROM rentals WHERE machine_id = '${provider.machine.id}'`)[0][0]);

    dead('died-before-commit', 0);
    dead('died-after-commit', -1);
    for (const key of ['died-before-commit', 'died-after-commit']) {
      const r = await rent(key);
      assert.equal(r.status, 409, r.body);
      assert.equal(r.json.error.code, 'idempotency_in_progress');
    }
    assert.equal(rentals(), 0);

    await sleep(TAKEOVER_S * 1000 + 300);
    const taken = await rent('died-before-commit');
    assert.equal(taken.status, 201, taken.body);
    assert.equal(rentals(), 1);
    const replay = await rent('died-before-commit');
    assert.equal(replay.status, 201);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.body, taken.body);
    // Committed before its replica died: never run again (its rental may exist); in progress until pruned.
    const committed = await rent('died-after-commit');
    assert.equal(committed.status, 409, committed.body);
    assert.equal(rentals(), 1, 'one rental for the two keys: the committed attempt is not run twice');
  } finally {
    if (provider) await provider.agent.stop();
    await server.stop();
  }
});

// A refusal that wrote nothing is not replayed: the customer who was short of credit, or found no GPU
// free, retries with the same key (the dashboard keeps one per form) once that changed, and is answered
// as things stand then.
test(`${BACKEND}: a retry after a 402 or a 409 that wrote nothing is asked again, not replayed`, async () => {
  const server = await new TestServer(RENTAL_SERVER_ARGS).start();
  let provider;
  try {
    provider = await agentlessMachine(server, 'refused-retry@example.com', { gpus: 1 });
    const body = { machine_id: provider.machine.id, image: 'docker.io/library/busybox:1.36' };
    const rent = (customer, key) => customer.request('POST', '/v1/rentals',
      { body, headers: { 'Idempotency-Key': key } });

    const poor = await customerWithCredit(server, '0.10');
    const short = await rent(poor, 'rent-form-1');
    assert.equal(short.status, 402, short.body);
    const { email } = (await poor.request('GET', '/v1/me')).json;
    const credited = await server.adminClient.request('POST', '/v1/admin/credits',
      { body: { email, amount: '10.00', reference: `top-up ${process.pid}` } });
    assert.equal(credited.status, 201, credited.body);
    const funded = await rent(poor, 'rent-form-1');
    assert.equal(funded.status, 201, funded.body);
    assert.equal(funded.headers.get('idempotent-replayed'), null);
    // Now it did something: replayed, never run twice.
    const again = await rent(poor, 'rent-form-1');
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.json.id, funded.json.id);

    // The one GPU taken: 409; once it is free again, the same key rents it.
    const other = await customerWithCredit(server, '10.00');
    const busy = await rent(other, 'rent-form-2');
    assert.equal(busy.status, 409, busy.body);
    const voice = new AgentVoice(server, provider.key, provider.machine.id);
    const ended = await voice.send([{ rental_id: funded.json.id, type: 'ended', reason: 'start_failed',
      error: 'pull access denied' }]);
    assert.equal(ended.status, 200, ended.body);
    const freed = await rent(other, 'rent-form-2');
    assert.equal(freed.status, 201, freed.body);
    assert.equal(freed.headers.get('idempotent-replayed'), null);
  } finally {
    if (provider) await provider.agent.stop();
    await server.stop();
  }
});
