// Renting end to end (#16) with the real parts: gpunex-server, the real gpunex-agent on simulated
// GPUs, and its customers' containers on Podman's Docker-compatible service (scripts/podman.sh,
// the test image imported from busybox-static). A customer rents a simulated L4, the container's
// output shows in the logs, the customer stops it, and the ledger charges the seconds it ran, 80% to
// the provider and 20% to the platform. From inside the container: no capability, no new
// privileges, no file of the host, no process of another customer's container. Then the faults:
// an image that does not exist, the server down for 60 s, the agent killed with SIGKILL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, rmSync } from 'node:fs';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { startAgent } from '../lib/agent.mjs';
import { RENTAL_SERVER_ARGS, containerEngine, customerWithCredit, dockerApi, listedMachine,
  rentalContainers, storeRows } from '../lib/rentals.mjs';

const IMAGE = 'localhost/gpunex-test:1';
const micro = (usdc) => Math.round(Number(usdc) * 1e6);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Exits at once on SIGTERM (as PID 1 a shell ignores it otherwise), and runs until then.
const LOOP = "trap 'exit 0' TERM; while true; do sleep 0.2; done";

async function rent(customer, machineId, command, extra = {}) {
  const r = await customer.request('POST', '/v1/rentals', { body: { machine_id: machineId, image: IMAGE,
    command: ['sh', '-c', command], ...extra } });
  assert.equal(r.status, 201, r.body);
  return r.json.id;
}

async function state(customer, id, wanted, agent, timeoutMs = 30000) {
  return until(`rental ${id} to be ${wanted}`, async () => {
    const r = (await customer.request('GET', `/v1/rentals/${id}`)).json;
    if (r.state === 'ended' && wanted !== 'ended') throw new Error(`ended: ${JSON.stringify(r)}`);
    return r.state === wanted ? r : null;
  }, timeoutMs, 100).catch((e) => { throw new Error(`${e.message}\nagent: ${agent.logs.join('').slice(-3000)}`); });
}

test(`${BACKEND}: a customer rents a simulated L4, sees its output, stops it, and pays the seconds it ran`, async (t) => {
  const engine = containerEngine(t);
  if (!engine) return;
  const server = await new TestServer(RENTAL_SERVER_ARGS).start();
  const secret = `/tmp/gpunex-host-secret-${process.pid}`;
  writeFileSync(secret, 'the host');
  let provider;
  try {
    provider = await listedMachine(server, 'e2e-provider@example.com', { simulate: 'L4:2',
      agentArgs: ['--docker-host', engine, '--stop-grace-s', '2', '--public-host', 'gpu1.example.net'] });
    const machine = provider.machine.id;
    // The agent names where customers reach it (behind NAT the address it connects from is not that).
    const registered = (await provider.client.request('GET', `/v1/provider/machines/${machine}`)).json;
    assert.equal(registered.public_host, 'gpu1.example.net');
    // The engine's version comes from the engine it runs rentals on (here Podman's socket, not Docker's).
    const version = (await dockerApi(engine, 'GET', '/version')).json.Version;
    assert.equal(registered.host.docker_version, version, JSON.stringify(registered.host));
    const ann = await customerWithCredit(server, '100.00');
    const bob = await customerWithCredit(server, '100.00');

    // Bob's container runs first; Ann's then looks for it, and for the host's file.
    const bobs = await rent(bob, machine, 'exec sleep 3601');
    await state(bob, bobs, 'running', provider.agent);
    const anns = await rent(ann, machine, [
      'echo hello-from-rental',
      "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status",
      `cat ${secret} 2>/dev/null || echo host-file: absent`,
      "echo procs: $(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ')",
      'echo env: $GPUNEX_SIMULATED_GPUS',
      LOOP].join('; '), { env: { GREETING: 'hi' }, ports: [8080] });
    const running = await state(ann, anns, 'running', provider.agent);
    const seenRunning = Date.now();
    assert.equal(running.gpus.length, 1);
    assert.equal(running.host, 'gpu1.example.net');
    assert.equal(running.ports.length, 1);
    assert.equal(running.ports[0].address, `gpu1.example.net:${running.ports[0].host_port}`);

    const logs = await until('the container output in the logs', async () => {
      const r = (await ann.request('GET', `/v1/rentals/${anns}/logs`)).json;
      return r.logs.includes('env:') ? r.logs : null;
    }, 20000);
    assert.match(logs, /hello-from-rental/);
    assert.match(logs, /CapEff:\s+0000000000000000/);
    assert.match(logs, /NoNewPrivs:\s+1/);
    assert.match(logs, /host-file: absent/);
    assert.doesNotMatch(logs, /the host/);
    assert.doesNotMatch(logs, /3601/, 'a second customer\'s process is not visible');
    assert.match(logs, new RegExp(`env: ${running.gpus[0]}`), 'the simulated GPU is named to the container');

    // The engine holds exactly one container for it, isolated as the agent promised.
    const containers = await rentalContainers(engine, anns);
    assert.equal(containers.length, 1);
    const inspect = (await dockerApi(engine, 'GET', `/v1.41/containers/${containers[0].Id}/json`)).json;
    assert.equal(inspect.HostConfig.Privileged, false);
    // CapDrop ALL (Podman lists it as every default capability dropped); none added. CapEff above is the proof.
    assert.ok(inspect.HostConfig.CapDrop.length > 0, JSON.stringify(inspect.HostConfig.CapDrop));
    assert.deepEqual(inspect.HostConfig.CapAdd ?? [], []);
    assert.ok(inspect.HostConfig.SecurityOpt.some((o) => o.startsWith('no-new-privileges')), inspect.HostConfig.SecurityOpt);
    assert.ok(inspect.HostConfig.PidsLimit > 0);
    assert.ok(inspect.HostConfig.Memory > 0);
    assert.deepEqual(inspect.HostConfig.Binds ?? [], []);

    await sleep(2000);
    const stopAsked = Date.now();
    assert.equal((await ann.request('POST', `/v1/rentals/${anns}/stop`)).status, 200);
    const ended = await state(ann, anns, 'ended', provider.agent);
    assert.equal(ended.end_reason, 'customer_stopped');
    assert.deepEqual(await rentalContainers(engine, anns), [], 'the container is removed');

    // Charged for the seconds it ran (±1 s of what the test saw), 80% to the provider, 20% to the platform.
    const seen = (stopAsked - seenRunning) / 1000;
    assert.ok(Math.abs(ended.seconds_metered - seen) <= 1.5, `metered ${ended.seconds_metered} s, seen ${seen} s`);
    const ranMs = Date.parse(ended.ended_at) - Date.parse(ended.running_since);
    const charged = Math.floor((500000 * ranMs) / 3600000);
    assert.equal(micro(ended.cost_so_far), charged);
    const [[customer]] = storeRows(server, `SELECT customer_id FROM rentals WHERE id = '${anns}'`);
    const byAccount = Object.fromEntries(storeRows(server, `SELECT account, SUM(amount) FROM ledger_entries
      WHERE tx_id IN (SELECT id FROM ledger_transactions WHERE reference = '${anns}') GROUP BY account`)
      .map(([a, s]) => [a, Number(s)]));
    assert.equal(byAccount[`customer:${customer}`], -charged);
    const providerAccount = Object.keys(byAccount).find((a) => a.startsWith('provider:'));
    assert.equal(byAccount[providerAccount], Math.floor(charged * 0.8));
    assert.equal(byAccount['platform:commission'], charged - Math.floor(charged * 0.8));
    assert.equal(Number(storeRows(server, 'SELECT SUM(amount) FROM ledger_entries')[0][0]), 0);

    assert.equal((await bob.request('POST', `/v1/rentals/${bobs}/stop`)).status, 200);
    await state(bob, bobs, 'ended', provider.agent);
  } finally {
    rmSync(secret, { force: true });
    if (provider) await provider.agent.stop();
    await server.stop();
  }
});

test(`${BACKEND}: a missing image, the server down for 60 s, and the agent killed with SIGKILL`, async (t) => {
  const engine = containerEngine(t);
  if (!engine) return;
  // Heartbeats every 2 s as the server counts them: the machine is Offline 6 s after its agent dies.
  const server = await new TestServer([...RENTAL_SERVER_ARGS, '--heartbeat-interval', '2']).start();
  server.keepPort = true;
  let provider;
  try {
    const agentArgs = ['--docker-host', engine, '--stop-grace-s', '2'];
    provider = await listedMachine(server, 'faults-provider@example.com', { simulate: 'L4:1', agentArgs });
    const machine = provider.machine.id;
    const ann = await customerWithCredit(server, '100.00');

    // An image that does not exist: start_failed, the engine's words, no charge.
    const missing = await ann.request('POST', '/v1/rentals', { body: { machine_id: machine,
      image: 'localhost/no-such-image:1' } });
    assert.equal(missing.status, 201, missing.body);
    const failed = await state(ann, missing.json.id, 'ended', provider.agent);
    assert.equal(failed.end_reason, 'start_failed');
    assert.ok(failed.error, JSON.stringify(failed));
    assert.equal(failed.cost_so_far, '0.000000');
    assert.equal((await ann.request('GET', '/v1/billing/balance')).json.balance, '100.000000');
    assert.deepEqual(await rentalContainers(engine, missing.json.id), []);

    // The server down for 60 s: the container runs on, and the time is metered.
    const id = await rent(ann, machine, LOOP);
    await state(ann, id, 'running', provider.agent);
    const seenRunning = Date.now();
    const [container] = await rentalContainers(engine, id);
    await server.stop();
    await sleep(60000);
    const during = await rentalContainers(engine, id);
    assert.equal(during.length, 1);
    assert.equal(during[0].State, 'running', 'the container keeps running while the server is down');
    const restarted = Date.now();
    await server.start();
    await sleep(3000);
    assert.equal((await ann.request('GET', `/v1/rentals/${id}`)).json.state, 'running');
    // The agent retries with a backoff (at most a minute apart): heard again within it. Until then its
    // machine is not taken for offline (the platform's outage is not the provider's).
    await until('the agent heard again after the outage', async () => {
      const m = (await provider.client.request('GET', `/v1/provider/machines/${machine}`)).json;
      return Date.parse(m.last_seen_at) > restarted;
    }, 90000, 500);

    // The agent killed with SIGKILL and started again: it adopts the container, it starts no second one.
    await provider.agent.stop('SIGKILL');
    // Meanwhile the customer sees that the machine is not heard from.
    await until('the rental to show its machine offline', async () =>
      (await ann.request('GET', `/v1/rentals/${id}`)).json.machine_online === false, 30000);
    provider.agent = startAgent(server.url, provider.key, { simulate: 'L4:1', dir: provider.agent.dir,
      args: ['--bench-storage-mib', '32', '--bench-net-mib', '8', ...agentArgs] });
    await sleep(5000);
    const after = await rentalContainers(engine, id);
    assert.equal(after.length, 1, JSON.stringify(after));
    assert.equal(after[0].Id, container.Id, 'the same container, adopted');
    const back = (await ann.request('GET', `/v1/rentals/${id}`)).json;
    assert.equal(back.state, 'running');
    assert.equal(back.machine_online, true, 'its machine is heard from again');

    const stopAsked = Date.now();
    assert.equal((await ann.request('POST', `/v1/rentals/${id}/stop`)).status, 200);
    const ended = await state(ann, id, 'ended', provider.agent, 90000);
    assert.equal(ended.end_reason, 'customer_stopped');
    const seen = (stopAsked - seenRunning) / 1000;
    assert.ok(ended.seconds_metered >= seen - 1.5 && ended.seconds_metered <= (Date.now() - seenRunning) / 1000 + 1,
      `metered ${ended.seconds_metered} s over an outage; seen running for ${seen} s until the stop`);
    assert.equal(micro(ended.cost_so_far),
      Math.floor((500000 * (Date.parse(ended.ended_at) - Date.parse(ended.running_since))) / 3600000));
    assert.deepEqual(await rentalContainers(engine, id), []);
  } finally {
    if (provider) await provider.agent.stop();
    await server.stop();
  }
});
