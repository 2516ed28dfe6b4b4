// A heartbeat's API key is checked twice: by authentication (through the key cache, which a revocation
// made through the API empties at once) and again inside the heartbeat's transaction, in the same read as
// its machine. The second check is what refuses a key revoked behind the cache's back (here: by a
// statement on the store itself, which tells no replica), and it answers as authentication would: 401
// invalid_api_key, not the 404 a live key of another provider gets for this machine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer } from '../lib/server.mjs';
import { agentlessMachine, AgentVoice, storeRows } from '../lib/rentals.mjs';

test(`${BACKEND}: a key revoked behind the key cache is refused by the heartbeat's own check with 401`, async () => {
  const server = await new TestServer().start();
  let mine, other;
  try {
    mine = await agentlessMachine(server, 'hb-key-owner@example.com');
    other = await agentlessMachine(server, 'hb-key-other@example.com');
    await mine.agent.stop();  // the test sends this machine's heartbeats itself
    const owner = new AgentVoice(server, mine.key, mine.machine.id);
    const stranger = new AgentVoice(server, other.key, mine.machine.id);

    let r = await owner.heartbeat([]);
    assert.equal(r.status, 200, r.body);
    r = await stranger.heartbeat([]);  // a live key, of another provider
    assert.equal(r.status, 404, r.body);
    assert.equal(r.json.error.field, 'machine_id');

    // Revoked in the store alone: the server's key cache still holds the key as live (up to 10 s).
    storeRows(server, `UPDATE api_keys SET revoked_at = 1 WHERE provider_id = ` +
      `(SELECT provider_id FROM machines WHERE id = '${mine.machine.id}')`);
    r = await owner.heartbeat([]);
    assert.equal(r.status, 401, r.body);
    assert.equal(r.json.error.code, 'invalid_api_key');
    // The other provider's machine and key are untouched.
    r = await new AgentVoice(server, other.key, other.machine.id).heartbeat([]);
    assert.equal(r.status, 200, r.body);
  } finally {
    await other?.agent.stop();
    await mine?.agent.stop();
    await server.stop();
  }
});
