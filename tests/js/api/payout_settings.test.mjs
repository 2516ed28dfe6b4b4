// A provider's payout settings (#18): USDC on Solana to a wallet that can sign, or a SEPA transfer
// to a valid IBAN; weekly or monthly. A new destination needs the password again, is told by mail
// and in the dashboard, and waits the cool-down (48 h) while payouts go where they went before; a
// schedule change alone is at once. Wrong passwords are held back as failed logins are. API keys cannot touch it; bad input names the field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { BACKEND, Client, TestServer, until } from '../lib/server.mjs';
import { approvedProvider } from '../lib/provider.mjs';

const WALLET = 'GJRs4FwHtemZ5ZE9x3FNvJ8TMwitKTh21yxdRPqn7npE';
const TOKEN_ACCOUNT = 'DeqZejBFrRwWraY4g4besYmibTY1QcV1Fcg6VfoEvn4T';  // the wallet's USDC account: off the curve

test(`${BACKEND}: payout settings: password, cool-down, mail, audit history, bad input`, async () => {
  const server = await new TestServer(['--mail-poll-interval-ms', '100']).start();
  try {
    const { client, key } = await approvedProvider(server, 'payee@example.com', { confirmEmail: true });
    const put = (body) => client.request('PUT', '/v1/provider/payout-settings', { body });
    assert.deepEqual((await client.request('GET', '/v1/provider/payout-settings')).json,
      { current: null, pending: null, history: [] });

    const solana = { method: 'solana_usdc', wallet_address: WALLET, schedule: 'weekly' };
    const noPassword = await put(solana);
    assert.equal(noPassword.status, 400, noPassword.body);
    assert.equal(noPassword.json.error.field, 'password');
    const wrong = await put({ ...solana, password: 'not-my-password' });
    assert.equal(wrong.status, 403);
    assert.equal(wrong.json.error.field, 'password');
    const first = await put({ ...solana, password: 'correct-horse-battery' });
    assert.equal(first.status, 200, first.body);
    assert.equal(first.json.current.method, 'solana_usdc');
    assert.equal(first.json.current.destination.wallet_address, WALLET);
    assert.equal(first.json.pending, null, 'the first destination is in force at once');

    // The schedule alone: no password, at once.
    const monthly = await put({ ...solana, schedule: 'monthly' });
    assert.equal(monthly.status, 200, monthly.body);
    assert.equal(monthly.json.current.schedule, 'monthly');

    // A new destination waits 48 hours; until then the wallet stays in force. The provider is told.
    const sepa = { method: 'sepa', account_holder: 'Payee GmbH', iban: 'de89 3704 0044 0532 0130 00', bic: 'COBADEFFXXX',
      schedule: 'monthly', password: 'correct-horse-battery' };
    const changed = await put(sepa);
    assert.equal(changed.status, 200, changed.body);
    assert.equal(changed.json.current.method, 'solana_usdc');
    assert.equal(changed.json.pending.method, 'sepa');
    assert.equal(changed.json.pending.destination.iban, 'DE89370400440532013000');
    const wait = Date.parse(changed.json.pending.effective_at) - Date.parse(changed.json.pending.changed_at);
    assert.equal(wait, 48 * 3600 * 1000);
    assert.equal(changed.json.history.length, 3);
    const mailDir = path.join(server.dir, 'mail');
    const mail = await until('the change to be mailed', () => {
      if (!existsSync(mailDir)) return null;
      const f = readdirSync(mailDir).map((n) => readFileSync(path.join(mailDir, n), 'utf8'))
        .find((t) => t.includes('payout destination') && t.includes('SEPA'));
      return f || null;
    }, 10000);
    assert.match(mail, /To: payee@example\.com/i);
    assert.match(mail, /DE89 … 3000/);
    const notes = await client.request('GET', '/v1/notifications');
    assert.ok(JSON.stringify(notes.json).includes('Payout destination changed'), notes.body);

    // Bad input names the field and changes nothing.
    const bad = async (body, field, code) => {
      const r = await put({ password: 'correct-horse-battery', ...body });
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.body}`);
      assert.equal(r.json.error.field, field, r.body);
      if (code) assert.equal(r.json.error.code, code, r.body);
    };
    await bad({ ...solana, wallet_address: TOKEN_ACCOUNT }, 'wallet_address', 'off_curve_address');
    await bad({ ...solana, wallet_address: WALLET.slice(0, 40) }, 'wallet_address');
    await bad({ ...solana, wallet_address: `0${WALLET.slice(1)}` }, 'wallet_address');
    await bad({ ...sepa, iban: 'DE89370400440532013001' }, 'iban', 'invalid_iban');
    await bad({ ...sepa, iban: 'US89370400440532013000' }, 'iban');
    await bad({ ...sepa, bic: 'NOPE' }, 'bic');
    await bad({ ...sepa, account_holder: 'Payee <script>' }, 'account_holder');
    const accented = await put({ ...sepa, account_holder: 'Zoë Müller-Straße' });
    assert.equal(accented.status, 400, accented.body);
    assert.match(accented.json.error.message, /; write it as "Zoe Muller-Strasse", as your bank does$/);
    await bad({ ...solana, schedule: 'daily' }, 'schedule');
    await bad({ ...solana, method: 'paypal' }, 'method');
    assert.equal((await client.request('GET', '/v1/provider/payout-settings')).json.history.length, 3);

    // Guessing the password (a stolen session) is held back as failed logins are: after a few wrong
    // tries each next one waits, the right one too (it is not even checked), and nothing changes.
    let held = null;
    for (let i = 0; i < 6 && !held; i++) {
      const r = await put({ ...solana, password: `guess-${i}` });
      if (r.status === 429) held = r;
      else assert.equal(r.status, 403, r.body);
    }
    assert.ok(held, 'six wrong passwords in a row were all checked');
    assert.equal(held.json.error.code, 'too_many_failed_logins');
    assert.ok(Number(held.headers.get('retry-after')) >= 1, held.headers.get('retry-after'));
    assert.equal((await put({ ...solana, password: 'correct-horse-battery' })).status, 429);
    assert.equal((await client.request('GET', '/v1/provider/payout-settings')).json.history.length, 3);

    // Not with an API key (a stolen agent key must not redirect the money), not for a customer.
    const agent = new Client(server.url);
    agent.token = key;
    assert.equal((await agent.request('PUT', '/v1/provider/payout-settings', { body: solana })).status, 403);
    const customer = new Client(server.url);
    await customer.signupAndLogin('not-a-provider@example.com');
    assert.equal((await customer.request('GET', '/v1/provider/payout-settings')).status, 403);
  } finally {
    await server.stop();
  }
});

// Someone with the provider's session sets their own wallet; the provider, told by mail, goes back to the
// wallet in force before the cool-down ends: that is at once, and the pending change is called off, so
// when its time comes the payouts still go to the provider's wallet (they went to the other one).
test(`${BACKEND}: going back to the destination in force calls off a pending change`, async () => {
  const START = '2031-03-01T00:00:00Z';  // a Saturday
  const server = await new TestServer(['--test-clock', START, '--enable-test-clock', 'true',
    '--session-ttl-hours', '240']).start();
  try {
    server.createUser('root@example.com', 'operator-password-1', 'admin');
    const admin = new Client(server.url);
    await admin.login('root@example.com', 'operator-password-1');
    const at = async (hours) => {
      const r = await admin.request('POST', '/v1/test/clock',
        { body: { now: new Date(Date.parse(START) + hours * 3600_000).toISOString() } });
      assert.equal(r.status, 200, r.body);
    };
    const { client } = await approvedProvider(server, 'owner@example.com', { confirmEmail: true });
    const OTHER = '4S4ApGC9roHurnWD88MsLP3V61atbwTpCQVuAwUGrgXm';  // someone else's wallet
    const put = (wallet, extra = {}) => client.request('PUT', '/v1/provider/payout-settings', { body:
      { method: 'solana_usdc', wallet_address: wallet, schedule: 'weekly', password: 'correct-horse-battery', ...extra } });
    assert.equal((await put(WALLET)).status, 200);
    await at(0.5);
    const taken = await put(OTHER);
    assert.equal(taken.status, 200, taken.body);
    assert.equal(taken.json.pending.destination.wallet_address, OTHER);
    // Going back needs the password too: it names a destination other than the newest recorded.
    const noPassword = await client.request('PUT', '/v1/provider/payout-settings', { body:
      { method: 'solana_usdc', wallet_address: WALLET, schedule: 'weekly' } });
    assert.equal(noPassword.status, 400, noPassword.body);
    assert.equal(noPassword.json.error.field, 'password');
    assert.equal((await client.request('GET', '/v1/provider/payout-settings')).json.pending.destination.wallet_address, OTHER);

    await at(1);
    const back = await put(WALLET);
    assert.equal(back.status, 200, back.body);
    assert.equal(back.json.current.destination.wallet_address, WALLET);
    assert.equal(back.json.pending, null, 'nothing is waiting any more');
    assert.equal(Date.parse(back.json.current.effective_at), Date.parse(START) + 3600_000, 'in force at once');

    // Past the called-off change's time, and past when a new change would have ended its cool-down.
    for (const hours of [48.5, 100]) {
      await at(hours);
      const now = (await client.request('GET', '/v1/provider/payout-settings')).json;
      assert.equal(now.current.destination.wallet_address, WALLET, `at +${hours} h`);
      assert.equal(now.pending, null);
    }
  } finally {
    await server.stop();
  }
});
