// Browser: payouts as people see them (#18). A SEPA provider and a USDC provider earn, Monday comes,
// the USDC payout lands on litesvm; the admin's Payouts page shows the hot wallet's USDC as the chain
// holds it, both runs, and makes the SEPA run's bank file at a typed rate, marks it sent and the payout
// paid; each step agrees with the API. The USDC provider's Earnings tab lists the payout with the
// same amount, status and signature (an explorer link) as GET /v1/provider/payouts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Keypair } from '@solana/web3.js';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { launchBrowser, screenshotter } from '../lib/browser.mjs';
import { RENTAL_SERVER_ARGS, agentlessMachine, customerWithCredit, earnOnTestClock, midweekStart, toNextMonday }
  from '../lib/rentals.mjs';
import { SolanaTestChain } from '../lib/solana_chain.mjs';

const START = midweekStart();

async function logIn(page, url, email, password) {
  await page.goto(`${url}/#/login`);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Roles' }).waitFor();
}

test(`${BACKEND}: the admin's Payouts page runs a SEPA batch; the provider's Earnings tab lists the USDC payout`, async () => {
  const hot = Keypair.generate();
  const chain = await new SolanaTestChain({ hotSeed: hot.secretKey.slice(0, 32), usdc: 1_000_000_000n }).start();
  const keyFile = path.join(mkdtempSync(path.join(tmpdir(), 'gpunex-hot-')), 'hot.json');
  writeFileSync(keyFile, JSON.stringify([...hot.secretKey]));
  chmodSync(keyFile, 0o600);
  const server = await new TestServer([...RENTAL_SERVER_ARGS, '--test-clock', START, '--enable-test-clock', 'true',
    '--payouts-interval-s', '1', '--payout-min-weekly-micro', '1000000', '--solana-rpc-url', chain.url,
    '--solana-keypair-file', keyFile, '--solana-usdc-mint', chain.mint,
    '--sepa-debtor-name', 'GPUnex Test Platform', '--sepa-debtor-iban', 'DE89370400440532013000']).start();
  const shot = screenshotter(`payouts-${BACKEND}`);
  const browser = await launchBrowser(shot);
  const errors = [];
  const providers = [];
  try {
    await customerWithCredit(server, null);
    const bank = await agentlessMachine(server, 'bank-payee@example.com', { gpus: 1, price: '36.00' });
    const usdc = await agentlessMachine(server, 'usdc-payee@example.com', { gpus: 1, price: '36.00' });
    providers.push(bank, usdc);
    const settings = [[bank, { method: 'sepa', account_holder: 'Bank Payee', iban: 'NL91ABNA0417164300' }],
      [usdc, { method: 'solana_usdc', wallet_address: Keypair.generate().publicKey.toBase58() }]];
    for (const [p, body] of settings) {
      const r = await p.client.request('PUT', '/v1/provider/payout-settings',
        { body: { ...body, schedule: 'weekly', password: 'correct-horse-battery' } });
      assert.equal(r.status, 200, r.body);
    }
    await earnOnTestClock(server, bank, 10);
    await earnOnTestClock(server, usdc, 20);
    const monday = await toNextMonday(server);
    const [paid] = await until('the USDC payout to land', async () => {
      const items = (await usdc.client.request('GET', '/v1/provider/payouts')).json.items;
      return items.length && items[0].status === 'paid' ? items : null;
    }, 20000);
    await until('the SEPA payout', async () => (await bank.client.request('GET', '/v1/provider/payouts')).json.items[0]);

    // The admin's page: the hot wallet as the chain has it, and both runs.
    const page = await browser.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await logIn(page, server.url, `root.${process.pid}@example.com`, 'operator-password-1');
    await page.getByRole('link', { name: 'Payouts', exact: true }).click();
    await page.getByRole('heading', { name: 'Payouts' }).waitFor();
    assert.equal(await page.locator('#hot-wallet-address').textContent(), hot.publicKey.toBase58());
    const held = Number(chain.tokenBalance(chain.hotTokenAccount)) / 1e6;
    assert.equal(await page.locator('#hot-wallet-usdc').textContent(), `${held.toFixed(6)} USDC`);
    assert.equal(held, 1000 - Number(paid.amount));
    const runs = (await server.adminClient.request('GET', '/v1/admin/payout-runs')).json.items;
    assert.equal(await page.locator('section.run').count(), runs.length);
    await shot(page, 'runs');

    // The SEPA run: a bad rate is refused in words, a good one makes the file; sent; paid.
    const sepa = page.getByRole('region', { name: `Run ${monday} sepa` });
    const form = sepa.getByRole('form', { name: `Bank batch of ${monday}` });
    await form.getByLabel('EUR per USDC').fill('0,92');
    await form.getByRole('button', { name: 'Make bank file' }).click();
    await sepa.locator('.form-error', { hasText: /euros per USDC/ }).waitFor();
    await form.getByLabel('EUR per USDC').fill('0.92');
    await form.getByRole('button', { name: 'Make bank file' }).click();
    const batchLine = sepa.locator('p.batch');
    await batchLine.waitFor();
    const [run] = (await server.adminClient.request('GET', '/v1/admin/payout-runs')).json.items.filter((r) => r.method === 'sepa');
    const batch = run.batches[0];
    assert.match(await batchLine.textContent(), new RegExp(`${batch.message_id}: 1 transfer\\(s\\), ${batch.total_eur} EUR`));
    assert.equal(await batchLine.getByRole('link', { name: 'Download' }).getAttribute('href'),
      `/v1/admin/sepa-batches/${batch.id}/file`);
    await shot(page, 'batch');
    await batchLine.getByRole('button', { name: 'Mark sent' }).click();
    const row = page.locator(`tr[data-payout="${run.payouts[0].id}"]`);
    await row.getByRole('button', { name: 'Paid' }).click();
    await page.locator(`tr[data-payout="${run.payouts[0].id}"] .badge`, { hasText: 'paid' }).waitFor();
    const [bankPaid] = (await bank.client.request('GET', '/v1/provider/payouts')).json.items;
    assert.equal(bankPaid.status, 'paid');
    assert.equal(bankPaid.sepa.batch_status, 'sent');
    await shot(page, 'paid');

    // The USDC provider's Earnings tab: the history agrees with the API, with the explorer link.
    const prov = await browser.newPage();
    prov.on('pageerror', (e) => errors.push(e.message));
    await logIn(prov, server.url, 'usdc-payee@example.com', 'correct-horse-battery');
    await prov.getByRole('link', { name: 'Earnings', exact: true }).click();
    const history = prov.getByRole('table', { name: 'Payout history' });
    await history.waitFor();
    const rows = await history.locator('tbody tr').evaluateAll((trs) => trs.map((tr) =>
      [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    const api = (await usdc.client.request('GET', '/v1/provider/payouts')).json.items;
    // Where each went: the wallet it was paid to, as the API says.
    assert.deepEqual(rows.map((r) => [r[0], r[1], r[2], r[3], r[4]]),
      api.map((p) => [p.payout_day, p.amount, p.method_text, p.destination_text, 'paid']));
    assert.ok(api.every((p) => p.destination_text.length >= 32), JSON.stringify(api));
    assert.equal(await history.getByRole('link').getAttribute('href'), paid.solana.explorer_url);
    assert.match(rows[0][5], /finalized/);
    await shot(prov, 'earnings-history');
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    for (const p of providers) await p.agent.stop();
    await server.stop();
    await chain.stop();
  }
});
