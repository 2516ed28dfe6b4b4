// Browser: pricing and the marketplace (issue 6). An approved provider runs the real agent on
// a simulated GPU (one: the CI host has 2 cores, 2 per GPU), benchmarked and listed; a rate set in the Pricing tab makes the
// offer appear on the public Marketplace page; a schedule saved there that excludes now
// (a window on another weekday, UTC) makes it disappear.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BIN, BACKEND, BENCH_SERVER_ARGS, TestServer, until } from '../lib/server.mjs';
import { agentEnv } from '../lib/agent.mjs';
import { approvedProvider } from '../lib/provider.mjs';
import { launchBrowser, screenshotter } from '../lib/browser.mjs';

test(`${BACKEND}: price → offer on the marketplace → a schedule excluding now hides it`, async () => {
  const server = await new TestServer(BENCH_SERVER_ARGS).start();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'gpunex-market-agent-'));
  let agent;
  let browser;
  const logs = [];
  const errors = [];
  try {
    const { client, key } = await approvedProvider(server, 'market@example.com');
    agent = spawn(path.join(BIN, 'gpunex-agent'), ['run', '--server', server.url, '--data-dir', dataDir,
      '--heartbeat-interval', '1', '--simulate', 'L40S:1', '--bench-storage-mib', '32', '--bench-net-mib', '8'],
    { env: agentEnv({ GPUNEX_API_KEY: key }), stdio: ['ignore', 'pipe', 'pipe'] });
    agent.stdout.on('data', (d) => logs.push(d.toString()));
    agent.stderr.on('data', (d) => logs.push(d.toString()));
    // As in api/benchmarks.test.mjs: the machine registers (GET /v1/provider/machines), then its
    // benchmark run completes and GET .../benchmarks shows the GPU listed.
    const machine = await until('the machine to register', async () => {
      const r = await client.request('GET', '/v1/provider/machines');
      return r.status === 200 && r.json.items.length === 1 ? r.json.items[0] : null;
    }).catch((e) => { throw new Error(`${e.message}\nagent: ${logs.join('').slice(-3000)}`); });
    if (process.env.GPUNEX_DEBUG) console.log(JSON.stringify(machine));
    await until('the GPU to be benchmarked and listed', async () => {
      const r = await client.request('GET', `/v1/provider/machines/${machine.id}/benchmarks`);
      assert.equal(r.status, 200, r.body);
      return r.json.runs.some((x) => x.status === 'completed') && r.json.gpus.length === 1
        && r.json.gpus.every((g) => g.listed) ? r.json : null;
    }, 90000).catch((e) => { throw new Error(`${e.message}\nagent: ${logs.join('').slice(-3000)}`); });

    // Nothing is offered before a price is set.
    const before = await client.request('GET', '/v1/marketplace/offers?model=L40S');
    assert.equal(before.status, 200, `${before.body}\n${server.logs.join("").slice(-2000)}`);
    assert.equal(before.json.items.length, 0, before.body);

    const shot = screenshotter(`market-${BACKEND}`);
    browser = await launchBrowser(shot);
    const p = await browser.newPage();
    p.on('pageerror', (e) => errors.push(e.message));
    await p.goto(`${server.url}/#/login`);
    await p.getByLabel('E-mail').fill('market@example.com');
    await p.getByLabel('Password').fill('correct-horse-battery');
    await p.getByRole('button', { name: 'Log in' }).click();
    await p.getByRole('heading', { name: 'Roles' }).waitFor();

    await p.getByRole('link', { name: 'Pricing' }).click();
    await p.getByRole('heading', { name: 'Pricing', exact: true }).waitFor();
    const priceForm = p.getByRole('form', { name: 'Price for L40S' });
    await priceForm.getByText(/Recommended/).waitFor();
    // A bad rate shows the server's message next to the field.
    await priceForm.getByLabel('L40S: USDC per GPU-hour').fill('0');
    await priceForm.getByRole('button', { name: 'Save L40S rate' }).click();
    await priceForm.getByText('Price per GPU-hour must be above 0').waitFor();
    // A rate past the cent is shown as it is, never rounded (0.955 is not 0.96, and 0.004 is not free).
    await priceForm.getByLabel('L40S: USDC per GPU-hour').fill('0.955');
    await priceForm.getByRole('button', { name: 'Save L40S rate' }).click();
    await priceForm.getByText(/Saved: 0\.955 USDC/).waitFor();
    // What the provider keeps of each GPU-hour, as the API says: 80% of it at the default 20% commission.
    const [rate] = (await client.request('GET', '/v1/provider/prices')).json.items;
    assert.equal(rate.provider_receives_per_gpu_hour, '0.764000');
    assert.equal(rate.commission_pct, 20);
    assert.match(await priceForm.locator('.price-status').textContent(), /; you receive 0\.764000 USDC of it \(commission 20%\)$/);
    await shot(p, 'pricing');

    await p.getByRole('link', { name: 'Marketplace' }).click();
    await p.getByRole('heading', { name: 'Marketplace' }).waitFor();
    const offer = p.locator(`li.offer[data-machine="${machine.id}"]`);
    await offer.waitFor();
    assert.match(await offer.textContent(), /1 × L40S/);
    assert.match(await offer.textContent(), /0\.955 USDC\/GPU-h/);
    assert.match(await offer.textContent(), /prior/);
    assert.match(await offer.textContent(), /Enterprise/);
    assert.match(await offer.locator('.badge.sim').textContent(), /simulated/);  // demo mode says so (issue 21)
    await offer.getByText('Why this rank').click();
    await offer.getByText(/Reliability: factor/).waitFor();
    // Filters: a max price below the rate hides it.
    await p.getByLabel('Max price (USDC/GPU-h)').fill('0.5');
    await p.getByRole('button', { name: 'Search' }).click();
    await p.getByText('No offers match.').waitFor();
    await p.getByLabel('Max price (USDC/GPU-h)').fill('');
    await p.getByLabel('Model').fill('L40S');
    await p.getByLabel('Sort by').selectOption('price');
    await offer.waitFor();
    await shot(p, 'marketplace');

    // A weekly window on another weekday (UTC) excludes now.
    await p.getByRole('link', { name: 'Pricing' }).click();
    const sched = p.getByRole('form', { name: new RegExp(`Schedule for`) }).first();
    await sched.waitFor();
    await sched.getByLabel('Time zone (IANA, e.g. Europe/Berlin)').fill('UTC');
    await sched.getByLabel('Available 24/7').uncheck();
    await sched.getByRole('button', { name: 'Add window' }).click();
    const days = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];
    const labels = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
    const today = (new Date().getUTCDay() + 6) % 7;  // 0 = Monday
    const other = (today + 3) % 7;
    for (let d = 0; d < 7; d++) {
      const box = sched.getByLabel(labels[d], { exact: true });
      if (d === other) await box.check(); else await box.uncheck();
    }
    await sched.getByLabel('From').fill('10:00');
    await sched.getByLabel('Until').fill('11:00');
    assert.equal(await sched.locator('td.on').count(), 1, 'one hour in the grid preview');
    // An empty window is refused next to its field.
    await sched.getByLabel('Until').fill('10:00');
    await sched.getByRole('button', { name: /Save schedule/ }).click();
    await sched.locator('[aria-invalid="true"]').first().waitFor();
    await sched.getByLabel('Until').fill('11:00');
    await sched.getByRole('button', { name: /Save schedule/ }).click();
    await sched.getByText(/Schedule saved\. Not available now/).waitFor();
    await shot(p, 'schedule');
    const saved = await client.request('GET', `/v1/provider/machines/${machine.id}/schedule`);
    assert.equal(saved.json.always, false, saved.body);
    assert.deepEqual(saved.json.windows, [{ days: [days[other]], start: '10:00', end: '11:00' }]);

    await p.getByRole('link', { name: 'Marketplace' }).click();
    await p.getByRole('heading', { name: 'Marketplace' }).waitFor();
    await p.getByText('No offers match.').waitFor();
    assert.equal(await p.locator('li.offer').count(), 0);
    await shot(p, 'marketplace-after-schedule');
    assert.deepEqual(errors, []);
  } finally {
    if (browser) await browser.close();
    if (agent && agent.exitCode === null) { agent.kill('SIGTERM'); await new Promise((r) => agent.on('exit', r)); }
    await server.stop();
  }
});
