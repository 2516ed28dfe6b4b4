// A machine whose agent cannot run a rental is not offered: here its container engine does not
// answer (a provider whose Docker is down; an agent without root for the network guard is the same
// path). The agent says why on its rentals poll; the provider sees it on the machine (API, CLI, the
// list agreeing with the detail page); the marketplace leaves the machine out and a rental naming it
// is refused, so no customer is sent to a machine that would fail every start (and the provider's
// reliability with it). With the engine back, the same machine is offered again and a rental runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { gpunex } from '../lib/cli.mjs';
import { startAgent } from '../lib/agent.mjs';
import { RENTAL_SERVER_ARGS, containerEngine, customerWithCredit, listedMachine } from '../lib/rentals.mjs';

const IMAGE = 'localhost/gpunex-test:1';
const NO_ENGINE = 'unix:///nonexistent/gpunex-test/docker.sock';

test(`${BACKEND}: a machine whose agent has no container engine is not offered until it has one`, async (t) => {
  const engine = containerEngine(t);
  if (!engine) return;
  const server = await new TestServer(RENTAL_SERVER_ARGS).start();
  const home = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
  let provider;
  try {
    provider = await listedMachine(server, 'blocked-provider@example.com', { simulate: 'L4:1',
      agentArgs: ['--docker-host', NO_ENGINE] });
    const machine = provider.machine.id;
    const agentLog = (e) => { throw new Error(`${e.message}\nagent: ${provider.agent.logs.join('').slice(-3000)}`); };
    const detail = await until('the machine to say it cannot run rentals', async () => {
      const r = await provider.client.request('GET', `/v1/provider/machines/${machine}`);
      return r.json.rentals_blocked ? r.json : null;
    }, 60000).catch(agentLog);
    assert.match(detail.rentals_blocked,
      /^no container engine answers \(DOCKER_HOST=unix:\/\/\/nonexistent\/gpunex-test\/docker\.sock\): /);
    assert.equal(detail.status, 'online');
    assert.ok(detail.gpus.every((g) => g.listed), 'its GPUs stay listed: their benchmarks passed');
    const list = await provider.client.request('GET', '/v1/provider/machines');
    assert.equal(list.json.items[0].rentals_blocked, detail.rentals_blocked, 'the list agrees with the detail page');

    const login = gpunex(home, ['--server', server.url, 'login', '--email', 'blocked-provider@example.com',
      '--password-stdin'], 'correct-horse-battery\n');
    assert.equal(login.code, 0, login.err);
    const shown = gpunex(home, ['machines', 'show', machine]);
    assert.equal(shown.code, 0, shown.err);
    assert.ok(shown.out.includes(`Not offered: the agent cannot run rentals here: ${detail.rentals_blocked}.`),
      shown.out);

    const ann = await customerWithCredit(server, '100.00');
    const offers = await ann.request('GET', '/v1/marketplace/offers?model=L4');
    assert.equal(offers.status, 200, offers.body);
    assert.deepEqual(offers.json.items, [], 'a machine that cannot run a rental is not offered');
    const refused = await ann.request('POST', '/v1/rentals', { body: { machine_id: machine, image: IMAGE } });
    assert.equal(refused.status, 409, refused.body);
    assert.equal(refused.json.error.field, 'machine_id');
    assert.deepEqual((await ann.request('GET', '/v1/rentals')).json.items, [], 'nothing was placed');

    // The agent again, with its engine: the same machine comes back on the market and runs a rental.
    assert.equal(await provider.agent.stop(), 0);
    provider.agent = startAgent(server.url, provider.key, { simulate: 'L4:1', dir: provider.agent.dir,
      args: ['--docker-host', engine, '--stop-grace-s', '2'] });
    await until('the machine to be offered again', async () => {
      const r = await ann.request('GET', '/v1/marketplace/offers?model=L4');
      return r.json.items.length === 1 && r.json.items[0].machine_id === machine;
    }, 60000).catch(agentLog);
    const again = await provider.client.request('GET', `/v1/provider/machines/${machine}`);
    assert.equal(again.json.rentals_blocked, null);
    const rented = await ann.request('POST', '/v1/rentals', { body: { machine_id: machine, image: IMAGE,
      command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 0.2; done"] } });
    assert.equal(rented.status, 201, rented.body);
    await until('the rental to run', async () => {
      const r = (await ann.request('GET', `/v1/rentals/${rented.json.id}`)).json;
      if (r.state === 'ended') throw new Error(JSON.stringify(r));
      return r.state === 'running';
    }, 60000).catch(agentLog);
    assert.equal((await ann.request('POST', `/v1/rentals/${rented.json.id}/stop`)).status, 200);
    await until('the rental to end', async () =>
      (await ann.request('GET', `/v1/rentals/${rented.json.id}`)).json.state === 'ended', 30000).catch(agentLog);
  } finally {
    if (provider) await provider.agent.stop();
    await server.stop();
    rmSync(home, { recursive: true, force: true });
  }
});
