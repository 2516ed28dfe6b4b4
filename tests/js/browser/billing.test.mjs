// Browser: an admin adds credit on the Credit page (a bad amount is refused beside its field, a
// double submit credits once); the customer's Balance page shows the balance and a history that
// agrees, line for line, with GET /v1/billing/history.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, Client } from '../lib/server.mjs';
import { launchBrowser, screenshotter } from '../lib/browser.mjs';

async function logIn(page, url, email, password) {
  await page.goto(`${url}/#/login`);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Roles' }).waitFor();
}

// How customers pay, as an operator writes it (two lines).
const HOW_TO_PAY = 'Wire EUR to DE89 3704 0044 0532 0130 00 (GPUnex Test Ltd),\nor send USDC on Solana to GJRs4FwHtemZ5ZE9x3FNvJ8TMwitKTh21yxdRPqn7npE.';

test(`${BACKEND}: Credit page adds credit once; the Balance page agrees with the API`, async () => {
  const server = await new TestServer(['--payment-instructions', HOW_TO_PAY]).start();
  const shot = screenshotter(`billing-${BACKEND}`);
  const browser = await launchBrowser(shot);
  const errors = [];
  try {
    server.createUser('root@example.com', 'operator-password-1', 'admin');
    const ann = new Client(server.url);
    await ann.signupAndLogin('ann@example.com');

    const admin = await browser.newPage();
    admin.on('pageerror', (e) => errors.push(e.message));
    await logIn(admin, server.url, 'root@example.com', 'operator-password-1');
    await admin.getByRole('link', { name: 'Credit', exact: true }).click();
    await admin.getByRole('heading', { name: 'Credit', exact: true }).waitFor();
    const form = admin.getByRole('form', { name: 'Add credit' });
    await form.getByLabel('Customer e-mail').fill('ann@example.com');
    await form.getByLabel('Amount (USDC)').fill('12,50');
    await form.getByLabel('Payment reference').fill('wire 881');
    await form.getByRole('button', { name: 'Add credit' }).click();
    await admin.locator('#credit-amount-error', { hasText: /decimal|digits|amount/i }).waitFor();
    assert.equal(await form.getByLabel('Amount (USDC)').getAttribute('aria-invalid'), 'true');
    await shot(admin, 'credit-error');

    await form.getByLabel('Amount (USDC)').fill('12.50');
    // Two clicks on one filled-in form: one credit.
    await form.getByRole('button', { name: 'Add credit' }).dblclick();
    await admin.locator('#credit-result', { hasText: 'Credited 12.500000 USDC to ann@example.com' }).waitFor();
    await shot(admin, 'credited');
    // A click that lands after the answer (a slow double click) on the emptied form submits nothing:
    // the answer stays, and no field is marked wrong.
    await form.getByRole('button', { name: 'Add credit' }).click();
    await admin.waitForTimeout(300);
    assert.match(await admin.locator('#credit-result').textContent(), /^Credited 12\.500000 USDC to ann@example\.com/);
    assert.equal(await form.getByLabel('Customer e-mail').getAttribute('aria-invalid'), null);
    const api = await ann.request('GET', '/v1/billing/history');
    assert.equal(api.json.items.length, 1, api.body);

    await form.getByLabel('Customer e-mail').fill('ann@example.com');
    await form.getByLabel('Amount (USDC)').fill('7.25');
    await form.getByLabel('Payment reference').fill('card 9');
    await form.getByRole('button', { name: 'Add credit' }).click();
    await admin.locator('#credit-result', { hasText: 'Balance 19.750000 USDC' }).waitFor();
    // The recent credits, refreshed after each one, list what the API lists: newest first, who credited it.
    await admin.locator('#credits-list tbody tr').nth(1).waitFor();
    const listed = await admin.locator('#credits-list tbody tr').evaluateAll((rows) =>
      rows.map((r) => [r.dataset.id, ...[...r.cells].slice(1).map((c) => c.textContent)]));
    const credits = (await ann.request('GET', '/v1/billing/history')).json.items;
    assert.deepEqual(listed, credits.map((c) => [c.id, 'ann@example.com', c.amount, c.reference, 'root@example.com']));

    const page = await browser.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await logIn(page, server.url, 'ann@example.com', 'correct-horse-battery');
    assert.equal(await page.getByRole('link', { name: 'Credit', exact: true }).isHidden(), true, 'customers get no Credit page');
    await page.getByRole('link', { name: 'Balance' }).click();
    await page.getByRole('heading', { name: 'Balance' }).waitFor();
    assert.equal(await page.locator('#balance-amount').textContent(), '19.750000 USDC');
    assert.equal(await page.locator('#balance-lasts').textContent(), 'Nothing is being spent now.');
    // How to add credit: the operator's words, as the API gives them, line breaks kept.
    assert.equal((await ann.request('GET', '/v1/billing/balance')).json.payment_instructions, HOW_TO_PAY);
    assert.equal(await page.locator('#payment-instructions').textContent(), HOW_TO_PAY);
    assert.equal(await page.locator('#payment-instructions').evaluate((e) => getComputedStyle(e).whiteSpace), 'pre-wrap');
    const rows = await page.getByRole('table', { name: 'Balance history' }).locator('tbody tr').evaluateAll(
      (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    const history = (await ann.request('GET', '/v1/billing/history')).json.items;
    assert.deepEqual(rows.map((r) => [r[1], r[3], r[4]]), history.map((i) => [i.kind, i.reference, i.amount]));
    assert.deepEqual(rows.map((r) => r[4]), ['7.250000', '12.500000']);
    await shot(page, 'balance');
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    await server.stop();
  }
});
