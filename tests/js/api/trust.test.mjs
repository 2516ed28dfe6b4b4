// Issue 21, "nothing unverified reaches the market": the attack the issue describes (a machine
// registered by hand as simulated, an unrequested report claiming real GPUs with copied figures, a
// price, a heartbeat) is refused and the machine is not offered; a simulated machine is offered only in
// the operator's demo mode, and then says so; a machine that changes its driver is verified again
// before it is offered again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, Client } from '../lib/server.mjs';
import { approvedProvider, requestedRunId } from '../lib/provider.mjs';

const UUID = 'GPU-trust-l40s-0';

// Figures copied from a simulated L40S run at the catalog's expectations.
const RESULTS = [
  { key: 'compute.fp16_tensor', status: 'ok', median: 289.64, samples: [289.64] },
  { key: 'compute.fp32', status: 'ok', median: 82.44, samples: [82.44] },
  { key: 'memory.copy', status: 'ok', median: 760.32, samples: [760.32] },
];

async function rig(server, email) {
  const provider = await approvedProvider(server, email);
  const agent = new Client(server.url);
  agent.token = provider.key;
  let seq = 0;
  const send = async (method, path, body, status = 200) => {
    const r = await agent.request(method, path, { body });
    assert.equal(r.status, status, `${method} ${path}: ${r.body}`);
    return r.json;
  };
  const register = (driver = '550.54.15') => send('POST', '/v1/agent/register', {
    protocol_version: 1, agent_version: '0.1.0', machine_fingerprint: `fingerprint-${email}`, simulated: true,
    host: { hostname: 'rig', cpu_model: 'EPYC', cpu_cores: 32, ram_mib: 262144, disk_free_mib: 900000,
      os: 'Debian GNU/Linux 12 (bookworm)', kernel: '6.1.0' },
    gpus: [{ index: 0, uuid: UUID, name: 'NVIDIA L40S', model: 'L40S', memory_mib: 46068, driver_version: driver,
      cuda_version: '12.4', pci_bus_id: '00000000:17:00.0' }],
  });
  const machineId = (await register()).machine_id;
  const report = (extra) => ({ protocol: 1, machine_id: machineId, simulated: false, started_at_ms: 1000,
    finished_at_ms: 2000, gpus: [{ index: 0, uuid: UUID, name: 'NVIDIA L40S', ecc_uncorrected: 0, results: RESULTS,
      telemetry: [] }], machine: [], ...extra });
  const heartbeat = () => send('POST', '/v1/agent/heartbeat', { protocol_version: 1, machine_id: machineId,
    seq: ++seq, sent_at: new Date().toISOString(), telemetry: [], jobs: [] });
  await send('PUT', '/v1/provider/prices/L40S', { usdc_per_gpu_hour: '0.50' });
  const offered = async () => {
    const r = await new Client(server.url).request('GET', '/v1/marketplace/offers?model=L40S');
    assert.equal(r.status, 200, r.body);
    return r.json.items.find((o) => o.machine_id === machineId);
  };
  return { provider, agent, machineId, send, register, report, heartbeat, offered };
}

test(`${BACKEND}: the issue's attack is refused: an unrequested report claiming real GPUs lists nothing`, async () => {
  // Demo mode on, the gate's most permissive setting: the report is still refused.
  const server = await new TestServer().start();
  try {
    const m = await rig(server, 'mallory@example.com');
    const r = await m.agent.request('POST', '/v1/agent/benchmarks', { body: m.report({}) });
    assert.equal(r.status, 400, r.body);
    assert.equal(r.json.error.field, 'run_id');
    assert.equal(r.json.error.code, 'run_not_requested');
    assert.match(r.json.error.message, /requested/);
    await m.heartbeat();
    assert.equal(await m.offered(), undefined, 'the machine is not on the marketplace');
    const mine = await m.agent.request('GET', `/v1/provider/machines/${m.machineId}/benchmarks`);
    assert.equal(mine.json.runs.filter((x) => x.status === 'completed').length, 0, 'nothing stored');
    assert.equal(mine.json.gpus[0].listed, false);
  } finally {
    await server.stop();
  }
});

test(`${BACKEND}: without demo mode a simulated machine is never offered, whatever its report says`, async () => {
  const server = await new TestServer(['--allow-simulated-offers', 'false']).start();
  try {
    const m = await m0(server);
    const run = await requestedRunId(m.agent, m.machineId);
    const ok = await m.send('POST', '/v1/agent/benchmarks', m.report({ run_id: run }));
    assert.equal(ok.gpus[0].listed, true, 'its figures pass');
    await m.heartbeat();
    assert.equal(await m.offered(), undefined, 'a simulated machine is not offered');
    const runs = await m.agent.request('GET', `/v1/provider/machines/${m.machineId}/benchmarks`);
    assert.equal(runs.json.runs.find((x) => x.id === run).simulated, true, 'the machine\'s flag, not the report\'s');
    const again = await m.agent.request('POST', '/v1/agent/benchmarks', { body: m.report({ run_id: run }) });
    assert.equal(again.status, 400, 'a run is taken once');
    assert.equal(again.json.error.field, 'run_id');
  } finally {
    await server.stop();
  }
});

async function m0(server) {
  return rig(server, `sim${Math.random().toString(36).slice(2, 8)}@example.com`);
}

test(`${BACKEND}: in demo mode a simulated machine's offers say simulated; a driver change re-verifies it`, async () => {
  const server = await new TestServer(['--allow-simulated-offers', 'true']).start();
  try {
    const m = await m0(server);
    await m.send('POST', '/v1/agent/benchmarks', m.report({ run_id: await requestedRunId(m.agent, m.machineId) }));
    await m.heartbeat();
    const offer = await m.offered();
    assert.ok(offer, 'offered in demo mode');
    assert.equal(offer.simulated, true);

    // The same machine comes back with another driver: unlisted until a run requested now passes.
    await m.register('560.28.03');
    await m.heartbeat();
    assert.equal(await m.offered(), undefined, 'not offered until verified again');
    const bench = await m.agent.request('GET', `/v1/provider/machines/${m.machineId}/benchmarks`);
    assert.equal(bench.json.gpus[0].listed, false);
    assert.match(bench.json.gpus[0].delist_reason, /verified again/);
    const open = bench.json.runs.find((x) => x.status === 'requested' || x.status === 'delivered');
    assert.equal(open.reason, 'hardware_change');
    await m.send('POST', '/v1/agent/benchmarks', m.report({ run_id: open.id }));
    await m.heartbeat();
    assert.equal((await m.offered())?.simulated, true, 'offered again once the new run passed');

    // Changed again, and this time its run fails: the GPU was listed until the change (unlisted only to be
    // verified again), so its provider is told it is delisted, as for any listed GPU that fails.
    await m.register('565.57.01');
    const reverify = (await m.agent.request('GET', `/v1/provider/machines/${m.machineId}/benchmarks`)).json.runs
      .find((x) => x.status === 'requested' || x.status === 'delivered');
    const slow = RESULTS.map((r) => ({ ...r, median: r.median * 0.3, samples: r.samples.map((v) => v * 0.3) }));
    const failed = await m.send('POST', '/v1/agent/benchmarks', m.report({ run_id: reverify.id,
      gpus: [{ ...m.report({}).gpus[0], results: slow }] }));
    assert.equal(failed.gpus[0].listed, false);
    const told = (await m.provider.client.request('GET', '/v1/notifications')).json.items
      .filter((n) => n.kind === 'gpu_delisted');
    assert.equal(told.length, 1, JSON.stringify(told));
  } finally {
    await server.stop();
  }
});
