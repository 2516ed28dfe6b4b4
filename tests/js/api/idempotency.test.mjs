// Idempotency-Key on answers that carry an API key (the approval, a new key): a
// retry gets the first answer, while the store keeps neither the answer nor the
// Idempotency-Key in clear (tests/scenarios/idempotency.scn covers the replays).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { BACKEND, TestServer, Client } from '../lib/server.mjs';

function rows(server, q) {
  const out = server.db.startsWith('sqlite:')
    ? execFileSync('sqlite3', ['-separator', '|', server.db.slice(7), q]).toString()
    : execFileSync('psql', [server.db, '-tA', '-F', '|', '-c', q]).toString();
  return out.split('\n').filter(Boolean);
}

test(`${BACKEND}: sealed Idempotency-Key replays keep API keys out of the store`, async () => {
  const server = await new TestServer().start();
  try {
    const alice = new Client(server.url);
    await alice.signupAndLogin('alice@example.com');
    const app = await alice.request('POST', '/v1/applications', { body: {
      full_name: 'Alice', email: 'alice@example.com', ups: false, commitment_months: 3,
      gpus: [{ model: 'L4', count: 1, system_ram_gb: 64, download_gbps: 1, upload_gbps: 1, availability: '24/7',
        location: { city: 'Lyon', country: 'FR', region: 'eu-west' } }] } });
    assert.equal(app.status, 201, app.body);
    assert.equal((await alice.request('POST', `/v1/applications/${app.json.id}/submit`)).status, 200);
    server.createUser('rita@example.com', 'operator-password-1', 'reviewer');
    const rita = new Client(server.url);
    await rita.login('rita@example.com', 'operator-password-1');

    const approveKey = 'c0ffee00-approve-4d1b-9a7e-0f3c2b1a9d8e';
    const approve = () => rita.request('POST', `/v1/review/applications/${app.json.id}/decision`,
      { headers: { 'Idempotency-Key': approveKey }, body: { decision: 'approve', tier: 'community' } });
    const first = await approve();
    assert.equal(first.status, 200, first.body);
    const again = await approve();
    assert.equal(again.status, 200, again.body);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.body, first.body, 'the first answer, byte for byte');

    const newKey = 'c0ffee00-newkey-4d1b-9a7e-0f3c2b1a9d8e';
    const create = () => alice.request('POST', '/v1/provider/api-keys', { headers: { 'Idempotency-Key': newKey } });
    const k1 = await create();
    assert.equal(k1.status, 201, k1.body);
    const k2 = await create();
    assert.equal(k2.status, 201);
    assert.equal(k2.headers.get('idempotent-replayed'), 'true');
    assert.equal(k2.json.api_key, k1.json.api_key);
    const keys = await alice.request('GET', '/v1/provider/api-keys');
    assert.deepEqual(keys.json.items.map((k) => k.id).sort(), [first.json.api_key_id, k1.json.id].sort(),
      'no second key from either replay');

    // The stored rows: named by a hash of the Idempotency-Key, answers sealed.
    const stored = rows(server, 'SELECT idem_key, status, body FROM idempotency_keys');
    assert.equal(stored.length, 2);
    for (const r of stored) {
      const [name, status, body] = r.split('|');
      assert.match(name, /^sealed:[0-9a-f]{64}$/);
      assert.ok(['200', '201'].includes(status), r);
      assert.match(body, /^[A-Za-z0-9+/]+=*$/, 'base64 of the sealed answer');
      for (const secret of [first.json.api_key, k1.json.api_key, approveKey, newKey, 'api_key']) {
        assert.ok(!r.includes(secret), `the stored row shows ${secret}`);
      }
    }
    if (server.db.startsWith('sqlite:')) {
      // The created key was never stored in clear anywhere: not in the database file nor its WAL.
      const file = server.db.slice(7);
      const bytes = [file, `${file}-wal`].filter(existsSync).map((f) => readFileSync(f).toString('latin1')).join('');
      assert.ok(bytes.length > 0);
      for (const secret of [k1.json.api_key, approveKey, newKey]) {
        assert.ok(!bytes.includes(secret), `the SQLite file holds ${secret}`);
      }
    }
  } finally {
    await server.stop();
  }
});

// A retry is the same request when its JSON is: other spacing or key order (another client library, a
// pretty-printer) replays the first answer; a changed value under the same key is refused.
test(`${BACKEND}: an Idempotency-Key's request is compared as JSON, not as bytes`, async () => {
  const server = await new TestServer().start();
  try {
    const bo = new Client(server.url);
    await bo.signupAndLogin('bo@example.com');
    const form = { full_name: 'Bo', email: 'bo@example.com', ups: false, commitment_months: 3,
      gpus: [{ model: 'L4', count: 1, system_ram_gb: 64, download_gbps: 1, upload_gbps: 1, availability: '24/7',
        location: { city: 'Lyon', country: 'FR', region: 'eu-west' } }] };
    const headers = { 'Idempotency-Key': 'c0ffee00-spacing-4d1b-9a7e-0f3c2b1a9d8e' };
    const first = await bo.request('POST', '/v1/applications', { headers, raw: JSON.stringify(form) });
    assert.equal(first.status, 201, first.body);
    const reordered = Object.fromEntries(Object.entries(form).reverse());
    const spaced = await bo.request('POST', '/v1/applications', { headers, raw: `\n${JSON.stringify(reordered, null, 2)}\n` });
    assert.equal(spaced.status, 201, spaced.body);
    assert.equal(spaced.headers.get('idempotent-replayed'), 'true');
    assert.equal(spaced.json.id, first.json.id);
    const changed = await bo.request('POST', '/v1/applications', { headers, raw: JSON.stringify({ ...form, commitment_months: 6 }) });
    assert.equal(changed.status, 422, changed.body);
    assert.equal(changed.json.error.code, 'idempotency_key_reused');
    assert.equal((await bo.request('GET', '/v1/applications')).json.items.length, 1);
  } finally {
    await server.stop();
  }
});
