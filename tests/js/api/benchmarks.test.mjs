// Benchmarks end to end: the real gpunex-agent on simulated GPUs gets a
// run_benchmark command in a heartbeat reply, runs the suite (storage and
// network for real, against this server) and submits it; the server delists a
// GPU that falls short with a notification naming the metric, the ratio and
// what to do, and relists it when a later run passes. Forged or malformed
// result bodies are refused with 400 naming the field, and nothing is stored.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BIN, BACKEND, BENCH_SERVER_ARGS, TestServer, Client, until } from '../lib/server.mjs';
import { agentEnv } from '../lib/agent.mjs';
import { approvedProvider, requestedRunId } from '../lib/provider.mjs';


class Agent {
  constructor(serverUrl, key, dataDir, machineFile) {
    this.logs = [];
    this.proc = spawn(path.join(BIN, 'gpunex-agent'), ['run', '--server', serverUrl, '--data-dir', dataDir,
      '--heartbeat-interval', '1', '--simulate', machineFile, '--bench-storage-mib', '32', '--bench-net-mib', '8'],
    { env: agentEnv({ GPUNEX_API_KEY: key }), stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc.stdout.on('data', (d) => this.logs.push(d.toString()));
    this.proc.stderr.on('data', (d) => this.logs.push(d.toString()));
    this.exited = new Promise((resolve) => this.proc.on('exit', (code) => resolve(code)));
  }
  async stop() {
    if (this.proc.exitCode === null) this.proc.kill('SIGTERM');
    return this.exited;
  }
}

function machineFile(dir, faults) {
  const file = path.join(dir, 'machine.toml');
  const extra = Object.entries(faults).map(([k, v]) => `${k} = ${v}`).join('\n');
  writeFileSync(file, `[[gpu]]\nmodel = "L40S"\ncount = 1\n${extra}\n`);
  return file;
}

async function onlyMachine(client) {
  return until('the machine to register', async () => {
    const r = await client.request('GET', '/v1/provider/machines');
    return r.status === 200 && r.json.items.length === 1 ? r.json.items[0].id : null;
  });
}

async function completedRuns(client, id, n) {
  return until(`${n} completed benchmark run(s)`, async () => {
    const r = await client.request('GET', `/v1/provider/machines/${id}/benchmarks`);
    assert.equal(r.status, 200, r.body);
    return r.json.runs.filter((x) => x.status === 'completed').length >= n ? r.json : null;
  }, 90000);
}

// The machine list, the machine page and the Benchmarks tab show one decision per GPU.
async function assertPagesAgree(client, id, bench) {
  const list = await client.request('GET', '/v1/provider/machines');
  const detail = await client.request('GET', `/v1/provider/machines/${id}`);
  for (const g of bench.gpus) {
    const want = { benchmarked: g.benchmarked, listed: g.listed, perf_score: g.perf_score,
      quality_ratio: g.quality_ratio, delist_reason: g.delist_reason };
    for (const [page, gpus] of [['list', list.json.items.find((m) => m.id === id).gpus], ['detail', detail.json.gpus]]) {
      const row = gpus.find((x) => x.uuid === g.uuid);
      const got = { benchmarked: row.benchmarked, listed: row.listed, perf_score: row.perf_score,
        quality_ratio: row.quality_ratio, delist_reason: row.delist_reason };
      assert.deepEqual(got, want, `${page} vs the Benchmarks tab for ${g.uuid}`);
    }
  }
}

test(`${BACKEND}: perf factor 0.7 delists naming FP16 tensor throughput; 1.0 and a re-run relists`, async () => {
  const server = await new TestServer(BENCH_SERVER_ARGS).start();
  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-bench-agent-'));
  let agent;
  try {
    const { client, key } = await approvedProvider(server, 'slow@example.com');
    agent = new Agent(server.url, key, dir, machineFile(dir, { perf_factor: 0.7 }));
    const id = await onlyMachine(client);
    const first = await completedRuns(client, id, 1);
    assert.equal(first.runs.find((r) => r.status === 'completed').reason, 'first_registration');
    const gpu = first.gpus[0];
    assert.equal(gpu.listed, false, JSON.stringify(gpu));
    assert.match(gpu.delist_reason, /FP16 tensor throughput/);
    assert.match(gpu.delist_reason, /ratio 0\.70/);
    assert.ok(Math.abs(gpu.quality_ratio - 0.7) < 0.01, `quality ${gpu.quality_ratio}`);
    assert.ok(gpu.latest.figures['compute.fp16_tensor'] > 0);
    assert.ok(gpu.latest.expected['compute.fp16_tensor'] > gpu.latest.figures['compute.fp16_tensor']);
    assert.ok(gpu.latest.figures['storage.seq_read'] === undefined, 'machine figures are not GPU figures');
    await assertPagesAgree(client, id, first);

    const notes = await client.request('GET', '/v1/notifications');
    const delisted = notes.json.items.find((n) => n.kind === 'gpu_delisted');
    assert.ok(delisted, JSON.stringify(notes.json));
    assert.match(delisted.title, /FP16 tensor throughput/);
    assert.match(delisted.body, /ratio 0\.70/);

    await agent.stop();
    agent = new Agent(server.url, key, dir, machineFile(dir, { perf_factor: 1.0 }));
    const rerun = await client.request('POST', `/v1/provider/machines/${id}/benchmarks/run`);
    assert.equal(rerun.status, 202, rerun.body);
    const again = await client.request('POST', `/v1/provider/machines/${id}/benchmarks/run`);
    assert.equal(again.status, 409, again.body);  // one at a time
    const second = await completedRuns(client, id, 2);
    assert.equal(second.gpus[0].listed, true, JSON.stringify(second.gpus[0]));
    assert.equal(second.gpus[0].delist_reason, null);
    assert.ok(second.gpus[0].history.length >= 2);
    assert.ok(second.gpus[0].perf_score > 0, JSON.stringify(second.gpus[0]));
    await assertPagesAgree(client, id, second);
    const notes2 = await client.request('GET', '/v1/notifications');
    assert.ok(notes2.json.items.find((n) => n.kind === 'gpu_relisted'), JSON.stringify(notes2.json));
    const soon = await client.request('POST', `/v1/provider/machines/${id}/benchmarks/run`);
    assert.equal(soon.status, 429, soon.body);  // rate-limited, saying for how long
    const wait = Number(soon.headers.get('retry-after'));
    assert.ok(wait > 3000 && wait <= 3600, `Retry-After ${soon.headers.get('retry-after')}`);
  } finally {
    if (agent) await agent.stop();
    await server.stop();
  }
});

test(`${BACKEND}: a thermal-throttle fault recommends cooling`, async () => {
  const server = await new TestServer(BENCH_SERVER_ARGS).start();
  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-bench-agent-'));
  let agent;
  try {
    const { client, key } = await approvedProvider(server, 'hot@example.com');
    agent = new Agent(server.url, key, dir, machineFile(dir, { thermal_throttle: true }));
    const id = await onlyMachine(client);
    const run = await completedRuns(client, id, 1);
    const gpu = run.gpus[0];
    const seen = `${JSON.stringify(run)}\nagent:\n${agent.logs.join('').slice(-4000)}`;
    assert.equal(gpu.listed, false, seen);
    assert.match(gpu.recommendation ?? '(none)', /cooling/, seen);
    assert.equal(gpu.latest.failures[0].cause, 'thermal_throttling');
  } finally {
    if (agent) await agent.stop();
    await server.stop();
  }
});

test(`${BACKEND}: a storage minimum the disk misses delists and recommends NVMe (the minimum is configuration)`, async () => {
  const args = [...BENCH_SERVER_ARGS];
  args[args.indexOf('--benchmark-storage-read-min-mbs') + 1] = '1000000';
  const server = await new TestServer(args).start();
  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-bench-agent-'));
  let agent;
  try {
    const { client, key } = await approvedProvider(server, 'disk@example.com');
    agent = new Agent(server.url, key, dir, machineFile(dir, {}));
    const id = await onlyMachine(client);
    const gpu = (await completedRuns(client, id, 1)).gpus[0];
    assert.equal(gpu.listed, false, JSON.stringify(gpu));
    const storage = gpu.latest.failures.find((f) => f.cause === 'storage');
    assert.ok(storage, JSON.stringify(gpu.latest.failures));
    assert.equal(storage.expected, 1000000);
    assert.ok(storage.measured > 0 && storage.measured < 1000000, JSON.stringify(storage));
    assert.match(gpu.recommendation, /NVMe/);
    // The machine's own figures, as the run measured them, with the check that failed.
    const bench = (await client.request('GET', `/v1/provider/machines/${id}/benchmarks`)).json;
    assert.ok(bench.machine, JSON.stringify(bench));
    assert.equal(bench.machine.run_id, bench.runs.find((r) => r.status === 'completed').id);
    for (const k of ['storage.seq_write', 'storage.seq_read', 'storage.rand_read_4k', 'network.latency_p50',
      'network.download', 'network.upload']) {
      assert.ok(typeof bench.machine.figures[k] === 'number' && bench.machine.figures[k] >= 0, `${k}: ${JSON.stringify(bench.machine)}`);
    }
    assert.equal(bench.machine.figures['storage.seq_read'], storage.measured, 'the figure the check judged');
    assert.deepEqual(bench.machine.failures.map((f) => f.metric), [storage.metric]);
  } finally {
    if (agent) await agent.stop();
    await server.stop();
  }
});

test(`${BACKEND}: forged and malformed results are refused, nothing stored`, async () => {
  const server = await new TestServer(BENCH_SERVER_ARGS).start();
  const dirA = mkdtempSync(path.join(tmpdir(), 'gpunex-bench-agent-'));
  const dirB = mkdtempSync(path.join(tmpdir(), 'gpunex-bench-agent-'));
  const agents = [];
  try {
    const a = await approvedProvider(server, 'alice@example.com');
    const b = await approvedProvider(server, 'bob@example.com');
    agents.push(new Agent(server.url, a.key, dirA, machineFile(dirA, {})));
    agents.push(new Agent(server.url, b.key, dirB, machineFile(dirB, {})));
    const idA = await onlyMachine(a.client);
    const idB = await onlyMachine(b.client);
    const runsA = await completedRuns(a.client, idA, 1);
    const runsB = await completedRuns(b.client, idB, 1);
    const uuid = runsA.gpus[0].uuid;

    const good = {
      protocol: 1, machine_id: idA, simulated: true, started_at_ms: Date.now() - 1000, finished_at_ms: Date.now(),
      gpus: [{ index: 0, uuid, results: [{ key: 'compute.fp16_tensor', status: 'ok', median: 290, samples: [289, 290, 291] }] }],
      machine: [],
    };
    const post = (key, body, raw) => new Client(server.url).request('POST', '/v1/agent/benchmarks',
      { headers: { Authorization: `Bearer ${key}` }, ...(raw ? { raw, headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' } } : { body }) });
    const cases = [
      ['another provider\'s machine', b.key, good, 'machine_id'],
      ['negative figure', a.key, { ...good, gpus: [{ ...good.gpus[0], results: [{ ...good.gpus[0].results[0], median: -1 }] }] }, 'gpus[0].results[0].median'],
      ['absurd figure', a.key, { ...good, gpus: [{ ...good.gpus[0], results: [{ ...good.gpus[0].results[0], median: 5000, samples: [5000] }] }] }, 'gpus[0].results[0].median'],
      ['another GPU', a.key, { ...good, gpus: [{ ...good.gpus[0], uuid: 'GPU-not-mine' }] }, 'gpus[0].uuid'],
      ['unknown run', a.key, { ...good, run_id: 'bench_nope' }, 'run_id'],
      ['no run: results the server did not ask for', a.key, good, 'run_id'],
      ['another machine\'s run', a.key, { ...good, run_id: runsB.runs[0].id }, 'run_id'],
    ];
    for (const [name, key, body, field] of cases) {
      const r = await post(key, body);
      assert.equal(r.status, 400, `${name}: ${r.body}`);
      assert.equal(r.json.error.field, field, `${name}: ${r.body}`);
    }
    const nan = await post(a.key, null, JSON.stringify(good).replace('"median":290', '"median":NaN'));
    assert.equal(nan.status, 400, nan.body);
    assert.equal(nan.json.error.field, 'median');

    const after = await a.client.request('GET', `/v1/provider/machines/${idA}/benchmarks`);
    assert.equal(after.json.runs.filter((r) => r.status === 'completed').length, 1, 'nothing stored');
    assert.equal(after.json.gpus[0].history.length, 1);
    // A run the server requested is taken once; the report's simulated flag is not believed.
    const runId = await requestedRunId(a.client, idA);
    const ok = await post(a.key, { ...good, run_id: runId, simulated: false });
    assert.equal(ok.status, 200, ok.body);
    const stored = await a.client.request('GET', `/v1/provider/machines/${idA}/benchmarks`);
    assert.equal(stored.json.runs.find((r) => r.id === runId).simulated, true, 'the machine is simulated');
    const twice = await post(a.key, { ...good, run_id: runId });
    assert.equal(twice.status, 400, twice.body);
    assert.equal(twice.json.error.field, 'run_id');
  } finally {
    for (const ag of agents) await ag.stop();
    await server.stop();
  }
});
