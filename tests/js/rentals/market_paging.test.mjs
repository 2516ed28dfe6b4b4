// The marketplace pages by cursor (API.md paging): the cursor names the last offer of the page, so an
// offer rented out between two pages makes the next page skip nothing (an offset cursor skipped the
// offer after the page for each one taken before it). A cursor from another sort, or made up, is a 400
// naming it; a number is read as an offset, as older servers gave it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer } from '../lib/server.mjs';
import { RENTAL_SERVER_ARGS, agentlessMachine, customerWithCredit } from '../lib/rentals.mjs';

test(`${BACKEND}: an offer rented between two pages makes the next page skip nothing`, async () => {
  const server = await new TestServer(RENTAL_SERVER_ARGS).start();
  const machines = [];
  try {
    for (const price of ['0.40', '0.50', '0.60', '0.70']) {
      machines.push(await agentlessMachine(server, `paging${price.replace('.', '')}@example.com`, { gpus: 1, price }));
    }
    const ann = await customerWithCredit(server);
    const byPrice = '/v1/marketplace/offers?model=L40S&sort=price&limit=1';
    const all = (await ann.request('GET', '/v1/marketplace/offers?model=L40S&sort=price')).json.items
      .map((o) => o.machine_id);
    assert.deepEqual(all, machines.map((m) => m.machine.id), 'cheapest first');

    const first = await ann.request('GET', byPrice);
    assert.equal(first.status, 200, first.body);
    assert.deepEqual(first.json.items.map((o) => o.machine_id), [all[0]]);
    assert.equal(typeof first.json.next_cursor, 'string');
    // Someone rents the offer just seen: the second page is still the second cheapest.
    const rented = await ann.request('POST', '/v1/rentals',
      { body: { machine_id: all[0], image: 'docker.io/library/busybox:1.36' } });
    assert.equal(rented.status, 201, rented.body);
    const second = await ann.request('GET', `${byPrice}&cursor=${first.json.next_cursor}`);
    assert.equal(second.status, 200, second.body);
    assert.deepEqual(second.json.items.map((o) => o.machine_id), [all[1]], second.body);
    assert.equal(second.json.total, 3, 'three offers left');
    const old = await ann.request('GET', `${byPrice}&cursor=1`);
    assert.deepEqual(old.json.items.map((o) => o.machine_id), [all[2]], 'an offset skips the one after the page');

    // Walking the rest by cursor ends at the last offer, whose page has no next cursor.
    const walked = [];
    let cursor = second.json.next_cursor;
    while (cursor) {
      const page = await ann.request('GET', `${byPrice}&cursor=${encodeURIComponent(cursor)}`);
      assert.equal(page.status, 200, page.body);
      walked.push(...page.json.items.map((o) => o.machine_id));
      cursor = page.json.next_cursor;
    }
    assert.deepEqual(walked, all.slice(2));

    for (const [query, message] of [
      [`sort=perf&cursor=${first.json.next_cursor}`, /sorted by price/],
      ['cursor=rank~zz~m~L4', /not one this list gave/],
      ['cursor=-1', /cursor/]]) {
      const bad = await ann.request('GET', `/v1/marketplace/offers?model=L40S&${query}`);
      assert.equal(bad.status, 400, `${query}: ${bad.body}`);
      assert.equal(bad.json.error.field, 'cursor', bad.body);
      assert.match(bad.json.error.message, message);
    }
  } finally {
    for (const m of machines) await m.agent.stop();
    await server.stop();
  }
});
