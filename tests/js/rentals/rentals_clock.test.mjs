// What the rentals worker does as time passes (#16), on the server's test clock, which stands still
// between moves, so every figure is exact: a rental stops at its maximum duration, another when its
// customer's balance runs out (having been settled along the way, at least every settlement
// interval), and a third when its machine has been silent for five minutes (agent_lost, metered to
// the machine's last heartbeat, on the provider's side). Then what an agent that does not do as asked
// can cost a customer (a minute past an unconfirmed stop) or claim (not that the customer stopped it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { AgentVoice, RENTAL_SERVER_ARGS, agentlessMachine, customerWithCredit, moveTestClock } from '../lib/rentals.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const micro = (usdc) => Math.round(Number(usdc) * 1e6);
const RENT = { image: 'docker.io/library/busybox:1.36', command: ['sleep', '86400'] };
const START = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace('.000Z', 'Z');

// A server on the test clock from START, settling every five minutes.
function startClockServer() {
  return new TestServer([...RENTAL_SERVER_ARGS, '--test-clock', START, '--enable-test-clock', 'true',
    '--rentals-settle-interval-s', '300']).start();
}

// Moves the server's test clock in steps the heartbeats (every second) keep up with, so the machine is
// never silent for five minutes of server time. Answers the new time.
async function advanceClock(server, seconds) {
  for (let left = seconds; left > 0; left -= 240) {
    await moveTestClock(server, Math.min(240, left));
    await sleep(1300);
  }
  return moveTestClock(server, 0);
}

test(`${BACKEND}: rentals stop at max duration, when the balance runs out, and when the agent is lost`, async () => {
  const server = await startClockServer();
  let provider;
  try {
    provider = await agentlessMachine(server, 'clock-provider@example.com', { gpus: 2 });
    const voice = new AgentVoice(server, provider.key, provider.machine.id);
    const ann = await customerWithCredit(server, '0.60');
    const bob = await customerWithCredit(server, '100.00');
    const clock = (seconds) => moveTestClock(server, seconds);
    const advance = (seconds) => advanceClock(server, seconds);
    const rent = async (customer, extra = {}) => {
      const r = await customer.request('POST', '/v1/rentals', { body: { machine_id: provider.machine.id, ...RENT,
        ...extra } });
      assert.equal(r.status, 201, r.body);
      return r.json.id;
    };
    const get = async (customer, id) => (await customer.request('GET', `/v1/rentals/${id}`)).json;

    const t0 = await clock(0);
    const a = await rent(ann);
    const b = await rent(bob, { max_hours: 0.1 });
    await voice.send([{ rental_id: a, type: 'running', at: t0 }, { rental_id: b, type: 'running', at: t0 }]);

    // Six minutes is B's maximum: at eight it is asked to stop, and ends when the agent says so; it is
    // billed its six minutes, no more (max_hours caps the cost).
    const t8 = await advance(480);
    const stopping = await until('B to be asked to stop', async () => {
      const r = await get(bob, b);
      return r.state === 'stopping' ? r : null;
    }, 10000);
    assert.equal(stopping.stop_requested, 'max_duration');
    await voice.send([{ rental_id: b, type: 'ended', exit_code: 143, at: t8 }]);
    const bEnded = await get(bob, b);
    assert.equal(bEnded.end_reason, 'max_duration');
    assert.equal(bEnded.seconds_metered, 360);
    assert.equal(micro(bEnded.cost_so_far), Math.floor(500000 * 360 / 3600));

    // A was settled along the way (the interval is five minutes) while it kept running.
    const settledA = await until('A to be settled once', async () => {
      const h = (await ann.request('GET', '/v1/billing/history')).json.items.filter((x) => x.kind === 'settlement');
      return h.length >= 1 ? h : null;
    }, 10000);
    assert.equal(settledA[0].reference, a);
    assert.equal((await get(ann, a)).state, 'running');

    // Ann's 0.60 USDC lasts 72 minutes at 0.50 an hour: then A is stopped, charged exactly 0.60.
    await advance(72 * 60 - 480 - 240);
    assert.equal((await get(ann, a)).state, 'running', 'still running four minutes before the balance runs out');
    const tEnd = await advance(240);
    const aStopping = await until('A to be asked to stop', async () => {
      const r = await get(ann, a);
      return r.state === 'stopping' ? r : null;
    }, 10000);
    assert.equal(aStopping.stop_requested, 'balance_exhausted');
    await voice.send([{ rental_id: a, type: 'ended', exit_code: 143, at: tEnd }]);
    const aEnded = await get(ann, a);
    assert.equal(aEnded.end_reason, 'balance_exhausted');
    assert.equal(aEnded.cost_so_far, '0.600000');
    assert.equal((await ann.request('GET', '/v1/billing/balance')).json.balance, '0.000000');
    const settlements = (await ann.request('GET', '/v1/billing/history')).json.items
      .filter((x) => x.kind === 'settlement');
    assert.ok(settlements.length >= 3, `settled at least every five minutes: ${settlements.length}`);
    assert.equal(settlements.reduce((s, x) => s + micro(x.amount), 0), -600000);

    // Ann was warned once, within the hour before it ran out (not at the start: 72 minutes then), however
    // many rounds passed; Bob, with 100 USDC, never.
    const lowOf = async (customer) => (await customer.request('GET', '/v1/notifications?limit=100')).json.items
      .filter((n) => n.kind === 'balance_low');
    const annLow = await lowOf(ann);
    assert.equal(annLow.length, 1, JSON.stringify(annLow));
    const minutes = Number(annLow[0].title.match(/^Your balance runs out in about (\d+) minutes$/)?.[1]);
    assert.ok(minutes >= 4 && minutes < 60, annLow[0].title);
    assert.match(annLow[0].body, /USDC is available and your running rentals use 0\.500000 USDC an hour\. When it is used up they are stopped\./);
    assert.match(annLow[0].link, /\/#\/balance$/);
    assert.deepEqual(await lowOf(bob), []);
    // Lasting an hour again lifts the warning: topped up and renting again, she is warned again when the
    // new balance falls within the hour (66 minutes at first, 58 after eight).
    const topUp = await server.adminClient.request('POST', '/v1/admin/credits',
      { body: { email: (await ann.request('GET', '/v1/me')).json.email, amount: '0.55', reference: 'top-up' } });
    assert.equal(topUp.status, 201, topUp.body);
    const a2 = await rent(ann);
    await voice.send([{ rental_id: a2, type: 'running', at: await clock(0) }]);
    await sleep(1500);
    assert.equal((await lowOf(ann)).length, 1, 'not warned at 66 minutes');
    await advance(480);
    const again = await until('Ann to be warned again', async () => {
      const l = await lowOf(ann);
      return l.length === 2 ? l : null;
    }, 10000);
    assert.match(again[0].title, /^Your balance runs out in about 5\d minutes$/);
    assert.equal((await ann.request('POST', `/v1/rentals/${a2}/stop`)).status, 200);
    await voice.send([{ rental_id: a2, type: 'ended', exit_code: 143, at: await clock(0) }]);

    // A machine silent for more than five minutes loses its rentals, metered to its last heartbeat.
    const c = await rent(bob);
    const tc = await clock(0);
    await voice.send([{ rental_id: c, type: 'running', at: tc }]);
    await advance(120);
    await sleep(1500);
    await provider.agent.stop();
    provider.agent = null;
    await clock(360);
    const lost = await until('C to end as agent_lost', async () => {
      const r = await get(bob, c);
      return r.state === 'ended' ? r : null;
    }, 10000);
    assert.equal(lost.end_reason, 'agent_lost');
    assert.equal(lost.seconds_metered, 120);
    assert.equal(micro(lost.cost_so_far), Math.floor(500000 * 120 / 3600));
    const providerView = (await provider.client.request('GET', '/v1/provider/rentals')).json.items;
    assert.equal(providerView.find((r) => r.id === c).provider_side, true);
  } finally {
    if (provider?.agent) await provider.agent.stop();
    await server.stop();
  }
});

// What a customer pays, and what a provider's agent may claim, when the agent does not do as asked: a stop
// it never confirms is metered a minute past the stop and no further; a rental's first hour is held from
// the balance the next rental may start on; an agent that says the customer stopped a rental nobody asked
// to stop ends it as a host failure, on the provider's side.
test(`${BACKEND}: an unconfirmed stop bills a minute at most, first hours are held, an agent cannot blame the customer`, async () => {
  const server = await startClockServer();
  let provider;
  try {
    provider = await agentlessMachine(server, 'unconfirmed-provider@example.com', { gpus: 4 });
    const voice = new AgentVoice(server, provider.key, provider.machine.id);
    const ann = await customerWithCredit(server, '1.20');
    const rent = () => ann.request('POST', '/v1/rentals', { body: { machine_id: provider.machine.id, ...RENT } });
    const get = async (id) => (await ann.request('GET', `/v1/rentals/${id}`)).json;

    // 1.20 USDC covers two first hours at 0.50, not three: the third is refused, naming what is held.
    const a = (await rent()).json.id;
    const b = (await rent()).json.id;
    const third = await rent();
    assert.equal(third.status, 402, third.body);
    assert.equal(third.json.error.code, 'insufficient_balance');
    assert.match(third.json.error.message, /1\.000000 USDC is held for the first hour of your other rentals/);
    // The figures as fields, for a script to act on: 1.20 of which 1.00 held, 0.50 needed, 0.30 missing.
    assert.deepEqual(third.json.error.details,
      { balance: '1.200000', held: '1.000000', needed: '0.500000', missing: '0.300000' });
    assert.equal((await ann.request('GET', '/v1/rentals')).json.items.length, 2, 'the refused one left nothing');

    const t0 = await moveTestClock(server, 0);
    await voice.send([{ rental_id: a, type: 'running', at: t0 }, { rental_id: b, type: 'running', at: t0 }]);
    // Ann stops A after ten minutes; the agent never says it ended, and its machine stays online.
    await advanceClock(server, 600);
    const stop = await ann.request('POST', `/v1/rentals/${a}/stop`);
    assert.equal(stop.status, 200, stop.body);
    assert.equal(stop.json.state, 'stopping');
    await advanceClock(server, 3600);
    const stuck = await get(a);
    assert.equal(stuck.state, 'stopping');
    assert.equal(stuck.seconds_metered, 660, 'metered to a minute after the stop, not the hour since');
    assert.equal(micro(stuck.cost_so_far), Math.floor(500000 * 660 / 3600));

    // B has run its first hour and A is stopping: neither holds anything now, and the third starts.
    const later = await rent();
    assert.equal(later.status, 201, later.body);

    // The agent says Ann stopped B, which nobody asked: a host failure, on the provider's record.
    const tEnd = await moveTestClock(server, 0);
    await voice.send([{ rental_id: b, type: 'ended', reason: 'customer_stopped', exit_code: 0, at: tEnd },
      { rental_id: a, type: 'ended', exit_code: 143, at: tEnd }]);
    const bEnded = await get(b);
    assert.equal(bEnded.end_reason, 'host_failure', JSON.stringify(bEnded));
    assert.notEqual(bEnded.end_text, 'Stopped by you');
    const providerView = (await provider.client.request('GET', '/v1/provider/rentals')).json.items;
    assert.equal(providerView.find((r) => r.id === b).provider_side, true);
    // A's late confirmation keeps the reason Ann asked for and adds no time.
    const aEnded = await get(a);
    assert.equal(aEnded.end_reason, 'customer_stopped');
    assert.equal(aEnded.seconds_metered, 660);
    // The balance paid exactly the two rentals' metered time.
    const balance = (await ann.request('GET', '/v1/billing/balance')).json.balance;
    assert.equal(micro(balance), 1200000 - micro(aEnded.cost_so_far) - micro(bEnded.cost_so_far));
    assert.equal(bEnded.seconds_metered, 4200);
  } finally {
    if (provider?.agent) await provider.agent.stop();
    await server.stop();
  }
});
