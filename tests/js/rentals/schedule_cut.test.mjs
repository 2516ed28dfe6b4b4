// A rental is made with the end of availability its offer showed (available_until), and ends
// window_ended only from then on. A provider who narrows the schedule meanwhile stops no running rental
// (each runs on to the end it was promised: the way to drain a machine), and is told so; maintenance
// stops them, its customers told when it is saved, and that is the provider's side (provider_stopped: it
// counts against job completion, as a stop by hand does).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { AgentVoice, RENTAL_SERVER_ARGS, agentlessMachine, customerWithCredit, storeRows } from '../lib/rentals.mjs';

const RENT = { image: 'docker.io/library/busybox:1.36' };
const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];
const hh = (h) => `${String(((h % 24) + 24) % 24).padStart(2, '0')}:00`;

test(`${BACKEND}: a narrowed schedule drains a machine; maintenance stops its rentals, on the provider's side`, async () => {
  const server = await new TestServer(RENTAL_SERVER_ARGS).start();
  let provider;
  try {
    provider = await agentlessMachine(server, 'cutter@example.com', { gpus: 2 });
    const machine = provider.machine.id;
    const voice = new AgentVoice(server, provider.key, machine);
    const ann = await customerWithCredit(server, '100.00');
    const schedule = (windows) => provider.client.request('PUT', `/v1/provider/machines/${machine}/schedule`,
      { body: { timezone: 'UTC', always: false, windows } });
    const promised = (id) => Number(storeRows(server, `SELECT promised_until FROM rentals WHERE id = '${id}'`)[0][0]);

    // Always on when rented: no end promised.
    const first = await ann.request('POST', '/v1/rentals', { body: { machine_id: machine, ...RENT } });
    assert.equal(first.status, 201, first.body);
    assert.equal(promised(first.json.id), 0);

    // A window open now: the rental is promised the window's end, the offer's available_until.
    const h = new Date().getUTCHours();
    assert.equal((await schedule([{ days: DAYS, start: hh(h - 1), end: hh(h + 2) }])).status, 200);
    const offer = await until('the offer to show its window', async () => {
      const r = await ann.request('GET', '/v1/marketplace/offers?model=L40S');
      return r.json.items.find((o) => o.machine_id === machine && o.available_until);
    }, 10000);
    const second = await ann.request('POST', '/v1/rentals', { body: { machine_id: machine, ...RENT } });
    assert.equal(second.status, 201, second.body);
    assert.equal(promised(second.json.id), Date.parse(offer.available_until));
    // The customer sees it on the rental, as the offer showed it; the 24/7 one has none.
    assert.equal(second.json.available_until, offer.available_until);
    assert.equal((await ann.request('GET', `/v1/rentals/${first.json.id}`)).json.available_until, null);

    for (const id of [first.json.id, second.json.id]) {
      await voice.send([{ rental_id: id, type: 'starting' }]);
      await voice.send([{ rental_id: id, type: 'running', ports: [] }]);
    }
    // The provider narrows the schedule so that the machine is unavailable now: that stops neither (each
    // runs on to the end it was rented with: the provider's way to drain a machine), the answer says so,
    // and nobody can rent the machine meanwhile.
    const narrowed = await schedule([{ days: DAYS, start: hh(h + 3), end: hh(h + 4) }]);
    assert.equal(narrowed.status, 200, narrowed.body);
    assert.equal(narrowed.json.running_rentals, 2);
    assert.match(narrowed.json.running_rentals_note, /^2 rentals running on this machine: availability you narrow stops none of them/);
    assert.doesNotMatch(narrowed.json.running_rentals_note, /maintenance/);
    await new Promise((r) => setTimeout(r, 1500));  // rentals rounds every 200 ms
    for (const id of [first.json.id, second.json.id]) {
      assert.equal((await ann.request('GET', `/v1/rentals/${id}`)).json.state, 'running', id);
    }
    const third = await ann.request('POST', '/v1/rentals', { body: { machine_id: machine, ...RENT } });
    assert.equal(third.status, 409, third.body);

    // Maintenance planned for later, then called off: its customers are told of each.
    const later = Date.now();
    const planned = [{ category: 'power', note: 'PSU check', start: new Date(later + 20 * 60_000).toISOString(),
      end: new Date(later + 40 * 60_000).toISOString() }];
    const plan = await provider.client.request('PUT', `/v1/provider/machines/${machine}/schedule`,
      { body: { timezone: 'UTC', always: false, windows: [{ days: DAYS, start: hh(h + 3), end: hh(h + 4) }], maintenance: planned } });
    assert.equal(plan.status, 200, plan.body);
    assert.match(plan.json.running_rentals_note, /maintenance stops 2 rentals/);
    const noticesOf = async (kind) => (await ann.request('GET', '/v1/notifications')).json.items.filter((n) => n.kind === kind);
    assert.equal((await noticesOf('rental_maintenance')).length, 2);
    assert.deepEqual(await noticesOf('rental_maintenance_called_off'), []);
    const off = await provider.client.request('PUT', `/v1/provider/machines/${machine}/schedule`,
      { body: { timezone: 'UTC', always: false, windows: [{ days: DAYS, start: hh(h + 3), end: hh(h + 4) }], maintenance: [] } });
    assert.equal(off.status, 200, off.body);
    assert.doesNotMatch(off.json.running_rentals_note, /maintenance/);
    assert.deepEqual((await noticesOf('rental_maintenance_called_off')).map((n) => n.title).sort(),
      [first.json.id, second.json.id].sort().map((id) => `Rental ${id} runs on: the provider called off its maintenance`));
    for (const n of await noticesOf('rental_maintenance_called_off')) assert.match(n.body, new RegExp(` at ${planned[0].start.slice(0, 16)}`));

    // Maintenance from now stops both: the customers are told as the provider saves it, and the stops are
    // the provider's side, as a stop by hand would be.
    const now = Date.now();
    const maintenance = [{ category: 'power', note: 'new PSU', start: new Date(now - 60_000).toISOString(),
      end: new Date(now + 3600_000).toISOString() }];
    const down = await provider.client.request('PUT', `/v1/provider/machines/${machine}/schedule`,
      { body: { timezone: 'UTC', always: false, windows: [{ days: DAYS, start: hh(h + 3), end: hh(h + 4) }], maintenance } });
    assert.equal(down.status, 200, down.body);
    assert.match(down.json.running_rentals_note, /; maintenance stops 2 rentals from \d{4}-\d\d-\d\dT[\d:.]+Z \(the customers are told now\)/);
    const warned = (await noticesOf('rental_maintenance')).slice(0, 2);  // newest first: the two planned before
    assert.deepEqual(warned.map((n) => n.title.replace(/ stops at .*/, '')).sort(),
      [first.json.id, second.json.id].sort().map((id) => `Rental ${id}`));
    for (const id of [first.json.id, second.json.id]) {
      await until(`rental ${id} to be stopped`, async () => (await ann.request('GET', `/v1/rentals/${id}`)).json.state === 'stopping', 10000);
    }
    // Called off once begun: the rentals are being stopped already, so nobody is told they run on.
    const late = await provider.client.request('PUT', `/v1/provider/machines/${machine}/schedule`,
      { body: { timezone: 'UTC', always: false, windows: [{ days: DAYS, start: hh(h + 3), end: hh(h + 4) }], maintenance: [] } });
    assert.equal(late.status, 200, late.body);
    assert.equal((await noticesOf('rental_maintenance_called_off')).length, 2, 'only the two told before');
    for (const id of [first.json.id, second.json.id]) {
      const stopping = (await ann.request('GET', `/v1/rentals/${id}`)).json;
      assert.equal(stopping.state, 'stopping');
      assert.equal(stopping.stop_requested, 'provider_stopped');
      const ended = await voice.send([{ rental_id: id, type: 'ended', exit_code: 143 }]);
      assert.equal(ended.status, 200, ended.body);
      const shown = (await ann.request('GET', `/v1/rentals/${id}`)).json;
      assert.equal(shown.end_reason, 'provider_stopped');
      const theirs = (await provider.client.request('GET', '/v1/provider/rentals')).json.items.find((r) => r.id === id);
      assert.equal(theirs.provider_side, true, JSON.stringify(theirs));
    }
    // The customer is told of each, in the dashboard (and by mail, once their address is confirmed).
    const told = (await ann.request('GET', '/v1/notifications')).json.items.filter((n) => n.kind === 'rental_ended');
    assert.deepEqual(told.map((n) => n.title).sort(), [first.json.id, second.json.id].sort()
      .map((id) => `Rental ${id} ended: Stopped by the provider`));
    for (const n of told) assert.match(n.link, /\/#\/rentals\/rnt_/);
  } finally {
    if (provider) await provider.agent.stop();
    await server.stop();
  }
});
