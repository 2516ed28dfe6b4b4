// max_hours is what a customer can spend on a rental: a job shorter than an hour starts on its own cost
// (not an hour's balance), and is never billed past its max_hours, however late the stop is asked and
// the agent confirms it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { AgentVoice, RENTAL_SERVER_ARGS, agentlessMachine, customerWithCredit, midweekStart, moveTestClock }
  from '../lib/rentals.mjs';

const RENT = { image: 'docker.io/library/busybox:1.36' };

test(`${BACKEND}: max_hours sets what a rental needs to start and caps what it costs`, async () => {
  const server = await new TestServer([...RENTAL_SERVER_ARGS, '--test-clock', midweekStart(), '--enable-test-clock',
    'true']).start();
  const clock = (seconds) => moveTestClock(server, seconds);
  let provider;
  try {
    provider = await agentlessMachine(server, 'short-jobs@example.com', { gpus: 2, price: '0.80' });
    const machine = provider.machine.id;
    const voice = new AgentVoice(server, provider.key, machine);
    const bob = await customerWithCredit(server, '0.30');
    const rent = (body) => bob.request('POST', '/v1/rentals', { body: { machine_id: machine, ...RENT, ...body } });

    // An hour at 0.80 is more than his 0.30: refused; a quarter of an hour (0.20) starts.
    const hour = await rent({});
    assert.equal(hour.status, 402, hour.body);
    assert.match(hour.json.error.message, /does not cover the first hour: 0\.800000 USDC is needed/);
    const quarter = await rent({ max_hours: 0.25 });
    assert.equal(quarter.status, 201, quarter.body);
    // It holds its 0.20 while it runs: another quarter of an hour (0.20 more) is refused, naming the hold.
    const another = await rent({ max_hours: 0.25 });
    assert.equal(another.status, 402, another.body);
    assert.match(another.json.error.message, /0\.200000 USDC is held .* does not cover its max_hours: 0\.200000 USDC/);
    await voice.send([{ rental_id: quarter.json.id, type: 'ended', reason: 'start_failed', error: 'no such image' }]);

    // Under a minute is refused: a few milliseconds cost nothing, yet the container runs until the stop's
    // grace ends (it was seconds of GPU for 0.000000, again and again).
    for (const tiny of [1e-9, 0.001]) {
      const r = await rent({ max_hours: tiny });
      assert.equal(r.status, 400, r.body);
      assert.equal(r.json.error.field, 'max_hours');
      assert.match(r.json.error.message, /from one minute \(0\.0167\) to 2160 \(90 days\)/);
    }

    // One minute at most, on the test clock: the worker asks the stop once it is due and the agent
    // confirms five seconds later; the bill stops at 60 s of running.
    const brief = await rent({ max_hours: 1 / 60 });
    assert.equal(brief.status, 201, brief.body);
    const id = brief.json.id;
    const t0 = await clock(0);
    await voice.send([{ rental_id: id, type: 'starting', at: t0 }]);
    await voice.send([{ rental_id: id, type: 'running', ports: [], at: t0 }]);
    await clock(30);
    await voice.heartbeat([]);
    await clock(31);
    await voice.heartbeat([]);
    const stopping = await until('the max_hours stop', async () => {
      const r = (await bob.request('GET', `/v1/rentals/${id}`)).json;
      return r.state === 'stopping' ? r : null;
    }, 15000);
    assert.equal(stopping.stop_requested, 'max_duration');
    const t1 = await clock(5);
    await voice.send([{ rental_id: id, type: 'ended', exit_code: 143, at: t1 }]);
    const ended = (await bob.request('GET', `/v1/rentals/${id}`)).json;
    assert.equal(ended.end_reason, 'max_duration');
    assert.ok(Date.parse(ended.ended_at) - Date.parse(ended.running_since) > 60000, 'it ended after the minute');
    assert.equal(ended.cost_so_far, '0.013333', 'a minute at 0.80 an hour, no more');
    assert.equal(ended.seconds_metered, 60);
    assert.equal((await bob.request('GET', '/v1/billing/balance')).json.balance, '0.286667');
  } finally {
    if (provider) await provider.agent.stop();
    await server.stop();
  }
});
