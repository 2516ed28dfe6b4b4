// Browser: a machine's Performance tab (issue 17). On the server's settable clock the test posts the
// agent's heartbeats for eight days of a ten-minute daily window, with two days down, then opens the
// tab: the score, its three parts, the recovery time and the events agree with the API
// (GET /v1/provider/machines/ID/reliability), and the 30-day chart has a point for every day of
// history, each at the API's score. Screenshots of the tab.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, Client } from '../lib/server.mjs';
import { approvedProvider } from '../lib/provider.mjs';
import { launchBrowser, screenshotter } from '../lib/browser.mjs';

const MIN = 60_000;
const DAY = 86_400_000;
const START = Date.parse('2026-06-01T00:00:00Z');
const DAYS = 8;
const DOWN = [3, 4];  // days after START without heartbeats

test(`${BACKEND}: Performance tab: score, parts, chart points and events agree with the API`, { timeout: 300_000 }, async () => {
  const server = await new TestServer(['--test-clock', new Date(START).toISOString(), '--enable-test-clock', 'true',
    '--session-ttl-hours', '8760']).start();
  let browser;
  const errors = [];
  const shot = screenshotter(`performance-${BACKEND}`);
  try {
    server.createUser('root@example.com', 'operator-password-1', 'admin');
    const admin = new Client(server.url);
    await admin.login('root@example.com', 'operator-password-1');
    const email = 'perf-ui@example.com';
    const { client, key } = await approvedProvider(server, email);
    const agent = new Client(server.url);
    agent.token = key;
    const must = async (what, p) => {
      const r = await p;
      assert.equal(r.status, 200, `${what}: ${r.body}`);
      return r.json;
    };
    const reg = await must('register', agent.request('POST', '/v1/agent/register', { body: {
      protocol_version: 1, agent_version: '0.1.0', machine_fingerprint: `fingerprint-perf-${process.pid}`, simulated: true,
      host: { hostname: 'perf-rig', cpu_model: 'EPYC', cpu_cores: 32, ram_mib: 262144, disk_free_mib: 900000,
        os: 'Debian GNU/Linux 12 (bookworm)', kernel: '6.1.0' },
      gpus: [{ index: 0, uuid: 'GPU-perf-0', name: 'NVIDIA L40S', model: 'L40S', memory_mib: 46068,
        driver_version: '550.54.15', cuda_version: '12.4', pci_bus_id: '00000000:17:00.0' }],
    } }));
    const id = reg.machine_id;
    await must('schedule', client.request('PUT', `/v1/provider/machines/${id}/schedule`, { body: {
      timezone: 'Europe/Lisbon', always: false,
      windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '13:00', end: '13:10' }] } }));
    let seq = 0;
    for (let d = 0; d < DAYS; d++) {
      if (DOWN.includes(d)) continue;
      // 13:00-13:10 in Lisbon is 12:00-12:10 UTC in summer.
      for (let m = 0; m < 10; m++) {
        const t = START + d * DAY + 12 * 3600_000 + m * MIN + 30_000;
        await must('clock', admin.request('POST', '/v1/test/clock', { body: { now: new Date(t).toISOString() } }));
        await must('heartbeat', agent.request('POST', '/v1/agent/heartbeat', { body: { protocol_version: 1,
          machine_id: id, seq: ++seq, sent_at: new Date(t).toISOString(), telemetry: [], jobs: [] } }));
      }
    }
    await must('clock', admin.request('POST', '/v1/test/clock', { body: { now: new Date(START + DAYS * DAY + 3600_000).toISOString() } }));
    const api = await must('reliability', client.request('GET', `/v1/provider/machines/${id}/reliability`));
    assert.equal(api.is_new, false);
    assert.ok(api.score < 95 && api.events.length === 2 && api.recovery.days > 0, JSON.stringify(api));

    browser = await launchBrowser(shot);
    const p = await browser.newPage();
    p.on('pageerror', (e) => errors.push(e.message));
    p.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) errors.push(m.text()); });
    await p.goto(`${server.url}/#/login`);
    await p.getByLabel('E-mail').fill(email);
    await p.getByLabel('Password').fill('correct-horse-battery');
    await p.getByRole('button', { name: 'Log in' }).click();
    await p.getByRole('heading', { name: 'Roles' }).waitFor();

    // From the machine's page, the Performance tab.
    await p.goto(`${server.url}/#/machines/${id}`);
    const tabs = p.getByRole('navigation', { name: 'Machine' });
    await tabs.getByRole('link', { name: 'Performance' }).click();
    await p.waitForFunction((want) => location.hash === want, `#/machines/${id}/performance`);
    const tab = p.getByRole('region', { name: 'Reliability' });
    await tab.waitFor();  // the tab drawn (the address changes first)
    assert.equal(await tabs.getByRole('link', { name: 'Performance' }).getAttribute('aria-current'), 'page');

    // The score and the parts, as the API says.
    assert.equal(Number(await tab.locator('#performance-score').getAttribute('data-score')), api.score);
    assert.match(await tab.locator('#performance-score').textContent(), new RegExp(`^${api.score.toFixed(1)}`));
    for (const part of ['uptime', 'job_completion', 'stability']) {
      const v = tab.locator(`.rel-part[data-part="${part}"] .rel-part-value`);
      assert.equal(Number(await v.getAttribute('data-value')), api.parts[part].value, part);
      assert.equal(await v.textContent(), `${(api.parts[part].value * 100).toFixed(1)}%`, part);
    }
    assert.match(await tab.locator('.rel-part[data-part="uptime"]').textContent(),
      new RegExp(`${api.parts.uptime.present_minutes} of ${api.parts.uptime.counted_minutes} scheduled minutes`));
    assert.equal(Number(await tab.locator('#performance-recovery').getAttribute('data-days')), api.recovery.days);
    assert.match(await tab.locator('#performance-recovery').textContent(), new RegExp(`recovers in ${api.recovery.days} days`));

    // The chart: a point per day of history, each at its score.
    const points = tab.locator('svg.rel-chart circle.rel-point');
    assert.equal(api.history.length, DAYS + 1, 'the days since registration, today included');
    assert.equal(await points.count(), api.history.length);
    for (let i = 0; i < api.history.length; i++) {
      assert.equal(await points.nth(i).getAttribute('data-day'), api.history[i].day);
      assert.equal(Number(await points.nth(i).getAttribute('data-score')), api.history[i].score);
    }
    // Lower points are drawn lower: the day after the outage sits below the day before it.
    const cy = async (i) => Number(await points.nth(i).getAttribute('cy'));
    assert.ok(await cy(4) > await cy(2), 'the outage drew the line down');
    assert.equal(await tab.locator('svg.rel-chart path.rel-line').count(), 1);

    // The events in plain words, with what to do.
    const rows = tab.locator('#performance-events tbody tr');
    assert.equal(await rows.count(), api.events.length);
    for (let i = 0; i < api.events.length; i++) {
      assert.equal(await rows.nth(i).locator('.rel-event-text').textContent(), api.events[i].text);
      assert.match(api.events[i].text, /^Offline 13:00–13:10 \(10 min\) during scheduled hours: uptime 0\.0% that day$/);
      assert.match(await rows.nth(i).textContent(), /Keep the machine and its agent running/);
    }
    await shot(p, 'performance-tab');
    assert.deepEqual(errors, []);
  } finally {
    if (browser) await browser.close();
    await server.stop();
  }
});
