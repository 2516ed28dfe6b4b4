// The gpunex CLI: login keeps the token with mode 0600, whoami, logout, --json; the server comes
// from --server, then GPUNEX_SERVER, then config.toml, then the saved login; logging out of a
// server one is not logged in to keeps the saved login; a word that is no command is named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, statSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BACKEND, BIN, TestServer, Client, until } from '../lib/server.mjs';
import { gpunex } from '../lib/cli.mjs';
import { Pty } from '../lib/pty.mjs';

// A word that is no command is named, with the commands there, instead of "a subcommand is required".
test('an unknown command is named with the commands there', () => {
  const home = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
  const top = gpunex(home, ['catalog']);
  assert.equal(top.code, 2, 'a wrong command line exits 2');
  assert.match(top.err, /'catalog' is not a command of `gpunex`; the commands are: login, .*machines, .*rentals/);
  const inner = gpunex(home, ['machines', 'frob']);
  assert.equal(inner.code, 2);
  assert.match(inner.err, /'frob' is not a command of `gpunex machines`; the commands are: list, show/);
  // Nothing at all still asks for a command; an unknown option, a missing one and a bad value exit 2 too
  // (not CLI11's own 104-109), and --help and --version 0. The help says what the exit statuses mean.
  const bare = gpunex(home, ['machines']);
  assert.match(bare.err, /A subcommand is required/);
  assert.equal(bare.code, 2);
  assert.equal(gpunex(home, ['rent', '--model', 'L4']).code, 2, 'no --image');
  assert.equal(gpunex(home, ['rent', '--model', 'L4', '--image', 'x', '--max-hours', 'abc']).code, 2);
  assert.equal(gpunex(home, ['whoami', '--frobnicate']).code, 2);
  const help = gpunex(home, ['--help']);
  assert.equal(help.code, 0);
  assert.match(help.out, /Exit status: 0 done; 1 the server refused .*; 2 the command line is wrong/);
  assert.equal(gpunex(home, ['--version']).code, 0);
});

test(`${BACKEND}: gpunex login, whoami, logout`, async () => {
  const server = await new TestServer().start();
  const home = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
  try {
    await new Client(server.url).request('POST', '/v1/auth/signup',
      { body: { email: 'cli@example.com', password: 'correct-horse-battery', full_name: 'Cli User' } });

    const bad = gpunex(home, ['--server', server.url, 'login', '--email', 'cli@example.com', '--password-stdin'],
      'wrong-password-1\n');
    assert.equal(bad.code, 1);
    assert.equal(bad.err, 'error: e-mail or password is wrong\n' +
      `no account yet? sign up at ${server.url}/#/signup; forgot the password? ${server.url}/#/forgot-password\n`,
    'no "run gpunex login" after a failed login, and where accounts and lost passwords are dealt with');

    const login = gpunex(home, ['--server', server.url, 'login', '--email', 'cli@example.com', '--password-stdin',
      '--json'], 'correct-horse-battery\n');
    assert.equal(login.code, 0, login.err);
    assert.equal(JSON.parse(login.out).user.email, 'cli@example.com');
    const cred = path.join(home, '.config', 'gpunex', 'credentials.json');
    assert.equal(statSync(cred).mode & 0o777, 0o600);

    // The server is remembered from the login.
    const who = gpunex(home, ['whoami', '--json']);
    assert.equal(who.code, 0, who.err);
    assert.deepEqual(JSON.parse(who.out).roles, ['customer']);
    const whoText = gpunex(home, ['whoami']);
    assert.match(whoText.out, /cli@example.com \(Cli User\)/);

    const out = gpunex(home, ['--server', server.url, 'logout']);
    assert.equal(out.code, 0, out.err);
    // The token is gone from the file; the server stays, so the next login (and its error) goes there.
    assert.deepEqual(JSON.parse(readFileSync(cred, 'utf8')), { server: server.url, token: '', email: '' });
    assert.equal(statSync(cred).mode & 0o777, 0o600);
    const after = gpunex(home, ['whoami']);
    assert.equal(after.code, 1);
    assert.equal(after.err, `error: not logged in to ${server.url}; run \`gpunex login\`\n`);
    const again = gpunex(home, ['logout']);
    assert.equal(again.code, 0, again.err);
    assert.equal(again.out, `Not logged in to ${server.url}; nothing to do.\n`);
    const back = gpunex(home, ['login', '--email', 'cli@example.com', '--password-stdin'], 'correct-horse-battery\n');
    assert.equal(back.code, 0, back.err);
    assert.match(back.out, new RegExp(`^Logged in to ${server.url} as cli@example\\.com`));
  } finally {
    await server.stop();
  }
});

test(`${BACKEND}: gpunex login at a terminal asks for the e-mail, then the password without showing it`, async () => {
  const server = await new TestServer().start();
  const home = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
  const password = 'Secret-Typed-At-The-Tty-7';
  try {
    const c = new Client(server.url);
    assert.equal((await c.request('POST', '/v1/auth/signup',
      { body: { email: 'tty@example.com', password, full_name: 'Tty User' } })).status, 201);

    const tty = new Pty([path.join(BIN, 'gpunex'), '--server', server.url, 'login'],
      { env: { PATH: process.env.PATH, HOME: home } });
    await tty.expect('E-mail: ');
    tty.type('tty@example.com\n');
    await tty.expect('Password: ');
    tty.type(`${password}\n`);
    const end = await tty.wait();
    assert.deepEqual(end, { code: 0, signal: null }, tty.text);
    assert.match(tty.text, /Logged in to .* as tty@example\.com/);
    // The terminal echoed the e-mail as typed, and not the password.
    assert.match(tty.text, /E-mail: tty@example\.com\n/);
    assert.ok(!tty.text.includes(password), tty.text);
    assert.ok(!tty.text.includes(password.slice(0, 6)), tty.text);

    const who = gpunex(home, ['whoami', '--json']);
    assert.equal(who.code, 0, who.err);
    assert.equal(JSON.parse(who.out).email, 'tty@example.com');

    // Without a terminal and without --email there is no one to ask: it says so.
    const noTty = gpunex(home, ['--server', server.url, 'login'], `${password}\n`);
    assert.equal(noTty.code, 1);
    assert.match(noTty.err, /--email is required when there is no terminal to ask on/);
  } finally {
    await server.stop();
  }
});

test(`${BACKEND}: server resolution order; logout of another server keeps the saved login; logout --json`, async () => {
  const server = await new TestServer().start();
  const home = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
  // Nothing listens there: every command below that resolves to it stops before any request.
  const other = 'http://127.0.0.1:9';
  try {
    const c = new Client(server.url);
    await c.signupAndLogin('order@example.com');
    const login = gpunex(home, ['--server', server.url, 'login', '--email', 'order@example.com', '--password-stdin'],
      'correct-horse-battery\n');
    assert.equal(login.code, 0, login.err);
    const cred = path.join(home, '.config', 'gpunex', 'credentials.json');
    const saved = readFileSync(cred, 'utf8');
    const token = JSON.parse(saved).token;

    // whoami answers for the server it resolved to; "not logged in to X" names X.
    const whoami = (args, env) => gpunex(home, [...args, 'whoami'], undefined, env);
    const loggedIn = (r) => r.code === 0 && r.out.includes('order@example.com');
    const refusedFor = (r, url) => r.code === 1 && r.err.includes(`not logged in to ${url};`);
    assert.ok(loggedIn(whoami([], {})), 'no flag, variable or file: the saved login\'s server');
    assert.ok(refusedFor(whoami([], { GPUNEX_SERVER: other }), other), 'GPUNEX_SERVER over the saved login');
    assert.ok(loggedIn(whoami(['--server', server.url], { GPUNEX_SERVER: other })), '--server over GPUNEX_SERVER');
    assert.ok(refusedFor(whoami(['--server', other], { GPUNEX_SERVER: server.url }), other), '--server over GPUNEX_SERVER');
    writeFileSync(path.join(home, '.config', 'gpunex', 'config.toml'), `server = "${other}"\n`);
    assert.ok(refusedFor(whoami([], {}), other), 'config.toml over the saved login');
    assert.ok(loggedIn(whoami([], { GPUNEX_SERVER: server.url })), 'GPUNEX_SERVER over config.toml');
    assert.ok(loggedIn(whoami(['--server', server.url], {})), '--server over config.toml');

    // Logging out of a server one is not logged in to changes nothing, and says so.
    const wrong = gpunex(home, ['logout']);  // config.toml names the other server
    assert.equal(wrong.code, 1);
    assert.equal(wrong.err, `error: not logged in to ${other}; the saved login (order@example.com on ${server.url}) is kept\n`);
    assert.equal(readFileSync(cred, 'utf8'), saved);
    const wrongJson = gpunex(home, ['--server', other, 'logout', '--json']);
    assert.equal(wrongJson.code, 1);
    assert.equal(JSON.parse(wrongJson.out).error.code, 'not_logged_in');
    assert.equal(readFileSync(cred, 'utf8'), saved);
    c.token = token;
    assert.equal((await c.request('GET', '/v1/me')).status, 200, 'the session is still open');

    // The right server (a trailing slash is the same server): the session ends on the server too.
    const out = gpunex(home, ['--server', `${server.url}/`, 'logout', '--json']);
    assert.equal(out.code, 0, out.err);
    assert.deepEqual(JSON.parse(out.out), { status: 'logged_out', server: server.url, email: 'order@example.com' });
    assert.equal(JSON.parse(readFileSync(cred, 'utf8')).token, '', 'the token is forgotten');
    assert.equal((await c.request('GET', '/v1/me')).status, 401);
    const again = gpunex(home, ['--server', server.url, 'logout', '--json']);
    assert.equal(again.code, 0, again.err);
    assert.deepEqual(JSON.parse(again.out), { status: 'not_logged_in', server: server.url });
  } finally {
    await server.stop();
  }
});

// gpunex password change: the current password, then the new one; every other session ends and this
// login stays. gpunex password forgot: the reset link is mailed to the account (and the answer is the
// same for an address with no account).
test(`${BACKEND}: gpunex password change and password forgot`, async () => {
  const server = await new TestServer(['--mail-poll-interval-ms', '50']).start();
  const home = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
  try {
    const other = new Client(server.url);
    await other.signupAndLogin('pw@example.com', 'correct-horse-battery', 'Pw User');
    await server.confirmEmail(other, 'pw@example.com');
    const login = gpunex(home, ['--server', server.url, 'login', '--email', 'pw@example.com', '--password-stdin'],
      'correct-horse-battery\n');
    assert.equal(login.code, 0, login.err);

    const wrong = gpunex(home, ['password', 'change', '--password-stdin'], 'not-my-password\nbrand-new-password-1\n');
    assert.equal(wrong.code, 1);
    assert.match(wrong.err, /Current password is wrong \(field: current_password\)/);
    const weak = gpunex(home, ['password', 'change', '--password-stdin'], 'correct-horse-battery\nshort\n');
    assert.equal(weak.code, 1);
    assert.match(weak.err, /at least 10 characters \(field: new_password\)/);
    const changed = gpunex(home, ['password', 'change', '--password-stdin'], 'correct-horse-battery\nbrand-new-password-1\n');
    assert.equal(changed.code, 0, changed.err);
    assert.equal(changed.out, 'Password changed; 1 other session was signed out.\n');
    assert.equal((await other.request('GET', '/v1/me')).status, 401, 'the other session ended');
    assert.equal(gpunex(home, ['whoami']).code, 0, 'this login stays');
    await new Client(server.url).login('pw@example.com', 'brand-new-password-1');

    for (const email of ['PW@example.com', 'nobody@example.com']) {
      const forgot = gpunex(home, ['password', 'forgot', '--email', email]);
      assert.equal(forgot.code, 0, forgot.err);
      assert.equal(forgot.out, `If an account has the address ${email.toLowerCase()}, a link that sets a new password ` +
        'was mailed to it; it works once, for 60 minutes. Open it in a browser, then `gpunex login` with the new password.\n');
    }
    await until('the reset mail', () => server.mailDrop().find((m) => /^To: pw@example\.com\r?$/m.test(m) &&
      /^Subject: Set a new password/m.test(m)), 20000, 50);
    assert.ok(!server.mailDrop().some((m) => /^To: nobody@example\.com/m.test(m)));
    assert.equal(gpunex(home, ['password', 'forgot']).code, 2, '--email is required');
  } finally {
    await server.stop();
  }
});
