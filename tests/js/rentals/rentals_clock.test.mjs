// What the rentals worker does as time passes (#16), on the server's test clock, which stands still
// between moves, so every figure is exact: a rental stops at its maximum duration, another when its
// customer's balance runs out (having been settled along the way, at least every settlement
// interval), and a third when its machine has been silent for five minutes (agent_lost, metered to
// the machine's last heartbeat, on the provider's side).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { AgentVoice, RENTAL_SERVER_ARGS, agentlessMachine, customerWithCredit, moveTestClock } from '../lib/rentals.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const micro = (usdc) => Math.round(Number(usdc) * 1e6);
const RENT = { image: 'docker.io/library/busybox:1.36', command: ['sleep', '86400'] };
const START = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace('.000Z', 'Z');

test(`${BACKEND}: rentals stop at max duration, when the balance runs out, and when the agent is lost`, async () => {
  const server = await new TestServer([...RENTAL_SERVER_ARGS, '--test-clock', START, '--enable-test-clock', 'true',
    '--rentals-settle-interval-s', '300']).start();
  let provider;
  try {
    provider = await agentlessMachine(server, 'clock-provider@example.com', { gpus: 2 });
    const voice = new AgentVoice(server, provider.key, provider.machine.id);
    const ann = await customerWithCredit(server, '0.60');
    const bob = await customerWithCredit(server, '100.00');
    const clock = (seconds) => moveTestClock(server, seconds);
    // Moves the clock in steps the heartbeats (every second) keep up with, so the machine is never
    // silent for five minutes of server time.
    const advance = async (seconds) => {
      for (let left = seconds; left > 0; left -= 240) {
        await clock(Math.min(240, left));
        await sleep(1300);
      }
      return clock(0);
    };
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

    // Six minutes is B's maximum: at eight it is asked to stop, and ends when the agent says so.
    const t8 = await advance(480);
    const stopping = await until('B to be asked to stop', async () => {
      const r = await get(bob, b);
      return r.state === 'stopping' ? r : null;
    }, 10000);
    assert.equal(stopping.stop_requested, 'max_duration');
    await voice.send([{ rental_id: b, type: 'ended', exit_code: 143, at: t8 }]);
    const bEnded = await get(bob, b);
    assert.equal(bEnded.end_reason, 'max_duration');
    assert.equal(bEnded.seconds_metered, 480);
    assert.equal(micro(bEnded.cost_so_far), Math.floor(500000 * 480 / 3600));

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
