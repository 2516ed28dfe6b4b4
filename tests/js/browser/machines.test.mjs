// Browser: the Machines page follows a real simulated agent. An approved provider
// starts `gpunex-agent run --simulate L40S:2`; the page shows the machine Online
// within 20 s with the Simulated badge, both GPUs with their figures and a 24-hour
// chart each that draws the heartbeats' telemetry, from one request per refresh
// (not one more per machine); the machine page's charts draw them too, and its
// Benchmarks tab has its own address; after the agent stops, the page (which polls)
// shows Offline once the configured missed heartbeats have passed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { approvedProvider } from '../lib/provider.mjs';
import { startAgent } from '../lib/agent.mjs';
import { launchBrowser, screenshotter } from '../lib/browser.mjs';

// What a GPU chart draws: its points (a dot starts each run of joined points) and the line's length.
async function chartsDrawn(page) {
  return page.$$eval('svg.gpu-chart', (svgs) => svgs.map((svg) => ({
    dots: svg.querySelectorAll('circle').length,
    lines: [...svg.querySelectorAll('path[data-series]')].map((path) => path.getAttribute('data-series')),
    empty: /No telemetry/.test(svg.closest('figure').textContent),
  })));
}

test(`${BACKEND}: Machines page shows a simulated agent Online, then Offline after it stops`, async () => {
  const server = await new TestServer(['--heartbeat-interval', '1', '--offline-after-missed', '3']).start();
  const shot = screenshotter(`machines-${BACKEND}`);
  const browser = await launchBrowser(shot);
  const errors = [];
  let agent;
  try {
    const email = 'mona@example.com';
    const { key } = await approvedProvider(server, email);
    const p = await browser.newPage();
    p.on('pageerror', (e) => errors.push(e.message));
    const apiCalls = [];
    p.on('request', (r) => {
      const u = new URL(r.url());
      if (u.pathname.startsWith('/v1/')) apiCalls.push(`${r.method()} ${u.pathname}`);
    });
    await p.goto(`${server.url}/#/login`);
    await p.getByLabel('E-mail').fill(email);
    await p.getByLabel('Password').fill('correct-horse-battery');
    await p.getByRole('button', { name: 'Log in' }).click();
    await p.getByRole('heading', { name: 'Roles' }).waitFor();

    await p.getByRole('link', { name: 'Machines' }).click();
    await p.getByRole('heading', { name: 'Machines', level: 1 }).waitFor();
    await p.getByRole('heading', { name: 'No machines yet' }).waitFor();
    // The installer needs bash: the command shown pipes to bash, not sh.
    assert.equal(await p.locator('.callout pre code').textContent(),
      `curl -fsSL ${server.url}/agent/install.sh | sudo GPUNEX_API_KEY=gpx_... bash`);
    await shot(p, 'no-machines');

    const t0 = Date.now();
    agent = startAgent(server.url, key, { simulate: 'L40S:2' });
    const card = p.locator('section.machine');
    // The page polls every 5 s; no reload needed.
    await card.locator('.machine-status', { hasText: 'Online' }).waitFor({ timeout: 20000 });
    assert.ok(Date.now() - t0 < 20000, `Online after ${Date.now() - t0} ms`);
    await card.locator('.badge.sim', { hasText: 'Simulated' }).waitFor();
    const table = p.getByRole('table', { name: /GPUs of .* \(2\)/ });
    await table.waitFor();
    const rows = table.locator('tbody tr');
    assert.equal(await rows.count(), 2);
    for (let i = 0; i < 2; i += 1) {
      const text = await rows.nth(i).innerText();
      assert.match(text, /L40S/);
      assert.match(text, /GiB/);
    }
    // Live figures arrive with the first heartbeats.
    await p.waitForFunction(() => [...document.querySelectorAll('td[data-metric="temperature"]')]
      .every((td) => /°C/.test(td.textContent)), null, { timeout: 15000 });
    assert.match(await p.locator('.last-seen').first().innerText(), /ago/);
    assert.equal(await p.getByRole('img', { name: /temperature and utilisation over the last 24 hours/ }).count(), 2);
    // The charts draw the telemetry the heartbeats brought, not "No telemetry".
    await p.waitForFunction(() => [...document.querySelectorAll('svg.gpu-chart')]
      .every((svg) => svg.querySelectorAll('circle').length > 0), null, { timeout: 15000 });
    for (const c of await chartsDrawn(p)) {
      assert.deepEqual(c.lines, ['temperature_c_avg', 'util_gpu_pct_avg'], JSON.stringify(c));
      assert.ok(c.dots >= 2 && !c.empty, JSON.stringify(c));
    }
    // One request per refresh: the list answers what the cards show (no request per machine).
    // Counted from one refresh's redraw to the next, so no request of an earlier refresh is still under way.
    const nextRefresh = async () => {
      const before = await p.locator('#machines-summary').textContent();
      await p.waitForFunction((t) => document.getElementById('machines-summary')?.textContent !== t, before,
        { timeout: 15000 });
    };
    await nextRefresh();
    apiCalls.length = 0;
    await nextRefresh();
    assert.deepEqual(apiCalls, ['GET /v1/provider/machines']);
    await shot(p, 'online');

    // The detail page: the same machine with events.
    await card.getByRole('heading', { level: 2 }).getByRole('link').click();
    await p.getByRole('link', { name: '← All machines' }).waitFor();
    // The first render already holds the card, not "[object HTMLElement]" until the poll redraws it.
    assert.equal(await p.locator('section.machine').count(), 1, await p.locator('main').innerText());
    await p.locator('.machine-status', { hasText: 'Online' }).waitFor();
    await p.getByRole('table', { name: 'Machine events, newest first' }).waitFor();
    // Its per-minute charts draw the heartbeats too.
    for (const c of await chartsDrawn(p)) assert.ok(c.dots >= 2 && c.lines.length === 2 && !c.empty, JSON.stringify(c));
    const tabs = p.getByRole('navigation', { name: 'Machine' });
    assert.equal(await tabs.getByRole('link', { name: 'Overview' }).getAttribute('aria-current'), 'page');
    await shot(p, 'machine-detail');
    // The Benchmarks tab is an address of its own (#/machines/ID/benchmarks), and back.
    const machineId = await p.locator('section.machine').getAttribute('data-machine-id');
    await tabs.getByRole('link', { name: 'Benchmarks' }).click();
    await p.getByRole('button', { name: 'Re-run benchmarks' }).waitFor();
    assert.equal(await p.evaluate(() => location.hash), `#/machines/${machineId}/benchmarks`);
    assert.equal(await tabs.getByRole('link', { name: 'Benchmarks' }).getAttribute('aria-current'), 'page');
    assert.equal(await p.locator('section.machine').count(), 0);
    await tabs.getByRole('link', { name: 'Overview' }).click();
    await p.locator('section.machine .machine-status', { hasText: 'Online' }).waitFor();
    await p.getByRole('link', { name: '← All machines' }).click();
    await p.getByRole('heading', { name: 'Machines', level: 1 }).waitFor();
    assert.equal(await p.locator('section.machine').count(), 1, await p.locator('main').innerText());

    // Stop the agent: Offline after 3 missed 1 s heartbeats (plus the page's poll).
    assert.equal(await agent.stop(), 0, agent.logs.join(''));
    const stopped = Date.now();
    await p.locator('section.machine .machine-status', { hasText: 'Offline' }).waitFor({ timeout: 20000 });
    const took = Date.now() - stopped;
    assert.ok(took >= 2000, `Offline too early: ${took} ms after the agent stopped`);
    // A reload shows the same.
    await p.reload();
    await p.locator('section.machine .machine-status', { hasText: 'Offline' }).waitFor();
    await p.locator('section.machine .badge.sim').waitFor();
    // Not offered while offline: the card says so and why, as the API does.
    const apiMachine = (await (await fetch(`${server.url}/v1/provider/machines/${machineId}`,
      { headers: { Authorization: `Bearer ${key}` } })).json());
    assert.deepEqual([apiMachine.offered, apiMachine.not_offered_reason], [false, 'offline: its agent is not heard from']);
    assert.equal(await p.locator('section.machine dd.offered').textContent(),
      'Not offered: offline: its agent is not heard from');
    await shot(p, 'offline');

    // An agent that says it cannot run rentals (its rentals poll's `blocked`, here sent for it): the
    // card says the machine is not offered and why, on the list and on the machine's page alike.
    const why = 'no container engine answers (DOCKER_HOST=unix:///var/run/docker.sock): Connection refused';
    const said = await fetch(`${server.url}/v1/agent/rentals?machine_id=${machineId}&wait_s=0&blocked=${encodeURIComponent(why)}`,
      { headers: { Authorization: `Bearer ${key}` } });
    assert.equal(said.status, 200, await said.text());
    await p.reload();
    const notice = p.locator('section.machine .rentals-blocked');
    await notice.waitFor();
    assert.equal(await notice.locator('.why').textContent(), why);
    assert.match(await notice.innerText(), /^Not offered to customers: the agent cannot run rentals on this machine/);
    await card.getByRole('heading', { level: 2 }).getByRole('link').click();
    await p.getByRole('link', { name: '← All machines' }).waitFor();
    assert.equal(await p.locator('section.machine .rentals-blocked .why').textContent(), why);
    await shot(p, 'rentals-blocked');

    // An offline machine can be removed, asking first: gone from the page and from the API's list.
    await p.getByRole('link', { name: '← All machines' }).click();
    await p.getByRole('button', { name: 'Remove machine' }).click();
    await p.getByText(/Remove it from your machines\?/).waitFor();
    await shot(p, 'remove-machine');
    await p.getByRole('button', { name: 'Yes, remove' }).click();
    await until('the card to go', async () => (await p.locator('section.machine').count()) === 0, 10000);
    const left = await (await fetch(`${server.url}/v1/provider/machines`, { headers: { Authorization: `Bearer ${key}` } })).json();
    assert.deepEqual(left.items, []);
    // Its page, opened by its address, says so.
    await p.goto(`${server.url}/#/machines/${machineId}`);
    assert.match(await p.locator('section.machine .callout.removed').innerText(), /^Removed .*: not in your machines, not offered\./);
    assert.equal(await p.getByRole('button', { name: 'Remove machine' }).count(), 0);
    assert.deepEqual(errors, []);
  } finally {
    if (agent) await agent.stop();
    await browser.close();
    await server.stop();
  }
});
