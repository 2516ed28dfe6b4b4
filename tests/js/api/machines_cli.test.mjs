// The gpunex CLI's everyday verbs against a real agent on a simulated GPU: `machines list` and
// `machines show ID` (tables for people, --json for scripts) agree with each other and with the API,
// and `offers search` takes the API's filters (GET /v1/marketplace/offers) and answers what it does;
// `machines show` says when a listed GPU has no rate, so is not offered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BACKEND, BENCH_SERVER_ARGS, BIN, TestServer, until } from '../lib/server.mjs';
import { gpunex, parseTable } from '../lib/cli.mjs';
import { agentEnv } from '../lib/agent.mjs';
import { approvedProvider } from '../lib/provider.mjs';

// What the CLI is expected to print for a machine's GPUs, from the API's JSON.
function figures(machine) {
  const gpus = machine.gpus.filter((g) => g.present);
  const scored = gpus.filter((g) => typeof g.perf_score === 'number');
  const byModel = {};
  for (const g of gpus) byModel[g.model] = (byModel[g.model] || 0) + 1;
  return {
    gpus: Object.entries(byModel).sort().map(([m, n]) => `${n} × ${m}`).join(', '),
    listed: `${gpus.filter((g) => g.listed).length}/${gpus.length}`,
    perf: scored.length ? scored.reduce((s, g) => s + g.perf_score, 0) / scored.length : null,
  };
}

// A figure printed with one decimal, against the API's number (null: printed as "-").
function assertShown(printed, value, what) {
  if (value === null || value === undefined) return assert.equal(printed, '-', what);
  assert.match(printed, /^-?\d+\.\d$/, what);
  assert.ok(Math.abs(Number(printed) - value) <= 0.05 + 1e-9, `${what}: ${printed} for ${value}`);
}

// The fields of a machine and its GPUs that do not move between two requests a moment apart.
function stable(m) {
  return {
    id: m.id, simulated: m.simulated, hostname: m.hostname, driver_version: m.driver_version,
    cuda_version: m.cuda_version, agent_version: m.agent_version,
    gpus: m.gpus.map((g) => ({ uuid: g.uuid, index: g.index, model: g.model, memory_mib: g.memory_mib,
      perf_score: g.perf_score, quality_ratio: g.quality_ratio, listed: g.listed, delist_reason: g.delist_reason,
      present: g.present })),
  };
}

test(`${BACKEND}: gpunex machines list|show and offers search`, async () => {
  const server = await new TestServer(BENCH_SERVER_ARGS).start();
  const home = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
  const dataDir = mkdtempSync(path.join(tmpdir(), 'gpunex-cli-agent-'));
  const logs = [];
  let agent;
  try {
    const { client, key } = await approvedProvider(server, 'cli-machines@example.com');

    const anonymous = gpunex(home, ['--server', server.url, 'machines', 'list']);
    assert.equal(anonymous.code, 1);
    assert.match(anonymous.err, /not logged in to .*; run `gpunex login`/);

    const login = gpunex(home, ['--server', server.url, 'login', '--email', 'cli-machines@example.com',
      '--password-stdin'], 'correct-horse-battery\n');
    assert.equal(login.code, 0, login.err);

    const none = gpunex(home, ['machines', 'list']);
    assert.equal(none.code, 0, none.err);
    assert.match(none.out, /no machines yet: install the agent with `curl -fsSL .*\/agent\/install\.sh \| bash`/);
    assert.deepEqual(JSON.parse(gpunex(home, ['machines', 'list', '--json']).out), { items: [], next_cursor: null });

    agent = spawn(path.join(BIN, 'gpunex-agent'), ['run', '--server', server.url, '--data-dir', dataDir,
      '--heartbeat-interval', '1', '--simulate', 'L40S:1', '--bench-storage-mib', '32', '--bench-net-mib', '8'],
    { env: agentEnv({ GPUNEX_API_KEY: key }), stdio: ['ignore', 'pipe', 'pipe'] });
    agent.stdout.on('data', (d) => logs.push(d.toString()));
    agent.stderr.on('data', (d) => logs.push(d.toString()));
    const agentLog = (e) => { throw new Error(`${e.message}\nagent: ${logs.join('').slice(-3000)}`); };
    const machine = await until('the machine to register', async () => {
      const r = await client.request('GET', '/v1/provider/machines');
      return r.status === 200 && r.json.items.length === 1 && r.json.items[0].status === 'online'
        ? r.json.items[0] : null;
    }).catch(agentLog);
    await until('the GPU to be benchmarked and listed', async () => {
      const r = await client.request('GET', `/v1/provider/machines/${machine.id}/benchmarks`);
      return r.status === 200 && r.json.runs.some((x) => x.status === 'completed') && r.json.gpus.length === 1
        && r.json.gpus.every((g) => g.listed);
    }, 120000).catch(agentLog);

    // --json: the list's machine is the show's machine, field for field, and the API's.
    const listJson = gpunex(home, ['machines', 'list', '--json']);
    assert.equal(listJson.code, 0, listJson.err);
    const listed = JSON.parse(listJson.out);
    assert.equal(listed.items.length, 1);
    assert.equal(listed.items[0].id, machine.id);
    const showJson = gpunex(home, ['machines', 'show', machine.id, '--json']);
    assert.equal(showJson.code, 0, showJson.err);
    const shown = JSON.parse(showJson.out);
    assert.deepEqual(stable(listed.items[0]), stable(shown));
    assert.deepEqual(stable(shown), stable((await client.request('GET', `/v1/provider/machines/${machine.id}`)).json));
    assert.ok(Array.isArray(shown.events), 'show carries the detail: events');

    // Tables: the list's row and the show's summary print the same figures, and they are the API's.
    const expected = figures(shown);
    assert.equal(expected.gpus, '1 × L40S');
    const list = gpunex(home, ['machines', 'list']);
    assert.equal(list.code, 0, list.err);
    const rows = parseTable(list.out.split('\n\n')[0]);
    assert.deepEqual(Object.keys(rows[0]), ['ID', 'STATUS', 'HOST', 'GPUS', 'LISTED', 'OFFERED', 'PERF', 'LAST SEEN']);
    assert.equal(rows.length, 1, list.out);
    const row = rows[0];
    assert.equal(row.ID, machine.id);
    assert.equal(row.STATUS, 'online (simulated)');
    assert.equal(row.HOST, shown.hostname);
    assert.deepEqual({ gpus: row.GPUS, listed: row.LISTED }, { gpus: expected.gpus, listed: expected.listed });
    assertShown(row.PERF, expected.perf, 'the list\'s PERF');

    const show = gpunex(home, ['machines', 'show', machine.id]);
    assert.equal(show.code, 0, show.err);
    assert.match(show.out, new RegExp(`^Machine ${machine.id} {2}online \\(simulated\\)\\n`));
    const line = (name) => show.out.match(new RegExp(`^${name}: +(.*)$`, 'm'))?.[1];
    assert.deepEqual({ gpus: line('GPUs'), listed: line('Listed'), perf: line('Perf') },
      { gpus: row.GPUS, listed: row.LISTED, perf: row.PERF });
    assert.equal(line('Host'), row.HOST);
    // Its GPU table: one row per GPU, with the API's figures.
    const gpuRows = parseTable(show.out.slice(show.out.indexOf('\nGPU ') + 1).split('\n\n')[0]);
    assert.equal(gpuRows.length, shown.gpus.length);
    for (const [i, g] of shown.gpus.entries()) {
      assert.equal(gpuRows[i].UUID, g.uuid);
      assert.equal(gpuRows[i].MODEL, 'L40S');
      assert.equal(gpuRows[i].VRAM, `${(g.memory_mib / 1024).toFixed(1)} GiB`);
      assertShown(gpuRows[i].PERF, g.perf_score, `GPU ${i} PERF`);
      assert.equal(gpuRows[i].LISTED.startsWith(g.listed ? 'yes' : 'no'), true, gpuRows[i].LISTED);
    }
    assert.equal(gpuRows.filter((r) => r.LISTED === 'yes').length, Number(row.LISTED.split('/')[0]));
    // Listed, but no rate yet: the show says the GPU is not offered, and how to offer it; the list and the
    // show say the machine is not offered, and why, as the API does.
    assert.match(show.out, /^No rate for L40S: its listed GPUs are not offered to customers\. Set one with `gpunex price set L40S USDC_PER_GPU_HOUR`/m);
    assert.deepEqual([shown.offered, shown.not_offered_reason], [false, 'no rate set for L40S']);
    assert.equal(row.OFFERED, 'no');
    assert.ok(list.out.endsWith(`\n\n${machine.id} is not offered: no rate set for L40S\n`) ||
      list.out.endsWith(`\n\n${machine.id} is not offered: no rate set for L40S`), list.out);
    assert.equal(line('Offered'), 'no: no rate set for L40S');

    const missing = gpunex(home, ['machines', 'show', 'm_nope']);
    assert.equal(missing.code, 1);
    assert.match(missing.err, /^error: /);

    // Offers: nothing until a rate is set; then the filters answer as the API does.
    const empty = gpunex(home, ['offers', 'search', '--model', 'L40S']);
    assert.equal(empty.code, 0, empty.err);
    assert.equal(empty.out, 'no offers match\n');
    assert.equal((await client.request('PUT', '/v1/provider/prices/L40S',
      { body: { usdc_per_gpu_hour: '0.95' } })).status, 200);
    assert.doesNotMatch(gpunex(home, ['machines', 'show', machine.id]).out, /No rate for/, 'offered now');
    const nowOffered = parseTable(gpunex(home, ['machines', 'list']).out)[0];
    assert.equal(nowOffered.OFFERED, 'yes', 'as the marketplace below shows it');
    assert.deepEqual([(await client.request('GET', `/v1/provider/machines/${machine.id}`)).json.offered,
      (await client.request('GET', `/v1/provider/machines/${machine.id}`)).json.not_offered_reason], [true, null]);

    const search = (args) => {
      const r = gpunex(home, ['offers', 'search', ...args, '--json']);
      assert.equal(r.code, 0, r.err);
      return JSON.parse(r.out).items.map((o) => o.machine_id);
    };
    const filters = [
      [['--model', 'L40S'], 'model=L40S', true],
      [['--model', 'H100-SXM'], 'model=H100-SXM', false],
      [['--model', 'l40s'], 'model=l40s', true],
      [['--region', 'eu-west'], 'region=eu-west', true],
      [['--region', 'EU-West'], 'region=EU-West', true],  // as a model's id, in any case
      [['--region', 'us-east'], 'region=us-east', false],
      [['--min-vram-gb', '40'], 'min_vram_gb=40', true],
      [['--min-vram-gb', '80'], 'min_vram_gb=80', false],
      [['--max-price', '1.00'], 'max_price=1.00', true],
      [['--max-price', '0.50'], 'max_price=0.50', false],
      [['--min-reliability', '0'], 'min_reliability=0', true],
      [['--tier', 'enterprise'], 'tier=enterprise', true],
      [['--tier', 'community'], 'tier=community', false],
      [['--sort', 'price', '--limit', '1'], 'sort=price&limit=1', true],
    ];
    for (const [args, query, found] of filters) {
      const api = await client.request('GET', `/v1/marketplace/offers?${query}`);
      assert.equal(api.status, 200, api.body);
      const ids = search(args);
      assert.deepEqual(ids, api.json.items.map((o) => o.machine_id), args.join(' '));
      assert.deepEqual(ids, found ? [machine.id] : [], args.join(' '));
    }

    const table = gpunex(home, ['offers', 'search', '--model', 'L40S', '--sort', 'perf']);
    assert.equal(table.code, 0, table.err);
    const offers = parseTable(table.out.split('\n').slice(0, -2).join('\n'));
    assert.equal(offers.length, 1, table.out);
    assert.deepEqual(
      [offers[0].MACHINE, offers[0].MODEL, offers[0].GPUS, offers[0]['USDC/GPU-H'], offers[0].TIER, offers[0].REGION,
        offers[0].SIMULATED],
      [machine.id, 'L40S', '1', '0.950000', 'enterprise', 'eu-west', 'simulated']);  // demo mode: says so
    // The offer's perf reads as the machine's and its GPU's: one rounding (the offers' two decimals), not two.
    assert.equal(offers[0].PERF, row.PERF, 'offers search PERF and machines list PERF');
    assert.equal(offers[0].PERF, gpuRows[0].PERF, 'offers search PERF and the GPU row');
    assert.match(table.out, /\n1 offer of 1\n$/);
    // --why: the rank's factors, as the API explains them (the dashboard's "Why this rank").
    const apiOffer = (await client.request('GET', '/v1/marketplace/offers?model=L40S')).json.items[0];
    const ex = apiOffer.rank_explanation;
    const why = gpunex(home, ['offers', 'search', '--model', 'L40S', '--why']);
    assert.equal(why.code, 0, why.err);
    assert.ok(why.out.includes(`\n${machine.id} L40S: rank ${ex.rank.toFixed(4)} = reliability ` +
      `${ex.reliability.factor.toFixed(4)} (${ex.reliability.value.toFixed(1)}, ${ex.reliability.source}) × value ` +
      `${ex.value.factor.toFixed(4)} (${ex.value.perf_per_usdc.toFixed(2)} perf/USDC vs the model's median ` +
      `${ex.value.model_median_perf_per_usdc.toFixed(2)}) × tier ${ex.tier.factor.toFixed(4)} (${ex.tier.tier}) × ` +
      `commitment ${ex.commitment.factor.toFixed(4)} (${ex.commitment.months} months)\n`), why.out);

    // A model filter that names no catalog model says which models exist.
    const unknown = gpunex(home, ['offers', 'search', '--model', 'RTX 9999']);
    assert.equal(unknown.code, 0, unknown.err);
    assert.match(unknown.out, /^no offers: no GPU model matches the model filter; models: .*\bL40S\b.*RTX-4090/);

    // A bad filter is the server's error, naming it; the earlier verb name still works.
    const bad = gpunex(home, ['offers', 'search', '--min-reliability', '101']);
    assert.equal(bad.code, 1);
    assert.match(bad.err, /min_reliability must be a number from 0 to 100 \(field: min_reliability, --min-reliability\)/);
    const free = gpunex(home, ['offers', 'search', '--max-price', '0']);
    assert.equal(free.code, 1);
    assert.match(free.err, /Max price must be above 0 \(field: max_price, --max-price\)/);
    const badJson = gpunex(home, ['offers', 'search', '--tier', 'gold', '--json']);
    assert.equal(badJson.code, 1);
    assert.equal(JSON.parse(badJson.out).error.field, 'tier');
    const alias = gpunex(home, ['market', 'search', '--model', 'L40S', '--json']);
    assert.equal(alias.code, 0, alias.err);
    assert.deepEqual(JSON.parse(alias.out).items.map((o) => o.machine_id), [machine.id]);

    // `schedule set --help` gives an example file: the server takes it as it is (its one date moved to
    // ten days from now, whatever the day the test runs).
    const help = gpunex(home, ['schedule', 'set', '--help']);
    assert.equal(help.code, 0, help.err);
    const example = help.out.split('For example:\n\n')[1].split('\n\n')[0]
      .split('\n').map((l) => l.replace(/^ {2}/, '')).join('\n');
    const day = new Date(Date.now() + 10 * 86400_000).toISOString().slice(0, 10);
    assert.equal(example.match(/\d{4}-\d\d-\d\dT/g).length, 2, example);
    const exampleFile = path.join(home, 'example-schedule.toml');
    writeFileSync(exampleFile, example.replace(/\d{4}-\d\d-\d\dT/g, `${day}T`));
    const applied = gpunex(home, ['schedule', 'set', machine.id, '--file', exampleFile, '--json']);
    assert.equal(applied.code, 0, `${applied.out}${applied.err}\n${example}`);
    const saved = JSON.parse(applied.out);
    assert.deepEqual(saved.maintenance.map((m) => m.category), ['power', 'software']);
    assert.equal(saved.windows[0].start, '18:00');
  } finally {
    if (agent && agent.exitCode === null) { agent.kill('SIGTERM'); await new Promise((r) => agent.on('exit', r)); }
    await server.stop();
  }
});
