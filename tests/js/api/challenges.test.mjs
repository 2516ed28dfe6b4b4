// Issue 21, "challenges a lying agent cannot pass", end to end with the real gpunex-agent on simulated
// GPUs: an honest agent answers every challenge in time and stays listed; an agent run with
// --test-lie (random answers, or inflated figures) fails them, is delisted with a reason the provider can
// act on, and its provider is flagged for review. The hundreds of trials per lie are in
// tests/unit/challenge_trials_test.cpp.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, BENCH_SERVER_ARGS, Client, TestServer, until } from '../lib/server.mjs';
import { startAgent } from '../lib/agent.mjs';
import { approvedProvider } from '../lib/provider.mjs';

const ARGS = [...BENCH_SERVER_ARGS, '--benchmark-cpu-cores-per-gpu', '1', '--require-challenge-answers', 'true'];
const AGENT_ARGS = ['--bench-storage-mib', '32', '--bench-net-mib', '8'];

async function flaggedProviders(server) {
  if (!server.adminClient) {
    server.createUser(`root.${process.pid}@example.com`, 'operator-password-1', 'admin');
    server.adminClient = new Client(server.url);
    await server.adminClient.login(`root.${process.pid}@example.com`, 'operator-password-1');
  }
  const r = await server.adminClient.request('GET', '/v1/admin/providers/flagged');
  assert.equal(r.status, 200, r.body);
  return r.json.providers;
}

async function decidedChallenges(client) {
  const id = await until('the machine to register', async () => {
    const r = await client.request('GET', '/v1/provider/machines');
    return r.status === 200 && r.json.items.length === 1 ? r.json.items[0].id : null;
  });
  return until('every challenge of the first run decided', async () => {
    const r = await client.request('GET', `/v1/provider/machines/${id}/benchmarks`);
    assert.equal(r.status, 200, r.body);
    const run = r.json.runs.find((x) => x.status === 'completed');
    if (!run || run.challenges.length === 0) return null;
    return run.challenges.every((c) => !['issued', 'filled'].includes(c.status)) ? { ...r.json, run } : null;
  }, 90000);
}

test(`${BACKEND}: an honest agent passes its GEMM and VRAM challenges and stays listed`, async () => {
  const server = await new TestServer(ARGS).start();
  let agent;
  try {
    const { client, key } = await approvedProvider(server, 'honest@example.com');
    agent = startAgent(server.url, key, { simulate: 'L40S:2', args: AGENT_ARGS });
    const bench = await decidedChallenges(client);
    assert.deepEqual(bench.run.challenges.map((c) => c.kind).sort(), ['gemm', 'gemm', 'vram', 'vram']);
    for (const c of bench.run.challenges) assert.equal(c.status, 'passed', JSON.stringify(c) + agent.logs.join(''));
    for (const g of bench.gpus) assert.equal(g.listed, true, JSON.stringify(g));
    assert.deepEqual(await flaggedProviders(server), []);
  } finally {
    if (agent) await agent.stop();
    await server.stop();
  }
});

for (const [lie, kinds] of [['random', { gemm: 'wrong', vram: 'wrong' }], ['inflate', { gemm: 'late', vram: 'passed' }]]) {
  test(`${BACKEND}: an agent that lies (${lie}) is caught, delisted with a reason, and flagged`, async () => {
    const server = await new TestServer(ARGS).start();
    let agent;
    try {
      const { client, key } = await approvedProvider(server, `${lie}@example.com`);
      agent = startAgent(server.url, key, { simulate: 'L40S:2', args: [...AGENT_ARGS, '--test-lie', lie] });
      const bench = await decidedChallenges(client);
      for (const c of bench.run.challenges) assert.equal(c.status, kinds[c.kind], JSON.stringify(c));
      for (const g of bench.gpus) {
        assert.equal(g.listed, false, JSON.stringify(g));
        assert.match(g.delist_reason, /GEMM challenge failed|VRAM challenge failed/);
        assert.ok(g.recommendation.length > 40, g.recommendation);
      }
      const notes = await client.request('GET', '/v1/notifications');
      assert.ok(notes.json.items.find((n) => n.kind === 'gpu_delisted' && /challenge/.test(n.title)),
        JSON.stringify(notes.json));
      // Two GPUs: two failures (inflate) or four (random); three or more flag the provider.
      const flagged = await flaggedProviders(server);
      assert.equal(flagged.length, lie === 'random' ? 1 : 0, JSON.stringify(flagged));
      if (lie === 'random') assert.match(flagged[0].reason, /challenges failed/);
    } finally {
      if (agent) await agent.stop();
      await server.stop();
    }
  });
}
