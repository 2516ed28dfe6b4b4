// A forgotten password: anyone may ask for a link for an address; if an account has it, the link is
// mailed there, and the answer is the same either way. The link works once, expires, and is mailed a
// limited number of times an hour; opening it sets the password, ends every session, tells the account,
// and confirms an address the account had not confirmed yet. Each mail is read where a user would read
// it: the server's mail drop.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { BACKEND, TestServer, Client, confirmationToken, until } from '../lib/server.mjs';
import { storeRows } from '../lib/rentals.mjs';

const START = '2026-03-02T09:00:00.000Z';
const to = (addr) => (m) => new RegExp(`^To: ${addr.replace(/[.+]/g, '\\$&')}\r?$`, 'mi').test(m);
const subject = (s) => (m) => new RegExp(`^Subject: .*${s}`, 'm').test(m);
const resetMails = (server, addr) => server.mailDrop().filter(to(addr)).filter(subject('Set a new password'));

function resetToken(mailText) {
  const m = /\/#\/reset-password\/([A-Za-z0-9_-]+)/.exec(mailText);
  if (!m) throw new Error(`no reset link in:\n${mailText}`);
  return m[1];
}

async function loginStatus(server, email, password) {
  return (await new Client(server.url).request('POST', '/v1/auth/login', { body: { email, password } })).status;
}

test(`${BACKEND}: a reset link is mailed to the account's address; it sets the password once and ends every session`,
  async () => {
    const server = await new TestServer(['--mail-poll-interval-ms', '50']).start();
    try {
      const me = 'dee@example.com';
      const laptop = new Client(server.url);
      await laptop.signupAndLogin(me, 'correct-horse-battery', 'Dee Example');
      await server.confirmEmail(laptop, me);
      const phone = new Client(server.url);
      await phone.login(me, 'correct-horse-battery');

      // Asked with the address as typed (case, spaces); an address with no account gets the same answer.
      const asked = await new Client(server.url).request('POST', '/v1/auth/password-reset',
        { body: { email: '  Dee@Example.com ' } });
      assert.equal(asked.status, 202, asked.body);
      assert.deepEqual(asked.json, { status: 'reset_requested', email: me, link_valid_minutes: 60 });
      const nobody = await new Client(server.url).request('POST', '/v1/auth/password-reset',
        { body: { email: 'nobody@example.com' } });
      assert.equal(nobody.status, 202, nobody.body);
      assert.deepEqual(Object.keys(nobody.json).sort(), Object.keys(asked.json).sort());
      assert.equal(nobody.json.status, asked.json.status);
      const junk = await new Client(server.url).request('POST', '/v1/auth/password-reset', { body: { email: 'dee' } });
      assert.equal(junk.status, 400, junk.body);
      assert.equal(junk.json.error.field, 'email');

      const mail = await until('the reset mail', () => resetMails(server, me)[0]);
      assert.match(mail, /Hello Dee Example,/);
      assert.match(mail, /The link works once, until /);
      assert.ok(mail.includes(`${server.url}/#/reset-password/`), mail);
      const token = resetToken(mail);
      // The store keeps the token's hash, and the outbox forgets the token once the mail is sent.
      assert.deepEqual(storeRows(server, `SELECT COUNT(*) FROM password_resets WHERE token_hash = '${token}'`), [['0']]);
      assert.deepEqual(storeRows(server, 'SELECT COUNT(*) FROM password_resets'), [['1']]);
      await until('the outbox forgets the token', () => storeRows(server,
        "SELECT COUNT(*) FROM outbox WHERE kind = 'password_reset' AND secret IS NOT NULL")[0][0] === '0');
      await sleep(300);  // six polls of the mail worker
      assert.deepEqual(server.mailDrop().filter(to('nobody@example.com')), [], 'no mail to an address with no account');

      // Someone who has the password (and the phone's session) asks to move the account to their address.
      const move = await phone.request('POST', '/v1/me/email', { body: { email: 'thief@example.net', password: 'correct-horse-battery' } });
      assert.equal(move.status, 202, move.body);
      const thiefLink = await until('the move\'s link', () => server.mailDrop().filter(to('thief@example.net'))[0]);

      // The password still works until the link is used; a weak new password is refused and the link kept.
      assert.equal((await laptop.request('GET', '/v1/me')).status, 200);
      const weak = await new Client(server.url).request('POST', '/v1/auth/password-reset/confirm',
        { body: { token, new_password: 'short' } });
      assert.equal(weak.status, 400, weak.body);
      assert.equal(weak.json.error.field, 'new_password');
      const forged = await new Client(server.url).request('POST', '/v1/auth/password-reset/confirm',
        { body: { token: 'not-a-token', new_password: 'dees-new-password-2' } });
      assert.equal(forged.status, 400, forged.body);
      assert.equal(forged.json.error.field, 'token');
      assert.equal(forged.json.error.code, 'unknown_token');

      const done = await new Client(server.url).request('POST', '/v1/auth/password-reset/confirm',
        { body: { token, new_password: 'dees-new-password-2' } });
      assert.equal(done.status, 200, done.body);
      assert.deepEqual(done.json, { status: 'password_changed', email: me, sessions_ended: 2 });
      assert.equal((await laptop.request('GET', '/v1/me')).status, 401, 'the laptop is signed out');
      assert.equal((await phone.request('GET', '/v1/me')).status, 401, 'the phone is signed out');
      assert.equal(await loginStatus(server, me, 'correct-horse-battery'), 401, 'the old password is gone');
      assert.equal(await loginStatus(server, me, 'dees-new-password-2'), 200);
      // The move the intruder asked for is called off with the reset.
      const moved = await new Client(server.url).request('POST', '/v1/auth/confirm-email',
        { body: { token: confirmationToken(thiefLink) } });
      assert.equal(moved.status, 400, moved.body);
      assert.equal(moved.json.error.code, 'token_used');

      const again = await new Client(server.url).request('POST', '/v1/auth/password-reset/confirm',
        { body: { token, new_password: 'dees-third-password-3' } });
      assert.equal(again.status, 400, again.body);
      assert.equal(again.json.error.code, 'token_used');
      assert.equal(await loginStatus(server, me, 'dees-new-password-2'), 200, 'a used link changes nothing');
      const told = await until('the password-changed mail', () =>
        server.mailDrop().filter(to(me)).find(subject('your password was changed')));
      assert.match(told, /Forgot your password\?/);
    } finally {
      await server.stop();
    }
  });

test(`${BACKEND}: a link expires, a few are mailed an hour, and a password changed or an address moved voids them`,
  async () => {
    const server = await new TestServer(['--mail-poll-interval-ms', '50', '--test-clock', START,
      '--enable-test-clock', 'true', '--password-reset-ttl-minutes', '30', '--password-resets-per-hour', '2',
      '--session-ttl-hours', '48']).start();
    try {
      server.createUser('root@example.com', 'operator-password-1', 'admin');
      const admin = new Client(server.url);
      await admin.login('root@example.com', 'operator-password-1');
      const at = async (minutes) => {
        const r = await admin.request('POST', '/v1/test/clock',
          { body: { now: new Date(Date.parse(START) + minutes * 60_000).toISOString() } });
        assert.equal(r.status, 200, r.body);
      };
      const ask = async (email) => {
        const r = await new Client(server.url).request('POST', '/v1/auth/password-reset', { body: { email } });
        assert.equal(r.status, 202, r.body);
      };
      const open = (token, password = 'eves-new-password-2') => new Client(server.url).request('POST',
        '/v1/auth/password-reset/confirm', { body: { token, new_password: password } });

      // An account that never opened its signup link: the reset mail goes to its address, and opening it
      // confirms the address (the mail reached its owner).
      const eve = new Client(server.url);
      await eve.signupAndLogin('eve@example.com', 'correct-horse-battery', 'Eve Example');
      assert.equal((await eve.request('GET', '/v1/me')).json.email_verified, false);
      await ask('eve@example.com');
      const first = resetToken(await until('the first link', () => resetMails(server, 'eve@example.com')[0]));
      await at(31);
      const late = await open(first);
      assert.equal(late.status, 400, late.body);
      assert.equal(late.json.error.code, 'token_expired');

      // Two links an hour (the expired one counts until 10:00): a third request is answered alike and mails
      // nothing; at 10:01 the first has left the hour, and one more is mailed.
      await at(45);
      await ask('eve@example.com');
      await ask('eve@example.com');
      await until('the second link', () => resetMails(server, 'eve@example.com').length === 2);
      await at(61);
      await ask('eve@example.com');
      await ask('eve@example.com');
      const links = await until('a third link', () => {
        const m = resetMails(server, 'eve@example.com');
        return m.length === 3 && m;
      });
      await sleep(300);
      assert.equal(resetMails(server, 'eve@example.com').length, 3, 'the hour\'s two links are spent');
      // Opening the newer link voids the older, unexpired one too.
      const opened = await open(resetToken(links[2]));
      assert.equal(opened.status, 200, opened.body);
      const older = await open(resetToken(links[1]));
      assert.equal(older.status, 400, older.body);
      assert.equal(older.json.error.code, 'token_used');
      await eve.login('eve@example.com', 'eves-new-password-2');
      assert.equal((await eve.request('GET', '/v1/me')).json.email_verified, true, 'the reset confirmed the address');

      // A password changed in the account voids a link asked for before.
      await at(130);
      await ask('eve@example.com');
      const beforeChange = resetToken(await until('a link', () => resetMails(server, 'eve@example.com')[3]));
      const changed = await eve.request('POST', '/v1/me/password',
        { body: { current_password: 'eves-new-password-2', new_password: 'eves-own-password-3' } });
      assert.equal(changed.status, 200, changed.body);
      const stale = await open(beforeChange, 'attackers-password-4');
      assert.equal(stale.status, 400, stale.body);
      assert.equal(stale.json.error.code, 'token_used');
      assert.equal(await loginStatus(server, 'eve@example.com', 'eves-own-password-3'), 200);

      // A link mailed to the old address no longer speaks for an account that moved to a new one.
      await ask('eve@example.com');
      const toOld = resetToken(await until('a link to the old address', () => resetMails(server, 'eve@example.com')[4]));
      const move = await eve.request('POST', '/v1/me/email', { body: { email: 'eve@new.example', password: 'eves-own-password-3' } });
      assert.equal(move.status, 202, move.body);
      await server.confirmEmail(eve, 'eve@new.example');
      const moved = await open(toOld, 'attackers-password-4');
      assert.equal(moved.status, 400, moved.body);
      assert.equal(moved.json.error.field, 'token');
      assert.equal(await loginStatus(server, 'eve@new.example', 'eves-own-password-3'), 200);
    } finally {
      await server.stop();
    }
  });
