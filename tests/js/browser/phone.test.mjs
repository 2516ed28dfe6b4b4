// Browser: the dashboard on a phone (issue 14, item 18). At 375 × 812 every page is visited
// as the people who use it would: signed out (home, log in, sign up, marketplace), a new
// applicant (roles, the application form, its status page, notifications), a provider whose
// real agent runs a simulated L4, benchmarked, listed and priced (roles, notifications,
// machines, the machine page and its Benchmarks tab, benchmarks, pricing, earnings, API keys, the
// marketplace with its offer, the application) and a reviewer (the review queue and an
// application). On each, nothing is wider than the
// screen (wide tables scroll in their own box), the page itself does not clip sideways,
// every navigation link is on screen, and the navigation neither overlaps nor covers the
// page's heading. launchBrowser keeps a screenshot of every page visited.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, BENCH_SERVER_ARGS, Client, TestServer, until } from '../lib/server.mjs';
import { approvedProvider } from '../lib/provider.mjs';
import { startAgent } from '../lib/agent.mjs';
import { launchBrowser, screenshotter } from '../lib/browser.mjs';

const PHONE = { width: 375, height: 812 };

// What a person at 375 px would trip over on the page shown now; answers a list of problems.
function layoutProblems() {
  const problems = [];
  const px = (n) => Math.round(n);
  const describe = (e) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}${e.className && typeof e.className === 'string'
    ? `.${e.className.trim().split(/\s+/).join('.')}` : ''} "${(e.textContent || '').trim().slice(0, 40)}"`;
  const doc = document.documentElement;
  if (doc.scrollWidth > innerWidth) problems.push(`the page is ${doc.scrollWidth} px wide`);
  // Hiding the overflow would pass the check above and cut the page off instead.
  for (const e of [doc, document.body, document.querySelector('main')]) {
    const o = getComputedStyle(e).overflowX;
    if (o !== 'visible') problems.push(`${describe(e)} has overflow-x: ${o}`);
  }
  // Nothing sticks out of the screen, except inside a box that scrolls sideways on its own. (Wholly left
  // of it is the "Skip to content" link's way of hiding until focused.)
  const scrolls = (e) => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
  for (const e of document.querySelectorAll('body *')) {
    const b = e.getBoundingClientRect();
    if (b.width === 0 || b.right <= 0 || (b.right <= innerWidth + 0.5 && b.left >= -0.5)) continue;
    let a = e.parentElement;
    while (a && a !== document.body && !scrolls(a)) a = a.parentElement;
    if (a === document.body || !a) problems.push(`${describe(e)} spans ${px(b.left)}–${px(b.right)} px`);
  }
  const nav = document.querySelector('header nav');
  for (const a of nav.querySelectorAll('a')) {
    if (a.closest('[hidden]')) continue;
    const b = a.getBoundingClientRect();
    if (b.width === 0 || b.left < 0 || b.right > innerWidth) problems.push(`nav link ${describe(a)} is off screen`);
  }
  const h1 = document.querySelector('main h1');
  if (!h1) return [...problems, 'no heading'];
  const n = nav.getBoundingClientRect();
  const h = h1.getBoundingClientRect();
  if (n.left < h.right && h.left < n.right && n.top < h.bottom && h.top < n.bottom) {
    problems.push(`the navigation (${px(n.top)}–${px(n.bottom)} px) overlaps the heading (${px(h.top)}–${px(h.bottom)} px)`);
  }
  // Covered: what is drawn at the heading's middle is the heading, not something on top of it.
  h1.scrollIntoView({ block: 'center' });
  const c = h1.getBoundingClientRect();
  const top = document.elementFromPoint(c.left + Math.min(c.width / 2, 40), c.top + c.height / 2);
  if (!top || !(top === h1 || h1.contains(top))) problems.push(`the heading is covered by ${top ? describe(top) : 'nothing'}`);
  scrollTo(0, 0);
  return problems;
}

test(`${BACKEND}: every page is usable on a 375 px phone`, async () => {
  const server = await new TestServer(BENCH_SERVER_ARGS).start();
  const shot = screenshotter(`phone-${BACKEND}`);
  let agent;
  let browser;
  const errors = [];
  try {
    // A provider whose GPU is benchmarked, listed and priced, so the marketplace has its offer. (One GPU:
    // the machine checks want 2 CPU cores per GPU, and CI hosts have 2.)
    const provider = await approvedProvider(server, 'phone-provider@example.com');
    agent = startAgent(server.url, provider.key, { simulate: 'L4:1', args: ['--bench-storage-mib', '32', '--bench-net-mib', '8'] });
    const id = await until('the machine to register', async () => {
      const r = await provider.client.request('GET', '/v1/provider/machines');
      return r.status === 200 && r.json.items.length === 1 ? r.json.items[0].id : null;
    });
    const bench = await until('the first completed benchmark run', async () => {
      const r = await provider.client.request('GET', `/v1/provider/machines/${id}/benchmarks`);
      return r.status === 200 && r.json.gpus.length === 1 && r.json.gpus[0].benchmarked ? r.json : null;
    }, 90000).catch((e) => { throw new Error(`${e.message}\nagent: ${agent.logs.join('').slice(-3000)}`); });
    assert.equal(bench.gpus[0].listed, true, JSON.stringify(bench.gpus[0]));
    const price = await provider.client.request('PUT', '/v1/provider/prices/L4', { body: { usdc_per_gpu_hour: '0.45' } });
    assert.equal(price.status, 200, price.body);

    // An applicant waiting in the review queue, and a reviewer.
    const applicant = new Client(server.url);
    await applicant.signupAndLogin('phone-applicant@example.com', 'correct-horse-battery', 'Ada Lovelace-Byron');
    server.createUser('phone-reviewer@example.com', 'operator-password-1', 'reviewer', 'Rita Reviewer');

    browser = await launchBrowser(shot);
    const p = await browser.newPage();
    await p.setViewportSize(PHONE);
    p.on('pageerror', (e) => errors.push(e.message));
    const checked = [];
    // Waits for the page's heading (and `ready`, what shows it has loaded), then checks its layout.
    const check = async (heading, ready) => {
      await p.getByRole('heading', { level: 1, name: heading }).waitFor();
      if (ready) await ready.first().waitFor();
      const where = await p.evaluate(() => location.hash || '#/');
      assert.deepEqual(await p.evaluate(layoutProblems), [], `${where} at 375 px`);
      checked.push(where);
    };
    const open = async (hash, heading, ready) => {
      await p.evaluate((h) => { location.hash = h; }, hash);
      await check(heading, ready);
    };
    const login = async (email, password) => {
      await open('#/login', 'Log in');
      await p.getByLabel('E-mail').fill(email);
      await p.getByLabel('Password').fill(password);
      await p.getByRole('button', { name: 'Log in' }).click();
      await check('Roles', p.getByRole('list', { name: 'Your roles' }));
    };
    const logout = async () => {
      await p.getByRole('button', { name: 'Log out' }).click();
      await p.getByRole('heading', { name: 'Log in' }).waitFor();
    };

    await p.goto(`${server.url}/`);
    await check(/Rent NVIDIA GPUs/);
    await open('#/signup', 'Create your account');
    await open('#/market', 'Marketplace', p.locator('li.offer'));

    // The applicant: the application form, then its status page once submitted.
    await login('phone-applicant@example.com', 'correct-horse-battery');
    await p.getByRole('link', { name: 'Apply to Provide GPUs' }).click();
    await check('Apply to provide GPUs', p.getByLabel('GPU model'));
    await p.getByRole('button', { name: 'Submit application' }).click();
    await p.locator('.field-error', { hasText: /\S/ }).first().waitFor();
    assert.deepEqual(await p.evaluate(layoutProblems), [], 'the application form with its errors at 375 px');
    await shot(p, 'apply-errors');
    const created = await applicant.request('POST', '/v1/applications', { body: {
      full_name: 'Ada Lovelace-Byron', email: 'phone-applicant@example.com', company: 'Analytical Engines Ltd',
      gpus: [{ model: 'RTX-4090', count: 2, system_ram_gb: 128, download_gbps: 1, upload_gbps: 0.5,
        availability: { timezone: 'Europe/London', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '18:00', end: '08:00' }] },
        location: { city: 'London', country: 'GB', region: 'eu-west' } }],
      ups: false, commitment_months: 6, maintenance_notes: 'Sundays 02:00–04:00 UTC, kernel and driver updates.' } });
    assert.equal(created.status, 201, created.body);
    assert.equal((await applicant.request('POST', `/v1/applications/${created.json.id}/submit`)).status, 200);
    await open('#/applications', 'Your provider application', p.getByRole('table', { name: 'History' }));
    await open('#/notifications', 'Notifications');
    await logout();

    // The reviewer: the queue with that application, and the application with the decision form.
    await login('phone-reviewer@example.com', 'operator-password-1');
    await p.getByRole('link', { name: 'Open the review queue' }).click();
    await check('Review queue', p.getByRole('link', { name: 'Ada Lovelace-Byron' }));
    await p.getByRole('link', { name: 'Ada Lovelace-Byron' }).click();
    await check('Application from Ada Lovelace-Byron', p.getByRole('button', { name: 'Record decision' }));
    await logout();

    // The provider: every provider page, the machine page with each of its tabs.
    await login('phone-provider@example.com', 'correct-horse-battery');
    const nav = p.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: /^Notifications/ }).click();
    await check('Notifications', p.locator('li.notification'));
    await nav.getByRole('link', { name: 'Machines' }).click();
    await check('Machines', p.locator('section.machine svg.gpu-chart circle'));
    await p.locator('section.machine h2 a').click();
    await check(/^Machine /, p.locator('section.machine svg.gpu-chart circle'));
    await p.getByRole('navigation', { name: 'Machine' }).getByRole('link', { name: 'Benchmarks' }).click();
    await check(/^Machine /, p.locator('.bench-gpu .bench-bars'));
    assert.equal(await p.evaluate(() => location.hash), `#/machines/${id}/benchmarks`);
    await nav.getByRole('link', { name: 'Benchmarks' }).click();
    await check('Benchmarks', p.locator('.bench-gpu .bench-bars'));
    await nav.getByRole('link', { name: 'Pricing' }).click();
    await check('Pricing', p.getByRole('table', { name: /Weekly availability/ }));
    await nav.getByRole('link', { name: 'Earnings' }).click();
    await check('Earnings', p.locator('#earnings-chart canvas'));
    await nav.getByRole('link', { name: 'API keys' }).click();
    await check('API keys', p.getByRole('table', { name: 'Your API keys' }));
    await nav.getByRole('link', { name: 'Application' }).click();
    await check('Your provider application', p.getByRole('table', { name: 'History' }));
    await nav.getByRole('link', { name: 'Marketplace' }).click();
    await check('Marketplace', p.locator(`li.offer[data-machine="${id}"]`));
    await logout();
    await check('Log in');
    assert.deepEqual(errors, []);

    await browser.close();
    assert.ok(checked.length >= 20, checked.join(' '));
    for (const page of ['home', 'signup', 'market', 'roles', 'apply', 'applications', 'notifications', 'review',
      'machines', 'benchmarks', 'pricing', 'earnings', 'keys', 'login']) {
      assert.ok(shot.saved.some((s) => s.startsWith(`visit-${page}`)), `no screenshot of ${page}: ${shot.saved}`);
    }
  } finally {
    if (browser) await browser.close();
    if (agent) await agent.stop();
    await server.stop();
  }
});
