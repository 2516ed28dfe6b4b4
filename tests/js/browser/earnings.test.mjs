// Browser: a provider's Earnings tab (#18). On the server's test clock (it stands still between
// moves, so every figure is exact) a provider earns on three days: two rentals that ran and settled
// a day apart, and one still running today (not settled yet). The tab shows what the API answers:
// this period, today, the last 7 and 30 days; a chart with a bar for each day with earnings, each
// bar's value (hovered, in the chart's legend) the day's total; the per-day, per-GPU and per-model
// tables row for row; the pending payout (date, amount, method, minimum); and the CSV it downloads
// has the same rows. A date range applies to the chart and the tables; a backwards one is refused
// beside its field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { AgentVoice, RENTAL_SERVER_ARGS, agentlessMachine, customerWithCredit, moveTestClock }
  from '../lib/rentals.mjs';
import { launchBrowser, screenshotter } from '../lib/browser.mjs';

const RENT = { image: 'docker.io/library/busybox:1.36' };
// The test clock starts at the real time (whatever the date, faketime's included), to the second.
const START = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace('.000Z', 'Z');

// Each body row of a table as its cells' text.
const rowsOf = (locator) => locator.locator('tbody tr').evaluateAll((trs) =>
  trs.map((tr) => [...tr.querySelectorAll('th, td')].map((c) => c.textContent.trim())));

test(`${BACKEND}: the Earnings tab shows the API's figures, chart, tables, pending payout and CSV`, async () => {
  const server = await new TestServer([...RENTAL_SERVER_ARGS, '--test-clock', START, '--enable-test-clock', 'true'])
    .start();
  const shot = screenshotter(`earnings-${BACKEND}`);
  const browser = await launchBrowser(shot);
  const errors = [];
  let provider;
  try {
    provider = await agentlessMachine(server, 'earner@example.com', { gpus: 2, price: '36.00' });
    const voice = new AgentVoice(server, provider.key, provider.machine.id);
    const ann = await customerWithCredit(server, '1000.00');
    const clock = (seconds) => moveTestClock(server, seconds);
    const earnings = async (query = '') => {
      const r = await provider.client.request('GET', `/v1/provider/earnings${query}`);
      assert.equal(r.status, 200, r.body);
      return r.json;
    };
    // A rental on the machine once it is online again (a jump of the clock leaves it silent until
    // its next heartbeat, a second later), running from the clock's now.
    const rent = async (gpuCount) => {
      const r = await until('the machine to take a rental', async () => {
        const res = await ann.request('POST', '/v1/rentals', { body: { machine_id: provider.machine.id, gpu_count: gpuCount,
          ...RENT } });
        return res.status === 201 ? res : null;
      }, 20000);
      await voice.send([{ rental_id: r.json.id, type: 'running', at: await clock(0) }]);
      return r.json.id;
    };
    const end = async (id) => {
      const stop = await ann.request('POST', `/v1/rentals/${id}/stop`);
      assert.ok(stop.status < 300, stop.body);
      await voice.send([{ rental_id: id, type: 'ended', exit_code: 0, at: await clock(0) }]);
      await until('the rental to be settled', async () =>
        (await ann.request('GET', `/v1/rentals/${id}`)).json.state === 'ended', 10000);
    };

    // Day 1: both GPUs for 4 minutes; day 2: one GPU for 2 minutes; day 3: one GPU running 1 minute.
    const a = await rent(2);
    await clock(240);
    await end(a);
    await clock(86400);
    const b = await rent(1);
    await clock(120);
    await end(b);
    await clock(86400);
    await rent(1);
    await clock(60);


    const page = await browser.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${server.url}/#/login`);
    await page.getByLabel('E-mail').fill('earner@example.com');
    await page.getByLabel('Password').fill('correct-horse-battery');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Roles' }).waitFor();
    await page.getByRole('link', { name: 'Earnings' }).click();
    await page.getByRole('heading', { name: 'Earnings', exact: true }).waitFor();
    await page.locator('#earnings-chart canvas').waitFor();

    // No payout method yet: the pending payout says so. A monthly SEPA payout set with the form (a bad
    // IBAN is named beside its field first), so the pending payout has a method.
    assert.equal(await page.locator('#earnings-method').textContent(), 'Not chosen yet: set a payout method to be paid');
    assert.equal(await page.locator('#earnings-minimum-status').textContent(),
      'Nothing is paid until you choose a payout method.', 'above the minimum, but with nowhere to send it');
    assert.equal(await page.locator('#payout-method-current').textContent(), 'None yet: choose where your payouts go.');
    const form = page.locator('#payout-method-form');
    await form.getByLabel('Method', { exact: true }).selectOption('sepa');
    await form.getByLabel('Account holder').fill('Earner Ltd');
    await form.getByLabel('IBAN', { exact: true }).fill('DE89 3704 0044 0532 0130 01');
    await form.getByLabel('How often').selectOption('monthly');
    await form.getByLabel('Your password (to confirm)').fill('correct-horse-battery');
    await form.getByRole('button', { name: 'Save payout method' }).click();
    await page.locator('#f-iban-error', { hasText: 'not a valid IBAN' }).waitFor();
    assert.equal(await form.getByLabel('IBAN', { exact: true }).getAttribute('aria-invalid'), 'true');
    assert.equal((await provider.client.request('GET', '/v1/provider/payout-settings')).json.current, null);
    await form.getByLabel('IBAN', { exact: true }).fill('DE89 3704 0044 0532 0130 00');
    await form.getByRole('button', { name: 'Save payout method' }).click();
    await page.locator('#payout-method-current', { hasText: 'Monthly to' }).waitFor();
    const settings = (await provider.client.request('GET', '/v1/provider/payout-settings')).json;
    assert.equal(settings.current.method, 'sepa');
    assert.equal(settings.current.schedule, 'monthly');
    assert.equal(await page.locator('#payout-method-current').textContent(),
      `Monthly to ${settings.current.destination_text} (SEPA bank transfer)`);
    await page.locator('#earnings-chart canvas').waitFor();
    await shot(page, 'payout-method');

    const byDay = await earnings('?group_by=day');
    // Three days at least (four when a rental runs across midnight and is settled on both sides).
    assert.ok(byDay.groups.length >= 3, JSON.stringify(byDay.groups));
    assert.ok(Number(byDay.unsettled) > 0, 'the running rental is not settled yet');
    const byGpu = await earnings('?group_by=gpu');
    const byModel = await earnings('?group_by=model');

    // The figures.
    const figure = (id) => page.locator(`#${id} .big`).textContent();
    // The period is the payout schedule's (monthly here): since the first of this month, running rentals in.
    assert.equal(await page.locator('#earnings-period h2').textContent(), 'This month');
    assert.equal(await figure('earnings-period'), `${byDay.this_period.amount} USDC`);
    const now = await clock(0);
    assert.equal(Date.parse(byDay.this_period.from), Date.parse(`${now.slice(0, 8)}01T00:00:00Z`), byDay.this_period.from);
    assert.equal(await figure('earnings-unpaid'), `${byDay.balance} USDC`);
    assert.equal(await figure('earnings-today'), `${byDay.today} USDC`);
    assert.equal(await figure('earnings-7d'), `${byDay.last_7_days} USDC`);
    assert.equal(await figure('earnings-30d'), `${byDay.last_30_days} USDC`);
    assert.equal(await page.locator('#earnings-range-total').getAttribute('data-total'), byDay.total);

    // The chart: a bar for each day with earnings, of the day's total; hovering one shows it.
    const chart = await page.locator('#earnings-chart').evaluate((e) => ({ xs: e.uplot.data[0], ys: e.uplot.data[1] }));
    const bars = chart.xs.map((x, i) => [new Date(x * 1000).toISOString().slice(0, 10), chart.ys[i]]).filter(([, y]) => y !== null);
    assert.deepEqual(bars, byDay.groups.map((g) => [g.key, Number(g.total)]));
    await page.locator('#earnings-chart').scrollIntoViewIfNeeded();
    for (const g of byDay.groups) {
      const over = await page.locator('#earnings-chart .u-over').boundingBox();
      const x = await page.locator('#earnings-chart').evaluate((e, day) =>
        e.uplot.valToPos(Date.parse(`${day}T00:00:00Z`) / 1000, 'x'), g.key);
      await page.mouse.move(over.x + x, over.y + over.height - 3);
      const legend = page.locator('#earnings-chart .u-legend .u-series');
      await until(`the legend to show ${g.key}`, async () =>
        (await legend.nth(0).locator('.u-value').textContent()) === g.key, 5000);
      assert.equal(await legend.nth(1).locator('.u-value').textContent(), g.total, g.key);
    }
    await shot(page, 'chart-hovered');

    // The tables, row for row.
    assert.deepEqual(await rowsOf(page.locator('#earnings-days')),
      byDay.groups.map((g) => [g.key, g.settled, g.unsettled, g.total]));
    assert.deepEqual((await rowsOf(page.locator('#earnings-gpus'))).map((r) => [r[0], r[1], ...r.slice(3)]),
      byGpu.groups.map((g) => [g.key, 'L40S', g.settled, g.unsettled, g.total]));
    assert.deepEqual(await rowsOf(page.locator('#earnings-models')),
      byModel.groups.map((g) => [g.key, g.settled, g.unsettled, g.total]));

    // The pending payout.
    const p = byDay.pending_payout;
    assert.equal(p.method, 'sepa');
    const pending = page.locator('#earnings-pending');
    assert.equal(await pending.getAttribute('data-next-date'), p.next_date);
    assert.match(await page.locator('#earnings-next-date').textContent(),
      new RegExp(`^${new Date(`${p.next_date}T00:00:00Z`).toLocaleDateString('en-GB', { weekday: 'long', day: 'numeric',
        month: 'long', year: 'numeric', timeZone: 'UTC' })} \\(monthly\\)$`));
    assert.equal(await page.locator('#earnings-pending-amount').textContent(), `${p.amount} USDC`);
    assert.equal(await page.locator('#earnings-method').textContent(), 'SEPA bank transfer');
    assert.match(await page.locator('#earnings-minimum-status').textContent(),
      new RegExp(`^${p.above_minimum ? 'Above' : 'Below'} the ${p.minimum.replace('.', '\\.')} USDC minimum`));

    // The CSV it downloads has the table's rows.
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#earnings-csv-day').click()]);
    const csv = readFileSync(await download.path(), 'utf8').trimEnd().split('\r\n').map((l) => l.split(','));
    assert.deepEqual(csv, [['day', 'settled_usdc', 'unsettled_usdc', 'total_usdc'],
      ...byDay.groups.map((g) => [g.key, g.settled, g.unsettled, g.total])]);
    assert.match(download.suggestedFilename(), /^gpunex-earnings-\d{4}-\d{2}-\d{2}-\d{4}-\d{2}-\d{2}-by-day\.csv$/);

    // A range of the first two days: the chart, the tables and the CSV link follow it.
    const [first, second] = byDay.groups.map((g) => g.key);
    await page.getByLabel('From', { exact: true }).fill(first);
    await page.getByLabel('To (included)').fill(second);
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForFunction(() => location.hash.includes('from='));
    await page.locator('#earnings-chart canvas').waitFor();
    const next = new Date(Date.parse(`${second}T00:00:00Z`) + 86400000).toISOString().slice(0, 10);
    const ranged = await earnings(`?group_by=day&from=${first}&to=${next}`);
    assert.equal(ranged.groups.length, 2);
    await until('the ranged table', async () => JSON.stringify(await rowsOf(page.locator('#earnings-days'))) ===
      JSON.stringify(ranged.groups.map((g) => [g.key, g.settled, g.unsettled, g.total])), 5000);
    const rangedChart = await page.locator('#earnings-chart').evaluate((e) => e.uplot.data);
    const days = (Date.parse(second) - Date.parse(first)) / 86400000 + 1;
    assert.equal(rangedChart[0].length, days, 'a place for each day of the range');
    assert.deepEqual(rangedChart[1].filter((y) => y !== null), ranged.groups.map((g) => Number(g.total)));
    assert.match(await page.locator('#earnings-csv-day').getAttribute('href'), new RegExp(`from=${first}&to=${next}`));
    assert.equal(await page.locator('#payout-history h2').textContent(), 'Payout history');
    await shot(page, 'ranged');

    // A range that ends before it starts: the server's message beside From.
    await page.getByLabel('From', { exact: true }).fill(second);
    await page.getByLabel('To (included)').fill(first);
    await page.getByRole('button', { name: 'Show' }).click();
    await page.locator('#earnings-from-error', { hasText: 'from must be before to' }).waitFor();
    assert.equal(await page.getByLabel('From', { exact: true }).getAttribute('aria-invalid'), 'true');
    assert.deepEqual(errors, []);
  } finally {
    if (provider) await provider.agent.stop();
    await browser.close();
    await server.stop();
  }
});
