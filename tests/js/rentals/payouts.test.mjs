// Payout runs (#18) on the server's test clock: a provider earns from a rental, chooses SEPA weekly,
// and when the clock reaches Monday the payouts worker creates exactly one payout of what was settled
// before Monday began (the earnings move to "in flight"). The operator makes the run's bank batch at
// a rate they enter; the pain.001 file validates against the official XSD with xmllint and names the
// same end-to-end id and amount the provider sees; marked sent and then returned by the bank, the
// amount is back in the provider's earnings and the provider is told why. Bad input names its field;
// nobody but an admin reaches the runs, and no provider sees another's payouts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { gpunex, homeLoggedIn } from '../lib/cli.mjs';
import { RENTAL_SERVER_ARGS, agentlessMachine, customerWithCredit, earnOnTestClock, midweekStart, storeRows,
  toNextMonday } from '../lib/rentals.mjs';

const RENT = { image: 'docker.io/library/busybox:1.36', command: ['sleep', '86400'] };
const START = midweekStart();
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const XSD = path.join(ROOT, '.deps/xsd/pain.001.001.03.xsd');

// xmllint's verdict on a file against the official schema: '' when valid, else its complaint.
function schemaErrors(xml) {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'gpunex-sepa-')), 'batch.xml');
  writeFileSync(file, xml);
  try {
    execFileSync('xmllint', ['--noout', '--schema', XSD, file], { stdio: 'pipe' });
    return '';
  } catch (e) {
    return String(e.stderr);
  }
}

// `gpunex ARGS` run as a user signed in to `url` with `token`.
function signedInGpunex(url, token, args) {
  return gpunex(homeLoggedIn(url, token, 'payee@example.com'), args);
}

test(`${BACKEND}: a Monday run pays once; the SEPA file validates; a returned payout comes back`, async () => {
  assert.ok(existsSync(XSD), `${XSD} is missing: scripts/deps.sh fetches it`);
  const server = await new TestServer([...RENTAL_SERVER_ARGS, '--test-clock', START, '--enable-test-clock', 'true',
    '--payouts-interval-s', '1', '--payout-min-weekly-micro', '1000000',
    '--sepa-debtor-name', 'GPUnex Test Platform', '--sepa-debtor-iban', 'DE89370400440532013000',
    '--sepa-debtor-bic', 'COBADEFFXXX']).start();
  let provider;
  try {
    provider = await agentlessMachine(server, 'payee@example.com', { gpus: 2, price: '36.00' });
    const other = await agentlessMachine(server, 'other-payee@example.com', { gpus: 1, price: '36.00' });
    await other.agent.stop();
    await customerWithCredit(server, null);  // the admin client
    const admin = server.adminClient;

    // The provider is paid by SEPA every week; a rental earns it ten minutes at 36 USDC per GPU-hour.
    // Set with the CLI (`gpunex payouts set`), confirmed with the password; a bad IBAN is named first.
    const home = homeLoggedIn(server.url, provider.client.token, 'payee@example.com');
    const badIban = gpunex(home, ['payouts', 'set', '--iban', 'NL91 ABNA 0417 1643 01', '--account-holder',
      'Jurgen Payee', '--password-stdin'], 'correct-horse-battery\n');
    assert.equal(badIban.code, 1);
    assert.match(badIban.err, /\(field: iban, --iban\)/);
    const wrongPassword = gpunex(home, ['payouts', 'set', '--iban', 'NL91 ABNA 0417 1643 00', '--account-holder',
      'Jurgen Payee', '--password-stdin'], 'not-my-password\n');
    assert.equal(wrongPassword.code, 1);
    assert.match(wrongPassword.err, /password/);
    const set = gpunex(home, ['payouts', 'set', '--iban', 'NL91 ABNA 0417 1643 00', '--account-holder', 'Jurgen Payee',
      '--password-stdin'], 'correct-horse-battery\n');
    assert.equal(set.code, 0, set.err);
    const settings = await provider.client.request('GET', '/v1/provider/payout-settings');
    assert.equal(settings.json.current.method, 'sepa', settings.body);
    assert.equal(settings.json.current.schedule, 'weekly');
    assert.equal(set.out, `Paid weekly to ${settings.json.current.destination_text} (sepa)\n`);
    assert.match(gpunex(home, ['payouts']).out, /^paid weekly to Jurgen Payee, NL91 … 4300 \(sepa\)$/m);
    await earnOnTestClock(server, provider, 10, RENT);
    const earned = (await provider.client.request('GET', '/v1/provider/earnings')).json;
    assert.equal(earned.balance, '4.800000', 'ten minutes of one GPU at 36/h, less 20%');

    // Nothing is paid before Monday: the worker runs every second, and no payout appears.
    assert.deepEqual((await provider.client.request('GET', '/v1/provider/payouts')).json.items, []);

    // To Monday 01:00 UTC, the next one after now.
    const mondayText = await toNextMonday(server);
    const [payout] = await until('the Monday payout', async () => {
      const items = (await provider.client.request('GET', '/v1/provider/payouts')).json.items;
      return items.length ? items : null;
    }, 15000);
    assert.equal(payout.amount, '4.800000');
    assert.equal(payout.payout_day, mondayText);
    assert.equal(payout.method, 'sepa');
    assert.equal(payout.status, 'awaiting_batch');
    assert.match(payout.destination_text, /Jurgen Payee, NL91 … 4300/);
    // The worker's later rounds create nothing more; the earnings are in flight, not in the balance.
    await new Promise((r) => setTimeout(r, 2500));
    assert.equal((await provider.client.request('GET', '/v1/provider/payouts')).json.items.length, 1);
    assert.equal(Number(storeRows(server, 'SELECT COUNT(*) FROM payouts')[0][0]), 1);
    assert.equal((await provider.client.request('GET', '/v1/provider/earnings')).json.balance, '0.000000');
    const [[inFlight]] = storeRows(server,
      `SELECT SUM(amount) FROM ledger_entries WHERE account = 'platform:payouts_in_flight'`);
    assert.equal(Number(inFlight), 4_800_000);

    // Only an admin reaches the runs; the other provider sees no payout.
    assert.equal((await provider.client.request('GET', '/v1/admin/payout-runs')).status, 403);
    assert.deepEqual((await other.client.request('GET', '/v1/provider/payouts')).json.items, []);
    const runs = (await admin.request('GET', '/v1/admin/payout-runs')).json.items;
    assert.equal(runs.length, 1);
    assert.equal(runs[0].payout_day, mondayText);
    assert.equal(runs[0].total, '4.800000');
    assert.deepEqual(runs[0].payouts.map((p) => p.id), [payout.id]);

    // The batch: a bad rate names its field; at 0.92 EUR per USDC the file holds 4.41 EUR.
    const batchPath = `/v1/admin/payout-runs/${runs[0].id}/sepa-batch`;
    for (const [body, field] of [[{}, 'eur_per_usdc'], [{ eur_per_usdc: '0,92' }, 'eur_per_usdc'],
      [{ eur_per_usdc: '5000' }, 'eur_per_usdc'], [{ eur_per_usdc: 0.92 }, 'eur_per_usdc']]) {
      const r = await admin.request('POST', batchPath, { body });
      assert.equal(r.status, 400, r.body);
      assert.equal(r.json.error.field, field, r.body);
      // A number is not taken (a float), and the message says how to write it.
      if (typeof body.eur_per_usdc === 'number') assert.match(r.json.error.message, /must be a decimal string such as "0\.92"/);
    }
    const batch = await admin.request('POST', batchPath, { body: { eur_per_usdc: '0.92' } });
    assert.equal(batch.status, 201, batch.body);
    assert.equal(batch.json.total_eur, '4.41');
    assert.equal(batch.json.transfers, 1);
    assert.equal((await admin.request('POST', batchPath, { body: { eur_per_usdc: '0.92' } })).status, 409,
      'nothing is left to batch: no second file');
    const file = await admin.request('GET', `/v1/admin/sepa-batches/${batch.json.id}/file`);
    assert.equal(file.status, 200);
    assert.match(file.headers.get('content-type'), /application\/xml/);
    assert.match(file.headers.get('content-disposition'), /attachment/);
    assert.equal(schemaErrors(file.body), '', 'the file validates against pain.001.001.03.xsd');
    const [seen] = (await provider.client.request('GET', '/v1/provider/payouts')).json.items;
    assert.equal(seen.status, 'batched');
    assert.equal(seen.sepa.eur_amount, '4.41');
    assert.ok(file.body.includes(`<EndToEndId>${seen.sepa.end_to_end_id}</EndToEndId>`), 'the provider sees the file\'s id');
    assert.ok(file.body.includes('<InstdAmt Ccy="EUR">4.41</InstdAmt>'));
    assert.ok(file.body.includes('<IBAN>NL91ABNA0417164300</IBAN>'));
    assert.equal((await provider.client.request('GET', `/v1/admin/sepa-batches/${batch.json.id}/file`)).status, 403);

    // Not sent: not paid either. Sent and paid, then returned by the bank days later (SEPA returns come
    // after the money left): the money is back from money_out in the provider's earnings.
    const payoutPath = `/v1/admin/payouts/${payout.id}`;
    const moneyOut = () => Number(storeRows(server,
      "SELECT COALESCE(SUM(amount), 0) FROM ledger_entries WHERE account = 'platform:money_out'")[0][0]);
    assert.equal((await admin.request('POST', `${payoutPath}/paid`)).status, 409);
    assert.equal((await admin.request('POST', `/v1/admin/sepa-batches/${batch.json.id}/sent`)).json.status, 'sent');
    const paid = await admin.request('POST', `${payoutPath}/paid`);
    assert.equal(paid.json.status, 'paid', paid.body);
    assert.equal(moneyOut(), 4_800_000);
    const noReason = await admin.request('POST', `${payoutPath}/returned`, { body: {} });
    assert.equal(noReason.status, 400);
    assert.equal(noReason.json.error.field, 'reason');
    const returned = await admin.request('POST', `${payoutPath}/returned`, { body: { reason: 'account closed' } });
    assert.equal(returned.status, 200, returned.body);
    assert.equal(returned.json.status, 'returned');
    assert.equal(moneyOut(), 0, 'the money came back');
    const again = await admin.request('POST', `${payoutPath}/returned`, { body: { reason: 'account closed' } });
    assert.equal(again.status, 200, 'said twice: nothing more');
    assert.equal(moneyOut(), 0, 'not taken back twice');
    assert.equal((await admin.request('POST', `${payoutPath}/paid`)).status, 409, 'returned is final');
    const back = (await provider.client.request('GET', '/v1/provider/earnings')).json;
    assert.equal(back.balance, '4.800000');
    const [afterReturn] = (await provider.client.request('GET', '/v1/provider/payouts')).json.items;
    assert.equal(afterReturn.status, 'returned');
    assert.equal(afterReturn.failure_reason, 'account closed');
    const notes = (await provider.client.request('GET', '/v1/notifications')).json.items;
    assert.ok(notes.some((n) => n.kind === 'payout_returned' && n.body.includes('account closed')),
      JSON.stringify(notes));

    // The CLI says the same: where payouts go, and this one with its bank reference and why it came back.
    const cli = signedInGpunex(server.url, provider.client.token, ['payouts']);
    assert.equal(cli.code, 0, cli.err);
    assert.match(cli.out, /paid weekly to Jurgen Payee, NL91 … 4300 \(sepa\)/);
    const row = cli.out.split('\n').find((l) => l.startsWith(mondayText));
    assert.ok(row, cli.out);
    for (const part of ['4.800000', 'returned', 'Jurgen Payee, NL91 … 4300', seen.sepa.end_to_end_id, '4.41 EUR',
      'account closed', payout.id]) {
      assert.ok(row.includes(part), `${part} in ${row}`);
    }
    const asJson = signedInGpunex(server.url, provider.client.token, ['payouts', '--json']);
    assert.deepEqual(JSON.parse(asJson.out).items,
      (await provider.client.request('GET', '/v1/provider/payouts')).json.items);

    const [[total]] = storeRows(server, 'SELECT SUM(amount) FROM ledger_entries');
    assert.equal(Number(total), 0, 'the ledger sums to zero');
  } finally {
    if (provider) await provider.agent.stop();
    await server.stop();
  }
});
