// A benchmark run loads every GPU of its machine for minutes: on a machine a customer is renting it
// waits until the rental ends (a provider asked for it, or the schedule did), instead of disturbing the
// customer's job and measuring it as the GPU's speed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { AgentVoice, RENTAL_SERVER_ARGS, agentlessMachine, customerWithCredit } from '../lib/rentals.mjs';

const RENT = { image: 'docker.io/library/busybox:1.36', command: ['sleep', '86400'] };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test(`${BACKEND}: a benchmark run waits for the machine's rentals to end`, async () => {
  const server = await new TestServer(RENTAL_SERVER_ARGS).start();
  let provider;
  try {
    provider = await agentlessMachine(server, 'busy-rig@example.com', { gpus: 2 });
    const machine = provider.machine.id;
    const voice = new AgentVoice(server, provider.key, machine);
    const ann = await customerWithCredit(server, '100.00');
    const made = await ann.request('POST', '/v1/rentals', { body: { machine_id: machine, ...RENT } });
    assert.equal(made.status, 201, made.body);
    await voice.send([{ rental_id: made.json.id, type: 'running' }]);

    const asked = await provider.client.request('POST', `/v1/provider/machines/${machine}/benchmarks/run`);
    assert.equal(asked.status, 202, asked.body);
    assert.equal(asked.json.waits_for_rentals,
      "it runs once the machine's 1 rental end (a day at most): a benchmark would disturb the customers' jobs");
    const runStatus = async () => {
      const r = (await provider.client.request('GET', `/v1/provider/machines/${machine}/benchmarks`)).json;
      return r.runs.find((run) => run.id === asked.json.run_id)?.status;
    };
    // Heartbeats come every second (lib/rental_machine.mjs), and none of them carries the run.
    const beat = await voice.heartbeat([]);
    assert.deepEqual(beat.json.commands.filter((c) => c.type === 'run_benchmark'), [], beat.body);
    await sleep(2500);
    assert.equal(await runStatus(), 'requested');

    // The rental ends: the next heartbeat takes the run.
    assert.equal((await ann.request('POST', `/v1/rentals/${made.json.id}/stop`)).status, 200);
    await voice.send([{ rental_id: made.json.id, type: 'ended', exit_code: 143 }]);
    await until('the run delivered', async () => (await runStatus()) === 'delivered', 10000, 200);
  } finally {
    if (provider) await provider.agent.stop();
    await server.stop();
  }
});
