// Browser: renting (issue 16). A customer finds an offer on the Marketplace and opens its Rent form:
// without credit the form and the server's refusal say what the first hour needs; with credit the
// estimated cost follows the GPU count and the maximum hours, beside the balance, and a bad field is
// refused beside it. The customer rents (a double click rents once) and lands on the rental, which
// follows the agent to Running with its logs (the test posts the agent's messages: no container
// engine). My rentals lists it with the state and cost its own page shows. The provider's Rented
// GPUs page shows the GPU rented (never by whom) and what it earns per hour, and stops it: the
// customer's pages then say the provider stopped it, with the same cost in the list, on the rental's
// page and in the API. A rental that has not started is stopped from its page by the customer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { BACKEND, BIN, TestServer, Client, until } from '../lib/server.mjs';
import { approvedProvider } from '../lib/provider.mjs';
import { postedMachine } from '../lib/rental_machine.mjs';
import { launchBrowser, screenshotter } from '../lib/browser.mjs';

async function logIn(page, url, email, password = 'correct-horse-battery') {
  await page.goto(`${url}/#/login`);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Roles' }).waitFor();
}

// Each body row of a table as { column: text }, by the cells' data-col.
function tableRows(locator) {
  return locator.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => Object.fromEntries(
    [...tr.querySelectorAll('[data-col]')].map((c) => [c.dataset.col, c.textContent.trim()]))));
}

// The detail page's facts, by data-fact.
function facts(page) {
  return page.locator('#rental-facts dd').evaluateAll((dds) => Object.fromEntries(dds.map((d) => [d.dataset.fact, d.textContent.trim()])));
}

test(`${BACKEND}: rent an offer, follow it in My rentals, the provider stops it`, async () => {
  const server = await new TestServer().start();
  const shot = screenshotter(`rentals-${BACKEND}`);
  const browser = await launchBrowser(shot);
  // The provider in a browser of their own: one browser keeps one session cookie.
  const provShot = screenshotter(`rentals-provider-${BACKEND}`);
  const provBrowser = await launchBrowser(provShot);
  const errors = [];
  let machine;
  try {
    const provider = await approvedProvider(server, 'pia@example.com');
    machine = await postedMachine(server, provider, { gpus: 2, price: '0.50' });
    const ann = new Client(server.url);
    await ann.signupAndLogin('ann@example.com');
    const page = await browser.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await logIn(page, server.url, 'ann@example.com');
    assert.equal(await page.getByRole('link', { name: 'Rented GPUs' }).isHidden(), true, 'customers have no Rented GPUs page');
    await page.getByRole('link', { name: 'Marketplace' }).click();
    const offer = page.locator(`li.offer[data-machine="${machine.machineId}"]`);
    await offer.waitFor();
    await offer.getByRole('link', { name: `Rent L40S on ${machine.machineId}` }).click();
    await page.getByRole('heading', { name: 'Rent L40S' }).waitFor();
    assert.equal(await page.evaluate(() => location.hash), `#/rent/${machine.machineId}/L40S`);

    // No credit yet: the form says so, and the server's refusal names the amount.
    const form = page.getByRole('form', { name: 'Rent GPUs' });
    assert.equal(await page.locator('#rent-balance').textContent(),
      'Your balance of 0.000000 USDC does not cover the first hour (0.500000 USDC). Your balance');
    await form.getByLabel('Container image').fill('docker.io/library/busybox:latest');
    await form.getByRole('button', { name: 'Rent' }).click();
    await form.locator('.form-error', { hasText: 'the balance (0.000000 USDC) does not cover the first hour: 0.500000 USDC is needed' })
      .waitFor();
    await form.locator('.form-error').getByRole('link', { name: 'Your balance' }).waitFor();
    await shot(page, 'rent-no-credit');
    const credit = spawnSync(path.join(BIN, 'gpunex-server'), ['admin', 'credit', '--db', server.db, '--email', 'ann@example.com',
      '--amount', '10.00', '--reference', 'wire rentals-1'], { encoding: 'utf8' });
    assert.equal(credit.status, 0, credit.stderr);
    await page.reload();
    await page.getByRole('heading', { name: 'Rent L40S' }).waitFor();

    // The estimate follows the form; the balance is beside it.
    const estimate = page.locator('#rent-estimate');
    assert.equal(await estimate.textContent(),
      'Estimated cost: 0.500000 USDC per hour (1 GPU × 0.500000 USDC), billed per second until you stop it.');
    assert.equal(await page.locator('#rent-balance').textContent(),
      'Your balance: 10.000000 USDC, enough for about 20 hours at this rate.');
    const gpus = form.getByLabel('GPUs (up to 2)');
    assert.deepEqual(await gpus.locator('option').allTextContents(), ['1', '2']);
    await gpus.selectOption('2');
    await form.getByLabel('Stop after (hours, optional)').fill('2.5');
    assert.equal(await estimate.textContent(),
      'Estimated cost: 1.000000 USDC per hour (2 GPUs × 0.500000 USDC), at most 2.500000 USDC for 2.5 hours.');
    assert.equal(await page.locator('#rent-balance').textContent(),
      'Your balance: 10.000000 USDC, enough for about 10 hours at this rate.');

    // Bad fields, beside their inputs: one the page catches, one the server does.
    await form.getByLabel('Container image').fill('docker.io/library/busybox:latest');
    await form.getByLabel('Command (optional)').fill('sh -c "echo hello from the container; sleep 3600"');
    assert.equal(await page.locator('#rent-command-preview').textContent(),
      "Runs: sh -c 'echo hello from the container; sleep 3600'");
    await form.getByLabel('Environment variables (optional)').fill('GREETING=hello\nNOVALUE');
    await form.getByRole('button', { name: 'Rent' }).click();
    const env = form.getByLabel('Environment variables (optional)');
    await page.waitForFunction(() => document.querySelector('[data-field="env"]').getAttribute('aria-invalid') === 'true');
    assert.match(await form.locator('.field-error').filter({ hasText: 'NOVALUE' }).textContent(), /Line 2 \("NOVALUE"\): write NAME=value\./);
    await env.fill('GREETING=hello');
    await form.getByLabel('Container ports to expose (optional)').fill('8888, 70000');
    await form.getByRole('button', { name: 'Rent' }).click();
    const ports = form.getByLabel('Container ports to expose (optional)');
    await page.waitForFunction(() => document.querySelector('[data-field="ports"]').getAttribute('aria-invalid') === 'true');
    assert.equal(await form.locator(`#${await ports.getAttribute('id')}-error`).textContent(),
      'Ports must hold port numbers from 1 to 65535');
    await shot(page, 'rent-form-error');
    assert.equal((await ann.request('GET', '/v1/rentals')).json.items.length, 0, 'nothing rented yet');

    await ports.fill('8888');
    await gpus.selectOption('1');
    // Two clicks on one filled-in form: one rental.
    await form.getByRole('button', { name: 'Rent' }).dblclick();
    await page.waitForFunction(() => location.hash.startsWith('#/rentals/rnt_'));
    const rentalId = decodeURIComponent((await page.evaluate(() => location.hash)).slice('#/rentals/'.length));
    await page.getByRole('heading', { name: `Rental ${rentalId}` }).waitFor();
    assert.match(await page.locator('.flash').textContent(), new RegExp(`Rental ${rentalId} requested: 1 × L40S at 0\\.500000 USDC per hour`));
    const mine = (await ann.request('GET', '/v1/rentals')).json.items;
    assert.deepEqual(mine.map((r) => r.id), [rentalId], 'the double click rented once');
    assert.deepEqual(mine[0].command, ['sh', '-c', 'echo hello from the container; sleep 3600']);
    assert.deepEqual(mine[0].env_names, ['GREETING']);
    assert.equal(mine[0].max_hours, 2.5);
    let f = await facts(page);
    assert.equal(f.state, 'Requested');
    assert.equal(f.gpus.startsWith('1 × L40S'), true, f.gpus);
    assert.equal(f['max-hours'], '2.5 hours');
    assert.equal(f.env, 'GREETING (values not shown)');
    assert.equal(f.ports, '8888 (bound when it runs)');
    await shot(page, 'requested');

    // The agent starts it and reports its output; the page, which polls, follows.
    assert.deepEqual((await machine.rentals()).rentals.map((r) => r.id), [rentalId]);
    await machine.event(rentalId, 'starting');
    await machine.event(rentalId, 'running', { ports: [{ container_port: 8888, host_port: 40001 }] });
    await machine.event(rentalId, 'logs', { logs: 'hello from the container\n' });
    await page.locator('#rental-facts [data-state="running"]').waitFor({ timeout: 15000 });
    await page.locator('#rental-logs', { hasText: 'hello from the container' }).waitFor({ timeout: 15000 });
    f = await facts(page);
    // Where to connect: the machine's address (its agent registered from this test's loopback) and the port.
    assert.equal(f.ports, '8888 → 127.0.0.1:40001');
    assert.match(f.cost, /^\d+\.\d{6} USDC$/);
    await shot(page, 'running');

    // My rentals: the same rental, running.
    await page.getByRole('link', { name: 'My rentals', exact: true }).click();
    await page.getByRole('heading', { name: 'My rentals' }).waitFor();
    const table = page.getByRole('table', { name: 'My rentals' });
    let rows = await tableRows(table);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].id, rentalId);
    assert.equal(rows[0].state, 'Running');
    assert.equal(rows[0].gpus, '1 × L40S');
    assert.equal(rows[0]['cost-per-hour'], '0.500000 USDC');
    // Every time on the page is UTC, the refresh time too (it was the browser's local time beside UTC times).
    assert.match(await page.locator('#rentals-summary').textContent(), /^1 rental, 1 active\. Updated \d\d:\d\d:\d\d UTC\.$/);
    await shot(page, 'my-rentals-running');

    // The Balance page leads with what can be spent now: the balance less what the running rental has
    // used since its last settlement (the balance itself moves at settlement), and how long that lasts.
    await page.getByRole('link', { name: 'Balance', exact: true }).click();
    await page.getByRole('heading', { name: 'Balance' }).waitFor();
    const settledLine = await page.locator('#balance-settled').textContent();
    const used = settledLine.match(/^Balance 10\.000000 USDC, less (0\.\d{6}) USDC your running rentals have used since their last settlement\.$/);
    assert.ok(used, settledLine);
    const shownAvailable = (await page.locator('#balance-amount').textContent()).match(/^(\d+\.\d{6}) USDC$/);
    assert.ok(shownAvailable);
    assert.equal(Math.round(Number(shownAvailable[1]) * 1e6), 10_000_000 - Math.round(Number(used[1]) * 1e6));
    assert.equal(await page.locator('#balance-lasts').textContent(), 'About 19 hours left at 0.500000 USDC per hour.');
    await page.getByRole('link', { name: 'My rentals', exact: true }).click();
    await table.waitFor();

    // The provider sees the GPU rented, not who rents it, and stops it.
    const prov = await provBrowser.newPage();
    prov.on('pageerror', (e) => errors.push(e.message));
    await logIn(prov, server.url, 'pia@example.com');
    await prov.getByRole('link', { name: 'Rented GPUs' }).click();
    await prov.getByRole('heading', { name: 'Rented GPUs' }).waitFor();
    const rentedNow = prov.getByRole('table', { name: 'Rented now' });
    await rentedNow.waitFor();
    const pItems = (await provider.client.request('GET', '/v1/provider/rentals')).json.items;
    assert.deepEqual(pItems.map((r) => r.id), [rentalId]);
    const [pRow] = await tableRows(rentedNow);
    assert.equal(pRow.uuids, pItems[0].gpus.join(', '));
    assert.ok(machine.uuids.includes(pItems[0].gpus[0]), pRow.uuids);
    assert.equal(pRow.gpus, `1 × L40S${pRow.uuids}`);
    assert.equal(pRow.machine, machine.machineId);
    assert.equal(pRow.state, 'Running');
    assert.equal(pRow.price, '0.500000 USDC');
    assert.equal(pRow['earnings-per-hour'], `${pItems[0].earnings_per_hour} USDC`);
    assert.equal(await prov.locator('#rented-summary').evaluate((e) => e.firstChild.textContent),
      `1 GPU rented now, earning ${pItems[0].earnings_per_hour} USDC per hour.`);
    assert.doesNotMatch(await prov.locator('main').textContent(), /ann@example\.com|Test User/);
    await provShot(prov, 'rented-gpus');
    await rentedNow.getByRole('button', { name: 'Stop' }).click();
    await rentedNow.getByText('Stop it? It counts as stopped by you.').waitFor();
    await rentedNow.getByRole('button', { name: 'Yes, stop' }).click();
    await rentedNow.locator('[data-state="stopping"]').waitFor({ timeout: 10000 });
    await machine.event(rentalId, 'ended');
    const earlier = prov.getByRole('table', { name: 'Earlier rentals' });
    await earlier.waitFor({ timeout: 15000 });
    const [pEnded] = await tableRows(earlier);
    assert.equal(pEnded.state, 'Ended');
    assert.equal(pEnded.end, 'Stopped by you');
    assert.equal(await prov.locator('#rented-summary').evaluate((e) => e.firstChild.textContent), 'None of your GPUs is rented now.');
    await provShot(prov, 'rented-gpus-stopped');

    // The customer's pages agree with each other and with the API.
    const ended = await until('the rental to end', async () => {
      const r = await ann.request('GET', `/v1/rentals/${rentalId}`);
      return r.json.state === 'ended' ? r.json : null;
    }, 10000);
    assert.equal(ended.end_reason, 'provider_stopped');
    await table.locator('[data-col="state"]', { hasText: 'Ended' }).waitFor({ timeout: 15000 });
    rows = await tableRows(table);
    assert.equal(rows[0].state, 'Ended');
    assert.equal(rows[0].cost, `${ended.cost_so_far} USDC`);
    assert.equal(rows[0].end, 'Stopped by the provider');
    await shot(page, 'my-rentals-ended');
    await table.getByRole('link', { name: rentalId }).click();
    await page.getByRole('heading', { name: `Rental ${rentalId}` }).waitFor();
    f = await facts(page);
    assert.equal(f.state, rows[0].state);
    assert.equal(f.cost, rows[0].cost);
    assert.equal(f.runtime, rows[0].runtime);
    assert.equal(f.end, 'Stopped by the provider');
    assert.equal(await page.getByRole('button', { name: 'Stop rental' }).count(), 0, 'no Stop button once ended');
    await page.locator('#rental-logs', { hasText: 'hello from the container' }).waitFor();
    await shot(page, 'ended');

    // A rental that has not started: the customer stops it from its page, and it ends at once.
    await page.goto(`${server.url}/#/rent/${machine.machineId}/L40S`);
    await page.getByRole('heading', { name: 'Rent L40S' }).waitFor();
    await form.getByLabel('Container image').fill('docker.io/library/busybox:latest');
    await form.getByRole('button', { name: 'Rent' }).click();
    await page.waitForFunction((old) => location.hash.startsWith('#/rentals/rnt_') && location.hash !== old, `#/rentals/${rentalId}`);
    const second = decodeURIComponent((await page.evaluate(() => location.hash)).slice('#/rentals/'.length));
    await page.getByRole('heading', { name: `Rental ${second}` }).waitFor();
    await page.getByRole('button', { name: 'Stop rental' }).click();
    await page.getByText('Stop it now? Its container is stopped and billing ends.').waitFor();
    await shot(page, 'stop-confirm');
    await page.getByRole('button', { name: 'Yes, stop' }).click();
    await page.locator('#rental-facts [data-state="ended"]').waitFor({ timeout: 10000 });
    f = await facts(page);
    assert.equal(f.end, 'Stopped by you');
    assert.equal(f.cost, '0.000000 USDC');
    assert.equal((await ann.request('GET', `/v1/rentals/${second}`)).json.state, 'ended');
    await shot(page, 'stopped-before-start');
    assert.deepEqual(errors, []);
  } finally {
    if (machine) await machine.stop();
    await browser.close();
    await provBrowser.close();
    await server.stop();
  }
});
