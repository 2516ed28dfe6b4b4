// Customer credit and balance (#16, money core): an operator credits a customer from the shell or
// through the admin API, each credit one ledger transaction named by its payment reference; the
// customer sees the balance and its history; the ledger refuses to be changed afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BACKEND, BIN, TestServer, Client } from '../lib/server.mjs';
import { homeLoggedIn } from '../lib/cli.mjs';

function sql(server, statement) {
  if (server.db.startsWith('sqlite:')) {
    return spawnSync('sqlite3', [server.db.slice(7), statement], { encoding: 'utf8' });
  }
  return spawnSync('psql', [server.db, '-q', '-v', 'ON_ERROR_STOP=1', '-c', statement], { encoding: 'utf8' });
}

function adminCredit(server, args) {
  return spawnSync(path.join(BIN, 'gpunex-server'), ['admin', 'credit', '--db', server.db, ...args], { encoding: 'utf8' });
}

test(`${BACKEND}: operators credit customers; customers see their balance and its history`, async () => {
  const server = await new TestServer().start();
  try {
    server.createUser('root@example.com', 'operator-password-1', 'admin');
    const admin = new Client(server.url);
    await admin.login('root@example.com', 'operator-password-1');
    const ann = new Client(server.url);
    await ann.signupAndLogin('ann@example.com');
    const bob = new Client(server.url);
    await bob.signupAndLogin('bob@example.com');

    const empty = await ann.request('GET', '/v1/billing/balance');
    assert.equal(empty.status, 200);
    assert.deepEqual(empty.json, { balance: '0.000000', available: '0.000000', unsettled: '0.000000', currency: 'USDC',
      spend_per_hour: '0.000000', hours_left: null, minutes_left: null, payment_instructions: null });

    // The admin API: one credit, then the same payment again (a retry) changes nothing.
    const credit = { email: 'Ann@Example.com', amount: '100.00', reference: 'wire 2026-12-04 #42' };
    const first = await admin.request('POST', '/v1/admin/credits', { body: credit });
    assert.equal(first.status, 201, first.body);
    assert.equal(first.json.amount, '100.000000');
    assert.equal(first.json.balance, '100.000000');
    assert.equal(first.json.email, 'ann@example.com');
    assert.equal(first.json.repeated, false);
    const again = await admin.request('POST', '/v1/admin/credits', { body: credit });
    assert.equal(again.status, 200);
    assert.equal(again.json.repeated, true);
    assert.equal(again.json.transaction_id, first.json.transaction_id);
    assert.equal(again.json.balance, '100.000000');
    const clash = await admin.request('POST', '/v1/admin/credits', { body: { ...credit, amount: '1000.00' } });
    assert.equal(clash.status, 409);
    assert.equal(clash.json.error.code, 'duplicate_reference');
    assert.equal(clash.json.error.field, 'reference');
    assert.match(clash.json.error.message, /100\.000000 USDC/);

    // An Idempotency-Key replays the first answer.
    const keyed = { body: { email: 'ann@example.com', amount: '0.5', reference: 'promo-7' },
      headers: { 'Idempotency-Key': 'credit-promo-7-ann' } };
    const k1 = await admin.request('POST', '/v1/admin/credits', keyed);
    const k2 = await admin.request('POST', '/v1/admin/credits', keyed);
    assert.equal(k1.status, 201);
    assert.equal(k2.status, 201);
    assert.equal(k2.json.transaction_id, k1.json.transaction_id);

    // Bad input names the field and posts nothing.
    const bad = async (body, field, status = 400) => {
      const r = await admin.request('POST', '/v1/admin/credits', { body });
      assert.equal(r.status, status, `${JSON.stringify(body)}: ${r.body}`);
      assert.equal(r.json.error.field, field, r.body);
    };
    await bad({ email: 'ann@example.com', amount: 100, reference: 'x' }, 'amount');
    await bad({ email: 'ann@example.com', amount: '-5', reference: 'x' }, 'amount');
    await bad({ email: 'ann@example.com', amount: '0', reference: 'x' }, 'amount');
    await bad({ email: 'ann@example.com', amount: '1.0000001', reference: 'x' }, 'amount');
    await bad({ email: 'ann@example.com', amount: '5' }, 'reference');
    await bad({ email: 'ann@example.com', amount: '5', reference: 'two\nlines' }, 'reference');
    await bad({ email: 'ann@example.com', amount: '5', reference: 'x', note: 'hi' }, 'note');
    await bad({ email: 'nobody@example.com', amount: '5', reference: 'x' }, 'email', 404);

    // Only admins credit.
    const notAdmin = await ann.request('POST', '/v1/admin/credits', { body: { ...credit, reference: 'self' } });
    assert.equal(notAdmin.status, 403);

    // From the shell: `gpunex-server admin credit`.
    const cli = adminCredit(server, ['--email', 'ann@example.com', '--amount', '25.25', '--reference', 'cash 7']);
    assert.equal(cli.status, 0, cli.stderr);
    assert.match(cli.stdout, /^credited 25\.250000 USDC to ann@example\.com \(transaction ltx_\w+\); balance 125\.750000 USDC\n$/);
    const cliAgain = adminCredit(server, ['--email', 'ann@example.com', '--amount', '25.25', '--reference', 'cash 7']);
    assert.equal(cliAgain.status, 0, cliAgain.stderr);
    assert.match(cliAgain.stdout, /^already credited: /);
    const cliBad = adminCredit(server, ['--email', 'ann@example.com', '--amount', '25,25', '--reference', 'cash 8']);
    assert.equal(cliBad.status, 1);
    assert.match(cliBad.stderr, /^error: --amount: /);

    const balance = await ann.request('GET', '/v1/billing/balance');
    assert.equal(balance.json.balance, '125.750000');
    const history = await ann.request('GET', '/v1/billing/history');
    assert.equal(history.status, 200);
    assert.deepEqual(history.json.items.map((i) => [i.kind, i.reference, i.amount]), [
      ['credit', 'cash 7', '25.250000'],
      ['credit', 'promo-7', '0.500000'],
      ['credit', 'wire 2026-12-04 #42', '100.000000'],
    ]);
    const sum = history.json.items.reduce((s, i) => s + Math.round(Number(i.amount) * 1e6), 0);
    assert.equal(sum, 125_750_000, 'the history adds up to the balance');

    // The operators' list of credits agrees with the customer's history, and says who credited each: the
    // admin by e-mail, the shell as operator:NAME. Only admins read it.
    const credits = await admin.request('GET', '/v1/admin/credits?limit=10');
    assert.equal(credits.status, 200, credits.body);
    const anns = credits.json.items.filter((c) => c.email === 'ann@example.com');
    assert.deepEqual(anns.map((c) => [c.id, c.reference, c.amount]),
      history.json.items.map((i) => [i.id, i.reference, i.amount]));
    assert.match(anns[0].by, /^operator:/);
    assert.equal(anns[2].by, 'root@example.com');
    assert.ok(credits.json.items.every((c, i, all) => i === 0 || all[i - 1].at >= c.at), 'newest first');
    assert.equal((await ann.request('GET', '/v1/admin/credits')).status, 403);

    // The CLI says the same: `gpunex balance`, `--history`, `--json`.
    const home = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
    const gpunex = (args, input) => spawnSync(path.join(BIN, 'gpunex'), ['--server', server.url, ...args],
      { input, env: { PATH: process.env.PATH, HOME: home }, encoding: 'utf8' });
    assert.equal(gpunex(['login', '--email', 'ann@example.com', '--password-stdin'], 'correct-horse-battery\n').status, 0);
    const human = gpunex(['balance', '--history']);
    assert.equal(human.status, 0, human.stderr);
    assert.match(human.stdout, /^balance: 125\.750000 USDC; nothing is being spent now\n/);
    const lines = human.stdout.split('\n');
    // With no payment_instructions written, the operator is the way to add credit (not a dead end).
    assert.match(lines[1], /^to add credit: ask the operator of this GPUnex how to pay/);
    assert.match(lines[2], /^AT +KIND +USDC +REFERENCE +TRANSACTION/);
    assert.match(lines[3], /credit +25\.250000 +cash 7 +ltx_/);
    assert.match(lines[5], /credit +100\.000000 +wire 2026-12-04 #42 +ltx_/);
    const json = gpunex(['--json', 'balance', '--history']);
    assert.equal(json.status, 0, json.stderr);
    const parsed = JSON.parse(json.stdout);
    assert.equal(parsed.balance, '125.750000');
    assert.deepEqual(parsed.history.items, history.json.items, 'the CLI lists what the API lists');

    // An admin credits from the CLI too (`gpunex credit`); the same reference again credits nothing more.
    const opsHome = homeLoggedIn(server.url, admin.token);
    const ops = (args) => spawnSync(path.join(BIN, 'gpunex'), args,
      { env: { PATH: process.env.PATH, HOME: opsHome }, encoding: 'utf8' });
    const credited = ops(['credit', '--email', 'ann@example.com', '--amount', '4.25', '--reference', 'cli wire 9']);
    assert.equal(credited.status, 0, credited.stderr);
    assert.match(credited.stdout, /^Credited 4\.250000 USDC to ann@example\.com \(transaction ltx_\w+\); balance 130\.000000 USDC\n$/);
    const repeated = ops(['credit', '--email', 'ann@example.com', '--amount', '4.25', '--reference', 'cli wire 9']);
    assert.match(repeated.stdout, /^Already credited: 4\.250000 USDC to ann@example\.com .*; balance 130\.000000 USDC\n$/);
    const badAmount = ops(['credit', '--email', 'ann@example.com', '--amount', '-1', '--reference', 'cli wire 10']);
    assert.equal(badAmount.status, 1);
    assert.match(badAmount.stderr, /\(field: amount, --amount\)/);
    const selfCredit = gpunex(['credit', '--email', 'ann@example.com', '--amount', '1', '--reference', 'self-made']);
    assert.equal(selfCredit.status, 1, 'a customer cannot credit itself');
    assert.equal((await ann.request('GET', '/v1/billing/balance')).json.balance, '130.000000');

    // Another customer's money is not Bob's.
    assert.equal((await bob.request('GET', '/v1/billing/balance')).json.balance, '0.000000');
    assert.deepEqual((await bob.request('GET', '/v1/billing/history')).json.items, []);

    // The ledger is append-only: the store itself refuses to change or delete an entry.
    const edit = sql(server, "UPDATE ledger_entries SET amount = amount * 10");
    assert.notEqual(edit.status, 0);
    assert.match(edit.stderr, /append-only/);
    const del = sql(server, 'DELETE FROM ledger_transactions');
    assert.notEqual(del.status, 0);
    assert.equal((await ann.request('GET', '/v1/billing/balance')).json.balance, '130.000000');
    // Every transaction sums to zero: the money came from money_in.
    const totals = server.db.startsWith('sqlite:')
      ? execFileSync('sqlite3', [server.db.slice(7), 'SELECT SUM(amount) FROM ledger_entries']).toString().trim()
      : execFileSync('psql', [server.db, '-tA', '-c', 'SELECT SUM(amount) FROM ledger_entries']).toString().trim();
    assert.equal(totals, '0');
  } finally {
    await server.stop();
  }
});
