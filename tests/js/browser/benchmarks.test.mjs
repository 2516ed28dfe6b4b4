// Browser: the Benchmarks tab. An approved provider runs the real gpunex-agent on a
// simulated L40S with performance factor 0.7; the tab shows the GPU delisted with the
// reason naming FP16 tensor throughput and the recommendation, the latest run as bars
// against the reference and the score's history as a chart. "Re-run benchmarks" is
// acknowledged, and pressing it again is answered politely (a run is in progress, or
// the rate limit), and once that run is done the history has two points and a
// third press meets the rate limit. The delisting notification's link opens the machine's
// Benchmarks tab with the same verdict (issue 14, item 10). Screenshots of each step.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, BENCH_SERVER_ARGS, TestServer, until } from '../lib/server.mjs';
import { approvedProvider } from '../lib/provider.mjs';
import { startAgent } from '../lib/agent.mjs';
import { launchBrowser, screenshotter } from '../lib/browser.mjs';


test(`${BACKEND}: Benchmarks tab shows a perf-0.7 GPU delisted (FP16 tensor), re-run acknowledged then refused politely`, async () => {
  const server = await new TestServer(BENCH_SERVER_ARGS).start();
  const email = 'slow-ui@example.com';
  let agent;
  let browser;
  const errors = [];
  const shot = screenshotter(`benchmarks-${BACKEND}`);
  try {
    const { client, key } = await approvedProvider(server, email);
    agent = startAgent(server.url, key, { simulate: [{ model: 'L40S', count: 1, perf_factor: 0.7 }],
      args: ['--bench-storage-mib', '32', '--bench-net-mib', '8'] });
    const id = await until('the machine to register', async () => {
      const r = await client.request('GET', '/v1/provider/machines');
      return r.status === 200 && r.json.items.length === 1 ? r.json.items[0].id : null;
    });
    await until('the first completed benchmark run', async () => {
      const r = await client.request('GET', `/v1/provider/machines/${id}/benchmarks`);
      return r.status === 200 && r.json.runs.some((x) => x.status === 'completed') && r.json.gpus[0].benchmarked;
    }, 90000);

    browser = await launchBrowser(shot);
    const p = await browser.newPage();
    p.on('pageerror', (e) => errors.push(e.message));
    p.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) errors.push(m.text()); });
    await p.goto(`${server.url}/#/login`);
    await p.getByLabel('E-mail').fill(email);
    await p.getByLabel('Password').fill('correct-horse-battery');
    await p.getByRole('button', { name: 'Log in' }).click();
    await p.getByRole('heading', { name: 'Roles' }).waitFor();

    // The delisting notification links to the machine's Benchmarks tab, which shows why.
    await p.getByRole('link', { name: /^Notifications/ }).click();
    await p.getByRole('heading', { name: 'Notifications', level: 1 }).waitFor();
    const note = p.locator('li.notification', { hasText: /delisted: FP16 tensor throughput/ });
    await note.getByRole('link', { name: 'Open' }).click();
    await p.waitForFunction((want) => location.hash === want, `#/machines/${id}/benchmarks`);
    const tabs = p.getByRole('navigation', { name: 'Machine' });
    assert.equal(await tabs.getByRole('link', { name: 'Benchmarks' }).getAttribute('aria-current'), 'page');
    assert.equal(await tabs.getByRole('link', { name: 'Overview' }).getAttribute('aria-current'), null);
    const tabGpu = p.getByRole('region', { name: new RegExp(id) }).getByRole('region', { name: /GPU 0 · L40S/ });
    await tabGpu.waitFor();
    assert.equal(await tabGpu.locator('.badge.danger').textContent(), 'Delisted');
    assert.match(await tabGpu.locator('.bench-reason').textContent(), /FP16 tensor throughput/);
    await tabGpu.locator('[data-metric="compute.fp16_tensor"] rect.bench-bar.fail').waitFor();
    await p.getByRole('region', { name: new RegExp(id) }).getByRole('button', { name: 'Re-run benchmarks' }).waitFor();
    // Not the Overview tab: no telemetry table.
    assert.equal(await p.locator('table.gpu-table').count(), 0);
    // The disk and network figures the run measured, as the API answers them.
    const bench = (await client.request('GET', `/v1/provider/machines/${id}/benchmarks`)).json;
    const hostRows = p.getByRole('table', { name: 'Disk and network figures' }).locator('tbody tr');
    assert.equal(await hostRows.count(), Object.keys(bench.machine.figures).length);
    const read = await p.locator('tr[data-metric="storage.seq_read"]').innerText();
    assert.match(read, /^Disk sequential read\s+[\d.]+ MB\/s$/);
    const readMbs = Number(read.match(/([\d.]+) MB\/s/)[1]);
    const want = bench.machine.figures['storage.seq_read'];
    assert.ok(Math.abs(readMbs - want) <= (want >= 100 ? 0.5 : 0.005), `${readMbs} vs ${want}`);
    await shot(p, 'notification-link-benchmarks-tab');

    await p.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Benchmarks' }).click();
    await p.getByRole('heading', { name: 'Benchmarks', level: 1 }).waitFor();
    const machine = p.getByRole('region', { name: new RegExp(id) });
    const gpu = machine.getByRole('region', { name: /GPU 0 · L40S/ });
    await gpu.waitFor();
    assert.equal(await gpu.locator('.badge.danger').textContent(), 'Delisted');
    const reason = await gpu.locator('.bench-reason').textContent();
    assert.match(reason, /FP16 tensor throughput/);
    assert.match(reason, /ratio 0\.70/);
    const rec = await gpu.locator('.bench-recommendation').textContent();
    assert.match(rec, /^Recommendation: \S/);
    // The bars: the FP16 tensor bar is drawn at about 70% of the reference, as failing.
    const bar = gpu.locator('[data-metric="compute.fp16_tensor"] rect.bench-bar');
    assert.equal(await bar.getAttribute('class'), 'bench-bar fail');
    const track = Number(await gpu.locator('[data-metric="compute.fp16_tensor"] rect.bench-track').getAttribute('width'));
    const refX = Number(await gpu.locator('line.bench-ref').getAttribute('x1'));
    const barX = Number(await bar.getAttribute('x'));
    const barW = Number(await bar.getAttribute('width'));
    assert.ok(track > 0 && Math.abs(barW / (refX - barX) - 0.7) < 0.02, `bar ${barW} of ${refX - barX}`);
    const row = gpu.getByRole('table', { name: /figures/ }).getByRole('row', { name: /FP16 tensor throughput/ });
    assert.match(await row.textContent(), /0\.70/);
    // The history chart (uPlot) has a point per scored run.
    await gpu.getByRole('img', { name: /performance score history, 1 run/ }).waitFor();
    const historyPoints = () => gpu.locator('.bench-history').evaluate((e) => e.uplot.data[1]);
    await gpu.locator('.bench-history canvas').waitFor();
    const first = await historyPoints();
    assert.equal(first.length, 1);
    assert.ok(first[0] > 0, `score ${first[0]}`);

    // The checks of the figures agree with the API: a row per challenge of this GPU, with its outcome.
    const checks = await until('the first run\'s checks decided', async () => {
      const r = await client.request('GET', `/v1/provider/machines/${id}/benchmarks`);
      const cs = r.json.runs.flatMap((x) => x.challenges).filter((c) => c.gpu_uuid === r.json.gpus[0].uuid);
      return cs.length >= 3 && cs.every((c) => !['issued', 'filled'].includes(c.status)) ? cs : null;
    }, 60000);
    await p.reload();
    const rows = gpu.getByRole('table', { name: 'GPU 0 checks' }).locator('tbody tr');
    await until('the checks table', async () => (await rows.count()) === checks.length, 10000);
    const shown = await rows.evaluateAll((rs) => rs.map((r) => `${r.dataset.kind}:${r.dataset.status}`));
    assert.deepEqual(shown.sort(), checks.map((c) => `${c.kind}:${c.status}`).sort());
    const telemetryRow = rows.filter({ hasText: 'Telemetry check' });
    assert.match(await telemetryRow.textContent(), /Passed.*drew up to \d+ W where \d+ W are needed/);
    assert.match(await rows.filter({ hasText: 'GEMM challenge' }).textContent(), /Passed.*root in [\d.]+ s, \d+ rows opened and checked/);
    await shot(p, 'delisted');

    const button = machine.getByRole('button', { name: 'Re-run benchmarks' });
    const status = machine.getByRole('status');
    await button.click();
    await until('the re-run acknowledgement', async () => /Re-run requested/.test(await status.textContent()), 10000);
    await shot(p, 'rerun-requested');

    await button.click();
    await until('the second answer', async () => /already in progress|rate-limited/.test(await status.textContent()), 10000);
    assert.doesNotMatch(await status.textContent(), /Re-run requested/);
    await shot(p, 'rerun-refused');

    // Once the requested run is done, the history has two points and a third press meets the rate limit.
    await until('the requested run to complete', async () => {
      const r = await client.request('GET', `/v1/provider/machines/${id}/benchmarks`);
      return r.json.runs.filter((x) => x.status === 'completed').length >= 2;
    }, 90000);
    await p.reload();
    await gpu.getByRole('img', { name: /performance score history, 2 run/ }).waitFor();
    await gpu.locator('.bench-history canvas').waitFor();
    assert.equal((await historyPoints()).length, 2);
    await button.click();
    await until('the rate-limit answer', async () => /rate-limited/.test(await status.textContent()), 10000);
    await shot(p, 'rerun-rate-limited');
    assert.deepEqual(errors, []);
  } finally {
    if (browser) await browser.close();
    if (agent) await agent.stop();
    await server.stop();
  }
});
