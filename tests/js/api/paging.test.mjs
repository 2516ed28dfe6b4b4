// Lists page with ?limit=&cursor= (API.md): walking the pages gives every item once, in the
// list's order; a bad limit or a cursor from elsewhere is a 400 naming the parameter, on every list
// the API contract documents.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, Client } from '../lib/server.mjs';
import { approvedProvider } from '../lib/provider.mjs';

async function walk(client, path, limit) {
  const seen = [];
  let cursor = null;
  for (let pages = 0; pages < 100; ++pages) {
    const sep = path.includes('?') ? '&' : '?';
    const r = await client.request('GET', `${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    assert.equal(r.status, 200, r.body);
    assert.ok(r.json.items.length <= limit, r.body);
    seen.push(...r.json.items);
    cursor = r.json.next_cursor;
    if (cursor === null) return seen;
    assert.equal(r.json.items.length, limit, 'only the last page is short');
  }
  throw new Error('more than 100 pages');
}

test(`${BACKEND}: api keys, notifications and the catalog page through every item once`, async () => {
  const server = await new TestServer().start();
  try {
    const { client } = await approvedProvider(server, 'pages@example.com');
    for (let i = 0; i < 4; ++i) {
      const k = await client.request('POST', '/v1/provider/api-keys');
      assert.ok(k.status === 200 || k.status === 201, k.body);
    }
    for (const path of ['/v1/provider/api-keys', '/v1/notifications', '/v1/catalog/gpus']) {
      const all = await client.request('GET', `${path}?limit=200`);
      assert.equal(all.status, 200, all.body);
      assert.ok(all.json.items.length >= 2, `${path}: ${all.body}`);
      assert.equal(all.json.next_cursor, null);
      for (const limit of [1, 2]) {
        const paged = await walk(client, path, limit);
        assert.deepEqual(paged.map((x) => x.id), all.json.items.map((x) => x.id), `${path} limit ${limit}`);
      }
    }
    // Pages stay put when newer items arrive: the cursor names the last item seen.
    const first = await client.request('GET', '/v1/provider/api-keys?limit=2');
    await client.request('POST', '/v1/provider/api-keys');
    const second = await client.request('GET', `/v1/provider/api-keys?limit=2&cursor=${first.json.next_cursor}`);
    assert.equal(second.status, 200, second.body);
    const ids = first.json.items.map((x) => x.id);
    for (const k of second.json.items) assert.ok(!ids.includes(k.id), 'no key shown twice');

    for (const [query, field] of [['limit=0', 'limit'], ['limit=201', 'limit'], ['limit=abc', 'limit'],
      ['cursor=ntf_nope', 'cursor']]) {
      for (const path of ['/v1/provider/api-keys', '/v1/notifications', '/v1/provider/machines',
        '/v1/applications']) {
        const r = await client.request('GET', `${path}?${query}`);
        assert.equal(r.status, 400, `${path}?${query}: ${r.body}`);
        assert.equal(r.json.error.field, field, r.body);
      }
    }
    // Another user's notification is no cursor for this user.
    const other = new Client(server.url);
    await other.signupAndLogin('other@example.com');
    const mine = await client.request('GET', '/v1/notifications?limit=1');
    const theirs = await other.request('GET', `/v1/notifications?cursor=${mine.json.items[0].id}`);
    assert.equal(theirs.status, 400, theirs.body);
    assert.equal(theirs.json.error.field, 'cursor');
  } finally {
    await server.stop();
  }
});

// Every list the API contract (/v1/openapi.json) says takes ?limit=&cursor= does: a bad limit or cursor is
// a 400 naming it, never a list that ignored it (the provider's rentals and payouts, the admin's payout runs
// once did).
test(`${BACKEND}: every documented list refuses a bad limit or cursor, naming it`, async () => {
  const server = await new TestServer().start();
  try {
    const { client: provider } = await approvedProvider(server, 'contract-pages@example.com');
    server.createUser('pages-admin@example.com', 'operator-password-1', 'admin');
    const admin = new Client(server.url);
    await admin.login('pages-admin@example.com', 'operator-password-1');
    const doc = (await provider.request('GET', '/v1/openapi.json')).json;
    const lists = Object.entries(doc.paths).filter(([p, ops]) => !p.includes('{') &&
      (ops.get?.parameters || []).some((q) => q.in === 'query' && q.name === 'limit')).map(([p]) => p);
    for (const must of ['/v1/provider/rentals', '/v1/provider/payouts', '/v1/admin/payout-runs', '/v1/rentals']) {
      assert.ok(lists.includes(must), `${must} is documented as a list: ${lists.join(', ')}`);
    }
    for (const path of lists) {
      for (const [query, field] of [['limit=abc', 'limit'], ['limit=0', 'limit'], ['cursor=nope_nothing', 'cursor']]) {
        let r = await provider.request('GET', `${path}?${query}`);
        if (r.status === 403) r = await admin.request('GET', `${path}?${query}`);
        assert.equal(r.status, 400, `${path}?${query}: ${r.status} ${r.body.slice(0, 200)}`);
        assert.equal(r.json.error.field, field, `${path}?${query}: ${r.body}`);
      }
    }
  } finally {
    await server.stop();
  }
});

test(`${BACKEND}: every documented route refuses a query parameter it does not read, naming it`, async () => {
  // Else a filter the route does not have (GET /v1/rentals?status=running) answers as if it had applied it.
  const server = await new TestServer().start();
  try {
    const { client: provider } = await approvedProvider(server, 'contract-query@example.com');
    server.createUser('query-admin@example.com', 'operator-password-1', 'admin');
    const admin = new Client(server.url);
    await admin.login('query-admin@example.com', 'operator-password-1');
    const doc = (await provider.request('GET', '/v1/openapi.json')).json;
    let checked = 0;
    for (const [path, ops] of Object.entries(doc.paths)) {
      if (!ops.get || path.includes('{')) continue;
      const takes = (ops.get.parameters || []).filter((q) => q.in === 'query').map((q) => q.name);
      let r = await provider.request('GET', `${path}?no_such_filter=1`);
      if (r.status === 403) r = await admin.request('GET', `${path}?no_such_filter=1`);
      if (r.status === 403 && ops.get['x-gpunex-access'] === 'agent-key') continue;  // the agent's: a key
      assert.equal(r.status, 400, `${path}: ${r.status} ${r.body.slice(0, 200)}`);
      assert.deepEqual([r.json.error.code, r.json.error.field], ['unknown_field', 'no_such_filter'], path);
      assert.ok(r.json.error.message.endsWith(takes.length ? `takes ${takes.join(', ')}` : 'takes none'),
        `${path}: ${r.json.error.message}`);
      ++checked;
    }
    assert.ok(checked >= 20, `only ${checked} routes checked`);
  } finally {
    await server.stop();
  }
});
