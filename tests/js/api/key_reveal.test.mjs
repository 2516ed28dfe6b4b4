// The key issued at approval, revealed once to its owner (POST /v1/provider/api-keys/{id}/reveal):
// the revealed key is the one that authenticates, a second reveal is 410, another provider's key
// is 404, an API key cannot reveal, and revoking or rotating the key before it is shown clears it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, Client } from '../lib/server.mjs';
import { approvedProvider } from '../lib/provider.mjs';

const approvalKeyOf = async (client) => {
  const r = await client.request('GET', '/v1/provider/api-keys');
  assert.equal(r.status, 200, r.body);
  return r.json.items.find((k) => k.reveal);
};

test(`${BACKEND}: the approval key is revealed once, to its owner only`, async () => {
  const server = await new TestServer().start();
  try {
    const alice = await approvedProvider(server, 'alice@example.com', { reveal: false });
    const bob = await approvedProvider(server, 'bob@example.com', { reveal: false });
    const carol = await approvedProvider(server, 'carol@example.com', { reveal: false });

    const k = await approvalKeyOf(alice.client);
    assert.equal(k.reveal.state, 'available');
    assert.equal(k.reveal.cleared_at, null);
    assert.ok(Date.parse(k.reveal.expires_at) - Date.parse(k.created_at) === 7 * 86400000);

    // Nobody else reaches it: another provider gets 404, a customer has no provider keys at all,
    // and an API key (even alice's own) cannot reveal.
    const other = await bob.client.request('POST', `/v1/provider/api-keys/${k.id}/reveal`);
    assert.equal(other.status, 404);
    assert.equal(other.json.error.code, 'not_found');
    const customer = new Client(server.url);
    await customer.signupAndLogin('dave@example.com');
    assert.equal((await customer.request('POST', `/v1/provider/api-keys/${k.id}/reveal`)).status, 403);
    const second = await alice.client.request('POST', '/v1/provider/api-keys');
    assert.equal(second.status, 201, second.body);
    const aliceSecondKey = second.json.api_key;
    const byKey = await alice.client.request('POST', `/v1/provider/api-keys/${k.id}/reveal`,
      { headers: { Authorization: `Bearer ${aliceSecondKey}` } });
    assert.equal(byKey.status, 403);
    assert.equal(byKey.json.error.code, 'api_key_not_allowed');
    assert.equal((await alice.client.request('POST', '/v1/provider/api-keys/key_nope/reveal')).status, 404);

    // The owner: the same key the approval issued, and it authenticates.
    const shown = await alice.client.request('POST', `/v1/provider/api-keys/${k.id}/reveal`);
    assert.equal(shown.status, 200, shown.body);
    assert.equal(shown.json.id, k.id);
    assert.equal(shown.json.id, alice.keyId);
    assert.ok(shown.json.api_key.startsWith(k.prefix));
    const asAgent = await fetch(`${server.url}/v1/provider/profile`,
      { headers: { Authorization: `Bearer ${shown.json.api_key}` } });
    assert.equal(asAgent.status, 200);
    assert.equal((await asAgent.json()).provider_id, shown.json.provider_id);

    // Once only.
    const again = await alice.client.request('POST', `/v1/provider/api-keys/${k.id}/reveal`);
    assert.equal(again.status, 410);
    assert.equal(again.json.error.code, 'key_already_shown');
    assert.match(again.json.error.message, /already shown/);
    assert.doesNotMatch(again.body, /gpx_/);
    const after = await approvalKeyOf(alice.client);
    assert.equal(after.reveal.state, 'revealed');
    assert.equal(after.reveal.cleared_at, shown.json.revealed_at);
    // A key made later has no reveal: it was shown when it was made.
    const made = await alice.client.request('POST', '/v1/provider/api-keys');
    assert.equal(made.status, 201);
    assert.equal((await alice.client.request('POST', `/v1/provider/api-keys/${made.json.id}/reveal`)).status, 404);

    // Revoked before it was shown: the kept key is cleared, and the reveal says why.
    const bk = await approvalKeyOf(bob.client);
    assert.equal((await bob.client.request('DELETE', `/v1/provider/api-keys/${bk.id}`)).status, 200);
    const revoked = await bob.client.request('POST', `/v1/provider/api-keys/${bk.id}/reveal`);
    assert.equal(revoked.status, 410);
    assert.equal(revoked.json.error.code, 'key_revoked');
    assert.equal((await approvalKeyOf(bob.client)).reveal.state, 'revoked');

    // Rotated (a new key revoking it) before it was shown: the same.
    const ck = await approvalKeyOf(carol.client);
    const rotated = await carol.client.request('POST', '/v1/provider/api-keys', { body: { revoke: ck.id } });
    assert.equal(rotated.status, 201);
    const gone = await carol.client.request('POST', `/v1/provider/api-keys/${ck.id}/reveal`);
    assert.equal(gone.status, 410);
    assert.equal(gone.json.error.code, 'key_revoked');
  } finally {
    await server.stop();
  }
});
