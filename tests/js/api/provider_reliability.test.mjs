// GET /v1/provider/reliability (API.md's contract, issue 20): the provider's score over all of their
// machines, each figure the GPU-weighted mean of the machines' own (GET /v1/provider/machines/{id}/
// reliability). On the test clock: two machines, one with 2 GPUs up for its whole daily window, one
// with 1 GPU up for a third of it, judged after a whole day; a provider with no machine yet, and one
// whose only machine is still new. Every answer is also held to /v1/openapi.json.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, Client } from '../lib/server.mjs';
import { Contract } from '../lib/contract.mjs';
import { approvedProvider, requestedRunId } from '../lib/provider.mjs';
import { gpunex, homeLoggedIn, parseTable } from '../lib/cli.mjs';

const MIN = 60_000;
const DAY = 86_400_000;
// A Monday at midnight UTC, a fixed day on the server's settable clock (so the test runs on any date).
const START = Date.parse('2026-03-09T00:00:00Z');
const SCHEDULE = { timezone: 'UTC', always: false,
  windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '12:00', end: '12:30' }] };

test(`${BACKEND}: the provider's reliability is the GPU-weighted mean of their machines'`, { timeout: 300_000 }, async () => {
  const server = await new TestServer(['--test-clock', new Date(START).toISOString(), '--enable-test-clock', 'true',
    '--session-ttl-hours', '8760']).start();
  try {
    const contract = await Contract.fetch(server.url);
    server.createUser('root@example.com', 'operator-password-1', 'admin');
    const admin = new Client(server.url, { contract });
    await admin.login('root@example.com', 'operator-password-1');
    const setClock = async (t) => {
      const r = await admin.request('POST', '/v1/test/clock', { body: { now: new Date(t).toISOString() } });
      assert.equal(r.status, 200, r.body);
    };
    const must = async (what, p, status = 200) => {
      const r = await p;
      assert.equal(r.status, status, `${what}: ${r.body}`);
      return r.json;
    };

    // A provider without a machine: nothing to score.
    const empty = await approvedProvider(server, 'rel-none@example.com');
    empty.client.contract = contract;
    const none = await must('no machines', empty.client.request('GET', '/v1/provider/reliability'));
    assert.equal(none.state, 'no_machines');
    assert.equal(none.score, null);
    assert.deepEqual(none.machines, []);
    // Not a provider: 403, as every provider route.
    const stranger = new Client(server.url, { contract });
    await stranger.signupAndLogin('rel-stranger@example.com');
    assert.equal((await stranger.request('GET', '/v1/provider/reliability')).status, 403);

    const provider = await approvedProvider(server, 'rel-two@example.com', { gpus: [{ model: 'L40S', count: 3,
      system_ram_gb: 256, download_gbps: 10, upload_gbps: 10, availability: '24/7',
      location: { city: 'Dublin', country: 'IE', region: 'eu-west' } }] });
    provider.client.contract = contract;
    const agent = new Client(server.url, { contract });
    agent.token = provider.key;
    const machines = [];
    for (const [name, count] of [['big', 2], ['small', 1]]) {
      const uuids = [...Array(count).keys()].map((i) => `GPU-rel-${name}-${i}`);
      const reg = await must(`register ${name}`, agent.request('POST', '/v1/agent/register', { body: {
        protocol_version: 1, agent_version: '0.1.0', machine_fingerprint: `fingerprint-${name}-${process.pid}`,
        simulated: true,
        host: { hostname: `rig-${name}`, cpu_model: 'EPYC', cpu_cores: 32, ram_mib: 262144, disk_free_mib: 900000,
          os: 'Debian GNU/Linux 12 (bookworm)', kernel: '6.1.0' },
        gpus: uuids.map((uuid, index) => ({ index, uuid, name: 'NVIDIA L40S', model: 'L40S', memory_mib: 46068,
          driver_version: '550.54.15', cuda_version: '12.4', pci_bus_id: `00000000:1${index}:00.0` })),
      } }));
      const id = reg.machine_id;
      await must(`benchmark ${name}`, agent.request('POST', '/v1/agent/benchmarks', { body: {
        protocol: 1, machine_id: id, run_id: await requestedRunId(agent, id), simulated: true, started_at_ms: 1000,
        finished_at_ms: 2000, machine: [],
        gpus: uuids.map((uuid, index) => ({ index, uuid, name: 'NVIDIA L40S', ecc_uncorrected: 0, telemetry: [], results: [
          { key: 'compute.fp16_tensor', status: 'ok', median: 289.64, samples: [289.64] },
          { key: 'compute.fp32', status: 'ok', median: 82.44, samples: [82.44] },
          { key: 'memory.copy', status: 'ok', median: 760.32, samples: [760.32] }] })) } }));
      await must(`schedule ${name}`, provider.client.request('PUT', `/v1/provider/machines/${id}/schedule`,
        { body: { ...SCHEDULE, maintenance: [] } }));
      machines.push({ id, name, count, seq: 0 });
    }

    // Still new (no whole day yet): the prior's figures.
    const fresh = await must('new', provider.client.request('GET', '/v1/provider/reliability'));
    assert.equal(fresh.state, 'new');
    assert.equal(fresh.score, fresh.prior);

    // Day one's window, 12:00-12:30: the big machine beats every minute, the small one every third.
    for (let m = 0; m < 30; m++) {
      const t = START + 12 * 60 * MIN + m * MIN + 30_000;
      await setClock(t);
      for (const machine of machines) {
        if (machine.name === 'small' && m % 3 !== 0) continue;
        await must('heartbeat', agent.request('POST', '/v1/agent/heartbeat', { body: { protocol_version: 1,
          machine_id: machine.id, seq: ++machine.seq, sent_at: new Date(t).toISOString(), telemetry: [], jobs: [] } }));
      }
    }
    await setClock(START + DAY + 60 * MIN);

    const mine = {};
    for (const machine of machines) {
      mine[machine.name] = await must(`reliability of ${machine.name}`,
        provider.client.request('GET', `/v1/provider/machines/${machine.id}/reliability`));
      assert.equal(mine[machine.name].state, 'scored', `${machine.name} has a score of its own`);
    }
    assert.equal(mine.big.parts.uptime.value, 1);
    assert.ok(Math.abs(mine.small.parts.uptime.value - 10 / 30) < 1e-4, `small uptime ${mine.small.parts.uptime.value}`);

    const all = await must('provider reliability', provider.client.request('GET', '/v1/provider/reliability'));
    assert.equal(all.state, 'scored');
    assert.equal(all.window_days, 30);
    assert.equal(all.weighting, 'gpu_count');
    const weighted = (f) => (2 * f(mine.big) + 1 * f(mine.small)) / 3;
    const close = (actual, expected, what, tol) =>
      assert.ok(Math.abs(actual - expected) <= tol, `${what}: ${actual}, expected ${expected}`);
    close(all.score, weighted((m) => m.score), 'score', 0.006);
    close(all.uptime, weighted((m) => m.parts.uptime.value), 'uptime', 1e-5);
    close(all.job_completion, weighted((m) => m.parts.job_completion.value), 'job completion', 1e-5);
    close(all.benchmark_stability, weighted((m) => m.parts.stability.value), 'benchmark stability', 1e-5);
    // Weighted by GPUs, not by machine: the plain mean of the two is well apart.
    assert.ok(Math.abs(all.score - (mine.big.score + mine.small.score) / 2) > 1, `${all.score} is not the plain mean`);
    // In registration order; on the test clock both registered in the same millisecond, so compare by id.
    const byId = (a, b) => (a[0] < b[0] ? -1 : 1);
    assert.deepEqual(all.machines.map((m) => [m.machine_id, m.gpus, m.score, m.counted]).sort(byId),
      machines.map((m) => [m.id, m.count, mine[m.name].score, true]).sort(byId));
    // The machines' events, each naming its machine: the small one's missed minutes are there.
    const small = machines.find((m) => m.name === 'small').id;
    assert.ok(mine.small.events.length > 0);
    assert.equal(all.events.filter((e) => e.machine_id === small).length, mine.small.events.length);
    const times = all.events.map((e) => Date.parse(e.at));
    assert.deepEqual(times, [...times].sort((a, b) => b - a), 'newest first');

    // The CLI says the same: `gpunex reliability` (the provider's score, a row per machine, what lowered it)
    // and `gpunex machines show` (the machine's score and its parts).
    const home = homeLoggedIn(server.url, provider.client.token, 'rel-two@example.com');
    const one = (x) => (Math.round(x * 10) / 10).toFixed(1);
    const rel = gpunex(home, ['reliability']);
    assert.equal(rel.code, 0, rel.err);
    assert.match(rel.out, new RegExp(`^Reliability: ${one(all.score)}, weighted by GPUs; alert below 80\\.0; over the last 30 days\\n`));
    const rows = parseTable(rel.out.slice(rel.out.indexOf('MACHINE')).split('\n\n')[0]);
    assert.deepEqual(rows.map((r) => [r.MACHINE, r.GPUS, r.SCORE]).sort(byId),
      machines.map((m) => [m.id, String(m.count), one(mine[m.name].score)]).sort(byId));
    assert.equal(rows.find((r) => r.MACHINE === small).UPTIME, `${(mine.small.parts.uptime.value * 100).toFixed(1)}%`);
    assert.match(rel.out, /\nWhat lowered it most:\n {2}-\d+\.\d /);
    // The costliest first, whatever their age.
    const shown = [...rel.out.matchAll(/^ {2}-(\d+\.\d) /gm)].map((m) => Number(m[1]));
    assert.deepEqual(shown, [...shown].sort((a, b) => b - a));
    assert.equal(shown[0], Number(Math.max(...all.events.map((e) => e.points)).toFixed(1)));
    const show = gpunex(home, ['machines', 'show', small]);
    assert.equal(show.code, 0, show.err);
    assert.match(show.out, new RegExp(`\\nReliability: ${one(mine.small.score)} \\(alert below 80\\.0\\)\\n  uptime ${(mine.small.parts.uptime.value * 100).toFixed(1)}%, `));
  } finally {
    await server.stop();
  }
});
