// Issue 21, "challenges a lying agent cannot pass", end to end with the real gpunex-agent on simulated
// GPUs: an honest agent answers every challenge in time, its telemetry explains its figures, and it stays
// listed, spot checks included; an agent run with --test-lie (random answers, inflated figures, figures
// with an idle GPU's telemetry, or honest until listed) fails, is delisted with a reason the provider can
// act on, and its provider is flagged for review. The hundreds of trials per lie are in
// tests/unit/challenge_trials_test.cpp.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, BENCH_SERVER_ARGS, Client, TestServer, until } from '../lib/server.mjs';
import { startAgent } from '../lib/agent.mjs';
import { approvedProvider, requestedRunId } from '../lib/provider.mjs';
import { launchBrowser, screenshotter } from '../lib/browser.mjs';
import { adminOf, moveTestClock } from '../lib/rentals.mjs';

const ARGS = [...BENCH_SERVER_ARGS, '--benchmark-cpu-cores-per-gpu', '1', '--require-challenge-answers', 'true'];
const AGENT_ARGS = ['--bench-storage-mib', '32', '--bench-net-mib', '8'];

async function flaggedProviders(server) {
  await adminOf(server);
  const r = await server.adminClient.request('GET', '/v1/admin/providers/flagged');
  assert.equal(r.status, 200, r.body);
  return r.json.providers;
}

async function decidedChallenges(client) {
  const id = await until('the machine to register', async () => {
    const r = await client.request('GET', '/v1/provider/machines');
    return r.status === 200 && r.json.items.length === 1 ? r.json.items[0].id : null;
  });
  // A bound, not a figure under test: under ASan, with two agents' simulated benchmarks and the other
  // sanitizer suites sharing two cores, a run's challenges took over 90 s to be decided (CI62, CI66).
  return until('every challenge of the first run decided', async () => {
    const r = await client.request('GET', `/v1/provider/machines/${id}/benchmarks`);
    assert.equal(r.status, 200, r.body);
    const run = r.json.runs.find((x) => x.status === 'completed');
    if (!run || run.challenges.length === 0) return null;
    return run.challenges.every((c) => !['issued', 'filled'].includes(c.status)) ? { ...r.json, run } : null;
  }, 240000);
}

test(`${BACKEND}: an honest agent passes its GEMM and VRAM challenges and stays listed`, async () => {
  const server = await new TestServer(ARGS).start();
  let agent;
  try {
    const { client, key } = await approvedProvider(server, 'honest@example.com');
    agent = startAgent(server.url, key, { simulate: 'L40S:2', args: AGENT_ARGS });
    const bench = await decidedChallenges(client);
    assert.deepEqual(bench.run.challenges.map((c) => c.kind).sort(),
      ['gemm', 'gemm', 'telemetry', 'telemetry', 'vram', 'vram']);
    for (const c of bench.run.challenges) assert.equal(c.status, 'passed', JSON.stringify(c) + agent.logs.join(''));
    for (const g of bench.gpus) assert.equal(g.listed, true, JSON.stringify(g));
    const machines = (await client.request('GET', '/v1/provider/machines')).json.items;
    assert.deepEqual(machines.flatMap((m) => m.gpus.map((g) => [g.listed, g.awaiting_challenges])),
      [[true, false], [true, false]]);
    assert.deepEqual(await flaggedProviders(server), []);
  } finally {
    if (agent) await agent.stop();
    await server.stop();
  }
});

// An answer later than its deadline is 'late', or 'unanswered' when a heartbeat came between the two.
// Failures: two per GPU (random, inflate) flag the provider (3 or more); one per GPU (idle) does not yet.
for (const [lie, kinds, reason, flagged] of [
  ['random', { gemm: ['wrong'], vram: ['wrong'], telemetry: ['passed'] }, /GEMM challenge failed|VRAM challenge failed/, 1],
  ['inflate', { gemm: ['late', 'unanswered'], vram: ['passed'], telemetry: ['wrong'] }, /GEMM challenge failed/, 1],
  // Twice its figures, its root in time over the rows it had computed by then: the rows opened catch it
  // ('late' when a loaded machine delays the root it sends with 0.4 s to spare; the trials time it exactly).
  ['partial', { gemm: ['wrong', 'late'], vram: ['passed'], telemetry: ['passed'] }, /GEMM challenge failed/, 0],
  ['idle', { gemm: ['passed'], vram: ['passed'], telemetry: ['wrong'] }, /Telemetry check/, 0]]) {
  test(`${BACKEND}: an agent that lies (${lie}) is caught, delisted with a reason, and flagged`, async () => {
    const server = await new TestServer(ARGS).start();
    let agent;
    try {
      const { client, key } = await approvedProvider(server, `${lie}@example.com`);
      agent = startAgent(server.url, key, { simulate: 'L40S:2', args: [...AGENT_ARGS, '--test-lie', lie] });
      const bench = await decidedChallenges(client);
      for (const c of bench.run.challenges) assert.ok(kinds[c.kind].includes(c.status), JSON.stringify(c));
      for (const g of bench.gpus) {
        assert.equal(g.listed, false, JSON.stringify(g));
        assert.match(g.delist_reason, reason);
        assert.ok(g.recommendation.length > 40, g.recommendation);
      }
      if (lie === 'idle') {
        // What the provider reads: the power the figure needs against what the GPU drew, and what to do.
        const tel = bench.run.challenges.find((c) => c.kind === 'telemetry');
        assert.match(tel.result, /idle for the whole FP16 tensor case|needs at least \d+ W/);
        assert.match(bench.gpus[0].recommendation, /official gpunex-agent/);
      }
      const notes = await client.request('GET', '/v1/notifications');
      assert.ok(notes.json.items.find((n) => n.kind === 'gpu_delisted'), JSON.stringify(notes.json));
      const flaggedNow = await flaggedProviders(server);
      assert.equal(flaggedNow.length, flagged, JSON.stringify(flaggedNow));
      if (flagged) assert.match(flaggedNow[0].reason, /challenges failed/);
      if (lie === 'random') {
        // The admin's review page lists the flagged provider as the API does.
        assert.equal(flaggedNow[0].email, 'random@example.com');
        const browser = await launchBrowser(screenshotter(`challenges-${BACKEND}`));
        try {
          const p = await browser.newPage();
          await p.goto(`${server.url}/#/login`);
          await p.getByLabel('E-mail').fill(`root.${process.pid}@example.com`);
          await p.getByLabel('Password').fill('operator-password-1');
          await p.getByRole('button', { name: 'Log in' }).click();
          await p.getByRole('heading', { name: 'Roles' }).waitFor();
          await p.goto(`${server.url}/#/review`);
          const table = p.getByRole('table', { name: 'Providers flagged by benchmark checks' });
          await table.waitFor();
          const rows = table.locator('tbody tr');
          assert.equal(await rows.count(), flaggedNow.length);
          const text = await rows.first().textContent();
          assert.ok(text.includes('random@example.com') && text.includes(flaggedNow[0].provider_id), text);
          assert.ok(text.includes(String(flaggedNow[0].challenge_failures)), text);
          assert.match(text, /challenges failed/);
        } finally {
          await browser.close();
        }
      }
    } finally {
      if (agent) await agent.stop();
      await server.stop();
    }
  });
}

// The attacker, who has a requested run now, posts figures and ignores the challenges (or
// answers one by hand): the deadline passes, the next heartbeat delists the GPU.
test(`${BACKEND}: challenges ignored or answered by hand fail: delisted at the deadline, a wrong C is refused once`, async () => {
  // The server's clock stands still until the test moves it past the GEMM deadline: the steps before that
  // (1.5 MiB bodies) can take longer than the deadline on a loaded machine (a sanitizer build in CI did).
  const start = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
  const server = await new TestServer(['--allow-simulated-offers', 'true', '--require-challenge-answers', 'true',
    '--test-clock', start, '--enable-test-clock', 'true']).start();
  try {
    const { client, key } = await approvedProvider(server, 'ignorer@example.com');
    const agent = new Client(server.url);
    agent.token = key;
    const send = async (method, p, body, status = 200) => {
      const r = await agent.request(method, p, { body });
      assert.equal(r.status, status, `${method} ${p}: ${r.body}`);
      return r.json;
    };
    const uuids = ['GPU-ign-0', 'GPU-ign-1'];
    const machineId = (await send('POST', '/v1/agent/register', {
      protocol_version: 1, agent_version: '0.1.0', machine_fingerprint: 'fingerprint-ignorer', simulated: true,
      host: { hostname: 'rig', cpu_model: 'EPYC', cpu_cores: 32, ram_mib: 262144, disk_free_mib: 900000,
        os: 'Debian GNU/Linux 12 (bookworm)', kernel: '6.1.0' },
      gpus: uuids.map((uuid, index) => ({ index, uuid, name: 'NVIDIA L40S', model: 'L40S', memory_mib: 46068,
        driver_version: '550.54.15', cuda_version: '12.4', pci_bus_id: `00000000:1${index}:00.0` })),
    })).machine_id;
    let seq = 0;
    const heartbeat = () => send('POST', '/v1/agent/heartbeat', { protocol_version: 1, machine_id: machineId,
      seq: ++seq, sent_at: new Date().toISOString(), telemetry: [], jobs: [] });
    const results = [
      { key: 'compute.fp16_tensor', status: 'ok', median: 289.64, samples: [289.64] },
      { key: 'compute.fp32', status: 'ok', median: 82.44, samples: [82.44] },
      { key: 'memory.copy', status: 'ok', median: 760.32, samples: [760.32] },
    ];
    const reply = await send('POST', '/v1/agent/benchmarks', { protocol: 1, machine_id: machineId,
      run_id: await requestedRunId(client, machineId), simulated: false, started_at_ms: 1000, finished_at_ms: 2000,
      // Telemetry that explains the figure (an attacker writes it too): 300 W for 289.64 TFLOP/s on an L40S.
      gpus: uuids.map((uuid, index) => ({ index, uuid, name: 'NVIDIA L40S', ecc_uncorrected: 0, results,
        telemetry: [{ at_ms: 1500, during: 'compute.fp16_tensor', power_w: 300, sm_clock_mhz: 2400 }] })),
      machine: [] });
    // Nothing unverified reaches the market: the GPUs wait for their challenges' answers.
    assert.deepEqual(reply.gpus.map((g) => [g.listed, g.awaiting_challenges]), [[false, true], [false, true]]);
    assert.equal(reply.challenges.length, 4);
    const telemetry = (await send('GET', `/v1/provider/machines/${machineId}/benchmarks`)).runs[0].challenges
      .filter((c) => c.kind === 'telemetry');
    assert.deepEqual(telemetry.map((c) => c.status), ['passed', 'passed']);
    const gemm = reply.challenges.filter((c) => c.kind === 'gemm');
    assert.ok(gemm.every((c) => c.n >= 64 && c.n <= 256 && c.products >= 1 && /^[0-9a-f]{16}$/.test(c.seed_a) &&
      c.allowed_s > 0.75));

    // GPU 1, by hand: a made-up root, then rows of zeros where the server asked: wrong, and a second answer
    // is refused. The rows are picked only once the root is in.
    const mine = gemm.find((c) => c.gpu_uuid === uuids[1]);
    const base = { protocol_version: 1, machine_id: machineId, challenge_id: mine.id };
    const opening = await send('POST', '/v1/agent/challenges', { ...base, root: '0'.repeat(64) });
    assert.equal(opening.status, 'pending');
    assert.ok(opening.rows.length >= 16 && opening.rows.every((k) => k < mine.n * mine.products), opening.rows);
    assert.equal(new Set(opening.rows).size, opening.rows.length, 'distinct rows');
    assert.ok(opening.allowed_s >= 1, opening.allowed_s);
    const answer = { ...base,
      opened: opening.rows.map((index) => ({ index, values: new Array(mine.n).fill(0), block: [], path: [] })) };
    const early = await agent.request('POST', '/v1/agent/challenges', { body: { ...base, root: '1'.repeat(64) } });
    assert.equal(early.status, 400, 'a second root: the rows are awaited');
    assert.equal(early.json.error.field, 'opened');
    const wrong = await send('POST', '/v1/agent/challenges', answer);
    assert.equal(wrong.status, 'wrong');
    assert.match(wrong.reason, /not the product/);
    const again = await agent.request('POST', '/v1/agent/challenges', { body: answer });
    assert.equal(again.status, 409, again.body);
    assert.equal(again.json.error.code, 'challenge_decided');
    // Opened rows may be large (up to 128 rows of n = 8192 on a real GPU): this route alone keeps bodies
    // over the server's 1 MiB limit, and only from an agent's key.
    const big = { ...base, challenge_id: 'chl_none',
      opened: Array.from({ length: 24 }, (_, index) => ({ index, values: new Array(8192).fill(-123456), block: [], path: [] })) };
    assert.ok(JSON.stringify(big).length > 1.5 * 1024 * 1024);
    assert.equal((await agent.request('POST', '/v1/agent/challenges', { body: big })).status, 404);
    assert.equal((await new Client(server.url).request('POST', '/v1/agent/challenges', { body: big })).status, 401);
    assert.equal((await agent.request('POST', '/v1/agent/heartbeat', { body: big })).status, 413);
    // That large body is parsed as every other is checked: nesting stops at 32 levels (not a tree of
    // millions of brackets), a field given twice is named.
    const nested = await agent.request('POST', '/v1/agent/challenges', { raw: `${'['.repeat(1 << 20)}${']'.repeat(1 << 20)}` });
    assert.equal(nested.status, 400, nested.body);
    assert.equal(nested.json.error.code, 'invalid_json');
    assert.match(nested.json.error.message, /deeper than 32/);
    const twice = await agent.request('POST', '/v1/agent/challenges',
      { raw: `{"protocol_version":1,"machine_id":"${machineId}","challenge_id":"${mine.id}","root":"${'2'.repeat(64)}","root":"x"}` });
    assert.equal(twice.status, 400, twice.body);
    assert.equal(twice.json.error.field, 'root');

    // GPU 0: nothing. Waiting (never listed) until its GEMM deadline passes, failed at the first heartbeat after it.
    await heartbeat();
    let bench = await send('GET', `/v1/provider/machines/${machineId}/benchmarks`);
    assert.deepEqual(bench.gpus.map((g) => g.listed), [false, false]);
    assert.match(bench.gpus[0].delist_reason, /Waiting for the answers to its benchmark challenges/);
    assert.match(bench.gpus[1].delist_reason, /GEMM challenge failed/);
    // The machines list and a machine's detail say which GPU's verdict is still to come.
    const awaiting = async () => {
      const listed = (await send('GET', '/v1/provider/machines')).items.find((m) => m.id === machineId);
      const detail = await send('GET', `/v1/provider/machines/${machineId}`);
      // Beside its own 24-hour figures (an overview in the list, series in the detail), each GPU reads the same.
      const shared = (g) => Object.fromEntries(Object.entries(g).filter(([k]) => !k.endsWith('_24h')));
      assert.deepEqual(listed.gpus.map(shared), detail.gpus.map(shared));
      return detail.gpus.map((g) => [g.uuid, g.listed, g.awaiting_challenges]);
    };
    assert.deepEqual(await awaiting(), [[uuids[0], false, true], [uuids[1], false, false]]);
    const offers = await new Client(server.url).request('GET', '/v1/marketplace/offers');
    assert.equal(offers.json.items.filter((o) => o.machine_id === machineId).length, 0);
    const deadline = Math.max(...gemm.map((c) => c.allowed_s));
    await moveTestClock(server, Math.ceil(deadline) - 1);
    await heartbeat();
    bench = await send('GET', `/v1/provider/machines/${machineId}/benchmarks`);
    assert.match(bench.gpus[0].delist_reason, /Waiting for the answers/, 'a second before the deadline');
    await moveTestClock(server, 2);
    await heartbeat();
    bench = await send('GET', `/v1/provider/machines/${machineId}/benchmarks`);
    assert.equal(bench.gpus[0].listed, false);
    assert.match(bench.gpus[0].delist_reason, /GEMM challenge failed/);
    assert.match(bench.gpus[0].recommendation, /did not answer/);
    assert.deepEqual(await awaiting(), [[uuids[0], false, false], [uuids[1], false, false]]);
    const statuses = bench.runs[0].challenges.filter((c) => c.gpu_uuid === uuids[0] && c.kind !== 'telemetry')
      .map((c) => c.status);
    assert.deepEqual(statuses.sort(), ['issued', 'unanswered'], 'the VRAM fill has ten minutes');
    // Two failures so far (the two GEMMs); the third flags the provider for review.
    assert.equal((await flaggedProviders(server)).length, 0, 'two failures: not yet');
  } finally {
    await server.stop();
  }
});

// Telemetry that cannot be, as in the issue's "400 TFLOP/s at 30 W": a healthy H100's figures at 31 W. The
// report is accepted (its shape is fine), the GPU is not listed, and the reason names the power the figure
// needs.
test(`${BACKEND}: a report whose power readings cannot explain its figure is not listed`, async () => {
  const server = await new TestServer(['--allow-simulated-offers', 'true', '--require-challenge-answers', 'true']).start();
  try {
    const { client, key } = await approvedProvider(server, 'lowpower@example.com');
    const agent = new Client(server.url);
    agent.token = key;
    const uuid = 'GPU-low-0';
    const reg = await agent.request('POST', '/v1/agent/register', { body: {
      protocol_version: 1, agent_version: '0.1.0', machine_fingerprint: 'fingerprint-lowpower', simulated: true,
      host: { hostname: 'rig', cpu_model: 'EPYC', cpu_cores: 32, ram_mib: 262144, disk_free_mib: 900000,
        os: 'Debian GNU/Linux 12 (bookworm)', kernel: '6.1.0' },
      gpus: [{ index: 0, uuid, name: 'NVIDIA H100 80GB HBM3', model: 'H100-SXM', memory_mib: 81559,
        driver_version: '550.54.15', cuda_version: '12.4', pci_bus_id: '00000000:10:00.0' }] } });
    assert.equal(reg.status, 200, reg.body);
    const machineId = reg.json.machine_id;
    const results = [
      { key: 'compute.fp16_tensor', status: 'ok', median: 790, samples: [790] },
      { key: 'compute.fp32', status: 'ok', median: 60.5, samples: [60.5] },
      { key: 'memory.copy', status: 'ok', median: 2950, samples: [2950] },
    ];
    const reply = await agent.request('POST', '/v1/agent/benchmarks', { body: { protocol: 1, machine_id: machineId,
      run_id: await requestedRunId(client, machineId), simulated: true, started_at_ms: 1000, finished_at_ms: 2000,
      gpus: [{ index: 0, uuid, name: 'NVIDIA H100 80GB HBM3', ecc_uncorrected: 0, results,
        telemetry: [{ at_ms: 1200, during: 'compute.fp16_tensor', power_w: 30, sm_clock_mhz: 1980 },
          { at_ms: 1800, during: 'compute.fp16_tensor', power_w: 31, sm_clock_mhz: 1980 }] }],
      machine: [] } });
    assert.equal(reply.status, 200, reply.body);
    assert.equal(reply.json.gpus[0].listed, false);
    const finding = reply.json.gpus[0].failures.find((f) => f.metric === 'challenge.telemetry');
    assert.ok(finding, JSON.stringify(reply.json.gpus[0].failures));
    assert.equal(finding.measured, 31);
    assert.equal(reply.json.gpus[0].failures.length, 1, 'the figures themselves are healthy');
    // 790 / (989.5 / 700 · 2) W.
    assert.ok(Math.abs(finding.expected - 790 / (989.5 / 700 * 2)) < 0.5, JSON.stringify(finding));
    const bench = await client.request('GET', `/v1/provider/machines/${machineId}/benchmarks`);
    assert.match(bench.json.gpus[0].delist_reason, /Telemetry check/);
    assert.match(bench.json.gpus[0].recommendation, /790\.0 TFLOP\/s FP16 tensor needs at least 279 W on this model, but the GPU drew at most 31 W/);
    const tel = bench.json.runs[0].challenges.find((c) => c.kind === 'telemetry');
    assert.equal(tel.status, 'wrong');
    const offers = await new Client(server.url).request('GET', '/v1/marketplace/offers');
    assert.equal(offers.json.items.filter((o) => o.machine_id === machineId).length, 0);
  } finally {
    await server.stop();
  }
});

async function spotChecks(client, machineId, count) {
  return until(`${count} spot checks decided`, async () => {
    const r = await client.request('GET', `/v1/provider/machines/${machineId}/benchmarks`);
    const spot = r.json.runs.flatMap((run) => run.challenges).filter((c) => c.origin === 'spot');
    return spot.length >= count && spot.every((c) => !['issued', 'filled'].includes(c.status)) ? { ...r.json, spot } : null;
  }, 240000);
}

// Spot checks come at random times while a GPU is listed and idle (here every 1-3 s): the same
// challenges, against the figures of the run that listed it. An honest agent passes each and stays
// listed; an agent honest in its run but not after (a GPU swapped once listed: --test-lie bait) is
// delisted at its first spot check.
test(`${BACKEND}: spot checks while listed: an honest GPU passes them, a GPU swapped after its run is delisted`, async () => {
  const server = await new TestServer([...ARGS, '--spot-check-interval-s', '2']).start();
  const agents = [];
  try {
    const honest = await approvedProvider(server, 'spot-honest@example.com');
    const bait = await approvedProvider(server, 'spot-bait@example.com');
    agents.push(startAgent(server.url, honest.key, { simulate: 'L40S:1', args: AGENT_ARGS }));
    agents.push(startAgent(server.url, bait.key, { simulate: 'L40S:1', args: [...AGENT_ARGS, '--test-lie', 'bait'] }));
    const baitRun = await decidedChallenges(bait.client);
    for (const c of baitRun.run.challenges.filter((x) => x.origin === 'run')) {
      assert.equal(c.status, 'passed', 'honest in its run: ' + JSON.stringify(c));
    }
    const honestRun = await decidedChallenges(honest.client);

    const caught = await spotChecks(bait.client, baitRun.machine_id, 2);
    assert.deepEqual(caught.spot.map((c) => c.status).sort(), ['wrong', 'wrong'], JSON.stringify(caught.spot));
    assert.equal(caught.gpus[0].listed, false);
    assert.match(caught.gpus[0].delist_reason, /spot check failed/);

    const passed = await spotChecks(honest.client, honestRun.machine_id, 4);
    for (const c of passed.spot) assert.equal(c.status, 'passed', JSON.stringify(c) + agents[0].logs.join(''));
    assert.equal(passed.gpus[0].listed, true, JSON.stringify(passed.gpus[0]));
  } finally {
    for (const a of agents) await a.stop();
    await server.stop();
  }
});
