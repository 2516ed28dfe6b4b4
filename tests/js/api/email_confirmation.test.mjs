// Confirmed e-mail addresses (#19): signup mails a link to the address given, and until it is opened
// the account gets no other mail (its notifications still arrive); the link works once and expires;
// a change of address asks for the password, mails the new address, keeps the old one until the
// link is opened, then tells the old address; resends are limited per hour. Each mail is read
// where a user would read it: the server's mail drop.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { BACKEND, TestServer, Client, confirmationToken, until } from '../lib/server.mjs';
import { storeRows } from '../lib/rentals.mjs';

const START = '2026-03-02T09:00:00.000Z';
const to = (addr) => (m) => new RegExp(`^To: ${addr.replace(/[.+]/g, '\\$&')}\r?$`, 'mi').test(m);
const subject = (s) => (m) => new RegExp(`^Subject: .*${s}`, 'm').test(m);
const mailsTo = (server, addr) => server.mailDrop().filter(to(addr));

function application(email) {
  return {
    full_name: 'Mallory Example', email, company: 'M Ltd',
    gpus: [{ model: 'L40S', count: 1, system_ram_gb: 64, download_gbps: 1, upload_gbps: 1, availability: '24/7',
      location: { city: 'Dublin', country: 'IE', region: 'eu-west' } }],
    ups: false, commitment_months: 3,
  };
}

test(`${BACKEND}: signup mails a link; until it is opened the account is mailed nothing else`, async () => {
  const server = await new TestServer(['--mail-poll-interval-ms', '50']).start();
  try {
    const c = new Client(server.url);
    const me = 'ann@example.com';
    await c.signupAndLogin(me, 'correct-horse-battery', 'Ann Example');
    let who = (await c.request('GET', '/v1/me')).json;
    assert.equal(who.email_verified, false);
    assert.equal(who.pending_email, me, 'the signup address waits for its link');

    const link = await until('the confirmation mail', () => mailsTo(server, me).find(subject('Confirm your e-mail')));
    assert.match(link, /Hello Ann Example,/);
    assert.ok(link.includes(`${server.url}/#/confirm-email/`), link);
    const token = confirmationToken(link);
    // The store keeps the token's hash and the outbox forgets the token once the mail is sent.
    assert.deepEqual(storeRows(server, `SELECT COUNT(*) FROM email_confirmations WHERE token_hash = '${token}'`), [['0']]);
    await until('the outbox forgets the token', () => storeRows(server,
      "SELECT COUNT(*) FROM outbox WHERE kind = 'email_confirmation' AND secret IS NOT NULL")[0][0] === '0');
    assert.ok(storeRows(server, 'SELECT body FROM outbox').every(([b]) => !b.includes(token)));

    // An application in someone else's name: the platform tells the account in the dashboard only.
    const created = await c.request('POST', '/v1/applications', { body: application('victim@example.org') });
    assert.equal(created.status, 201, created.body);
    assert.equal((await c.request('POST', `/v1/applications/${created.json.id}/submit`)).status, 200);
    const notes = (await c.request('GET', '/v1/notifications')).json.items;
    assert.ok(notes.some((n) => /application/i.test(n.title)), JSON.stringify(notes));
    await sleep(400);  // eight polls of the mail worker
    assert.deepEqual(server.mailDrop().filter((m) => !subject('Confirm your e-mail')(m)), [],
      'no mail but the confirmation before it is opened');
    assert.deepEqual(mailsTo(server, 'victim@example.org'), [], 'never to the form\'s address');

    const bad = await c.request('POST', '/v1/auth/confirm-email', { body: { token: 'not-a-token' } });
    assert.equal(bad.status, 400, bad.body);
    assert.equal(bad.json.error.field, 'token');

    // Opened (by anyone holding the link, signed in or not): the address is the account's.
    const opened = await new Client(server.url).request('POST', '/v1/auth/confirm-email', { body: { token } });
    assert.equal(opened.status, 200, opened.body);
    assert.equal(opened.json.email, me);
    assert.equal(opened.json.email_verified, true);
    who = (await c.request('GET', '/v1/me')).json;
    assert.equal(who.email_verified, true);
    assert.equal(who.pending_email, null);
    const again = await c.request('POST', '/v1/auth/confirm-email', { body: { token } });
    assert.equal(again.status, 400, again.body);
    assert.equal(again.json.error.code, 'token_used');
    const resend = await c.request('POST', '/v1/me/email/confirmation');
    assert.equal(resend.status, 409, resend.body);
    assert.equal(resend.json.error.code, 'already_confirmed');

    // Now the account's mail goes to it: a needs_info decision is mailed to the confirmed address.
    server.createUser('rita@example.com', 'operator-password-1', 'reviewer');
    const rita = new Client(server.url);
    await rita.login('rita@example.com', 'operator-password-1');
    const ask = await rita.request('POST', `/v1/review/applications/${created.json.id}/decision`,
      { body: { decision: 'needs_info', note: 'Which PSU?' } });
    assert.equal(ask.status, 200, ask.body);
    const asked = await until('the needs_info mail', () => mailsTo(server, me).find(subject('more information')));
    assert.match(asked, /Which PSU\?/);
    assert.deepEqual(mailsTo(server, 'victim@example.org'), []);
  } finally {
    await server.stop();
  }
});

test(`${BACKEND}: a change of address needs the password and the new address's link; the old one is told`,
  async () => {
    const server = await new TestServer(['--mail-poll-interval-ms', '50']).start();
    try {
      const c = new Client(server.url);
      await c.signupAndLogin('bo@example.com', 'correct-horse-battery', 'Bo Example');
      await server.confirmEmail(c, 'bo@example.com');
      server.createUser('taken@example.com', 'operator-password-1', 'customer');

      const wrong = await c.request('POST', '/v1/me/email', { body: { email: 'bo@new.example', password: 'nope-nope-nope' } });
      assert.equal(wrong.status, 400, wrong.body);
      assert.equal(wrong.json.error.field, 'password');
      const taken = await c.request('POST', '/v1/me/email', { body: { email: 'Taken@Example.com', password: 'correct-horse-battery' } });
      assert.equal(taken.status, 409, taken.body);
      assert.equal(taken.json.error.code, 'email_taken');
      const same = await c.request('POST', '/v1/me/email', { body: { email: 'bo@example.com', password: 'correct-horse-battery' } });
      assert.equal(same.status, 400, same.body);
      assert.equal(same.json.error.field, 'email');
      const junk = await c.request('POST', '/v1/me/email', { body: { email: 'not an address', password: 'correct-horse-battery' } });
      assert.equal(junk.status, 400, junk.body);
      assert.equal(junk.json.error.field, 'email');

      const asked = await c.request('POST', '/v1/me/email', { body: { email: 'Bo@New.Example', password: 'correct-horse-battery' } });
      assert.equal(asked.status, 202, asked.body);
      assert.equal(asked.json.pending_email, 'bo@new.example');
      let who = (await c.request('GET', '/v1/me')).json;
      assert.equal(who.email, 'bo@example.com', 'the old address stays until the link is opened');
      assert.equal(who.email_verified, true);
      assert.equal(who.pending_email, 'bo@new.example');
      const link = await until('the link to the new address',
        () => mailsTo(server, 'bo@new.example').find(subject('Confirm your e-mail')));
      assert.match(link, /change the e-mail address of your GPUnex account to bo@new\.example/);

      // A second request for a change: after the first link is opened, the second no longer moves the account.
      const second = await c.request('POST', '/v1/me/email', { body: { email: 'bo@other.example', password: 'correct-horse-battery' } });
      assert.equal(second.status, 202, second.body);
      const stale = await until('the link to the other address',
        () => mailsTo(server, 'bo@other.example').find(subject('Confirm your e-mail')));
      const opened = await c.request('POST', '/v1/auth/confirm-email', { body: { token: confirmationToken(link) } });
      assert.equal(opened.status, 200, opened.body);
      const late = await c.request('POST', '/v1/auth/confirm-email', { body: { token: confirmationToken(stale) } });
      assert.equal(late.status, 400, late.body);
      assert.equal(late.json.error.code, 'token_used');
      who = (await c.request('GET', '/v1/me')).json;
      assert.equal(who.email, 'bo@new.example');
      assert.equal(who.email_verified, true);
      assert.equal(who.pending_email, null);
      const told = await until('the old address is told',
        () => mailsTo(server, 'bo@example.com').find(subject('e-mail address of your GPUnex account was changed')));
      assert.match(told, /is now bo@new\.example/);
      // The account logs in with the new address, not the old.
      await new Client(server.url).login('bo@new.example', 'correct-horse-battery');
      const old = await new Client(server.url).request('POST', '/v1/auth/login',
        { body: { email: 'bo@example.com', password: 'correct-horse-battery' } });
      assert.equal(old.status, 401, old.body);
    } finally {
      await server.stop();
    }
  });

test(`${BACKEND}: a link expires; a new one is sent on request, a limited number of times an hour`, async () => {
  const server = await new TestServer(['--mail-poll-interval-ms', '50', '--test-clock', START,
    '--enable-test-clock', 'true', '--email-confirmation-ttl-hours', '2', '--email-confirmations-per-hour', '3',
    '--session-ttl-hours', '48']).start();
  try {
    server.createUser('root@example.com', 'operator-password-1', 'admin');
    const admin = new Client(server.url);
    await admin.login('root@example.com', 'operator-password-1');
    const c = new Client(server.url);
    await c.signupAndLogin('cy@example.com', 'correct-horse-battery', 'Cy Example');
    const first = await until('the first link', () => mailsTo(server, 'cy@example.com').find(subject('Confirm')));
    const moved = await admin.request('POST', '/v1/test/clock',
      { body: { now: new Date(Date.parse(START) + 2 * 3600_000).toISOString() } });
    assert.equal(moved.status, 200, moved.body);
    const late = await c.request('POST', '/v1/auth/confirm-email', { body: { token: confirmationToken(first) } });
    assert.equal(late.status, 400, late.body);
    assert.equal(late.json.error.code, 'token_expired');
    assert.equal((await c.request('GET', '/v1/me')).json.pending_email, null, 'an expired link waits for nothing');

    // Two more this hour (the signup's was two hours ago), then the limit.
    for (let i = 0; i < 3; i++) {
      const r = await c.request('POST', '/v1/me/email/confirmation');
      assert.equal(r.status, 202, r.body);
      assert.equal(r.json.pending_email, 'cy@example.com');
    }
    const limited = await c.request('POST', '/v1/me/email/confirmation');
    assert.equal(limited.status, 429, limited.body);
    assert.equal(limited.json.error.code, 'too_many_confirmations');
    // The test clock stands still: the hour's first of them leaves the window in exactly an hour.
    assert.equal(limited.headers.get('retry-after'), '3600');
    const links = await until('four links', () => {
      const m = mailsTo(server, 'cy@example.com').filter(subject('Confirm'));
      return m.length === 4 && m;
    });
    const opened = await c.request('POST', '/v1/auth/confirm-email', { body: { token: confirmationToken(links[3]) } });
    assert.equal(opened.status, 200, opened.body);
    assert.equal((await c.request('GET', '/v1/me')).json.email_verified, true);
  } finally {
    await server.stop();
  }
});
