// gpunex-server admin: create-user makes staff accounts that can log in with their roles, and
// bootstrap (run by `make run` before it serves) makes a first admin once, then nothing: its login
// printed on a terminal, or written to <data-dir>/first-admin.txt (0600) when output is not one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BACKEND, BIN, TestServer, Client } from '../lib/server.mjs';
import { Pty } from '../lib/pty.mjs';

const admin = (args, input) => spawnSync(path.join(BIN, 'gpunex-server'), ['admin', ...args],
  { input, encoding: 'utf8', timeout: 30000 });

async function rolesAfterLogin(url, email, password) {
  const c = new Client(url);
  await c.login(email, password);
  const me = await c.request('GET', '/v1/me');
  assert.equal(me.status, 200, me.body);
  assert.equal(me.json.email, email);
  return me.json.roles;
}

test(`${BACKEND}: admin create-user --role admin and --role reviewer, password on stdin`, async () => {
  const s = await new TestServer().start();
  try {
    for (const [email, role] of [['ada@example.com', 'admin'], ['rita@example.com', 'reviewer']]) {
      const r = admin(['create-user', '--db', s.db, '--email', email, '--role', role, '--full-name', 'Staff',
        '--password-stdin'], `${role}-password-1\n`);
      assert.equal(r.status, 0, r.stderr);
      const roles = ['customer', role].sort();
      assert.match(r.stdout, new RegExp(`^created ${email} \\(usr_\\w+\\) with roles ${roles.join(' ')}\\n$`));
      assert.deepEqual(await rolesAfterLogin(s.url, email, `${role}-password-1`), roles);
    }
    const unknown = admin(['create-user', '--db', s.db, '--email', 'x@example.com', '--role', 'owner',
      '--password-stdin'], 'owner-password-1\n');
    assert.notEqual(unknown.status, 0);
    assert.match(unknown.stderr, /owner/);
  } finally {
    await s.stop();
  }
});

test(`${BACKEND}: admin bootstrap, output not a terminal: the login goes to a 0600 file, not to the output`, async () => {
  // As scripts/run.sh does: bootstrap on the data folder's database, then serve it.
  const s = new TestServer().prepare();
  const file = path.join(s.dir, 'first-admin.txt');
  const first = admin(['bootstrap', '--db', s.db, '--data-dir', s.dir]);
  assert.equal(first.status, 0, first.stderr);
  assert.equal(first.stdout, `First admin account: admin@localhost.localdomain; its password is in ${file} `
    + '(mode 0600; standard output is not a terminal, so it is not printed)\n');
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const m = readFileSync(file, 'utf8').match(/^e-mail: +(\S+)\npassword: (\S+)\n$/);
  assert.ok(m, readFileSync(file, 'utf8'));
  const [, email, password] = m;
  assert.ok(!first.stdout.includes(password) && !first.stderr.includes(password));
  const second = admin(['bootstrap', '--db', s.db, '--data-dir', s.dir]);
  assert.equal(second.status, 0, second.stderr);
  assert.equal(second.stdout, 'An admin account exists already: nothing to do. A lost admin password is set again '
    + 'with `gpunex-server admin set-password --db URL (or --config FILE) --email EMAIL --password-stdin`.\n');
  assert.equal(second.stderr, '');
  await s.start();
  try {
    assert.deepEqual(await rolesAfterLogin(s.url, email, password), ['admin', 'customer']);
    const wrong = await new Client(s.url).request('POST', '/v1/auth/login', { body: { email, password: `${password}x` } });
    assert.equal(wrong.status, 401);
  } finally {
    await s.stop();
  }
});

test(`${BACKEND}: admin bootstrap --email makes the first admin with the operator's own address`, async () => {
  const s = new TestServer().prepare();
  const bad = admin(['bootstrap', '--db', s.db, '--data-dir', s.dir, '--email', 'not an address']);
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /E-mail is not a valid e-mail address/);
  assert.ok(!existsSync(path.join(s.dir, 'first-admin.txt')), 'no login file for an account not made');
  const first = admin(['bootstrap', '--db', s.db, '--data-dir', s.dir, '--email', 'Ops@Example.com']);
  assert.equal(first.status, 0, first.stderr);
  assert.match(first.stdout, /^First admin account: ops@example\.com; its password is in /);
  const [, fileEmail, password] = readFileSync(path.join(s.dir, 'first-admin.txt'), 'utf8')
    .match(/^e-mail: +(\S+)\npassword: (\S+)\n$/);
  assert.equal(fileEmail, 'ops@example.com', 'the file says the address as the account has it');
  await s.start();
  try {
    assert.deepEqual(await rolesAfterLogin(s.url, 'ops@example.com', password), ['admin', 'customer']);
  } finally {
    await s.stop();
  }
});

test(`${BACKEND}: admin bootstrap on a terminal prints the login once and writes no file`, async () => {
  const s = new TestServer().prepare();
  const tty = new Pty([path.join(BIN, 'gpunex-server'), 'admin', 'bootstrap', '--db', s.db, '--data-dir', s.dir]);
  assert.deepEqual(await tty.wait(), { code: 0, signal: null }, tty.text);
  const m = tty.text.match(/^First admin account \(shown once\):\n {2}e-mail: +(\S+)\n {2}password: (\S+)\n$/);
  assert.ok(m, tty.text);
  assert.ok(!existsSync(path.join(s.dir, 'first-admin.txt')));
  await s.start();
  try {
    assert.deepEqual(await rolesAfterLogin(s.url, m[1], m[2]), ['admin', 'customer']);
  } finally {
    await s.stop();
  }
});

test(`${BACKEND}: admin commands read the store and data_dir from the server's --config file; without any store named they refuse`, async () => {
  // An operator runs `gpunex-server admin ... --config /etc/gpunex/server.toml`, the file the server runs from.
  const s = new TestServer().prepare();
  const varDir = path.join(s.dir, 'var-from-config');
  const config = path.join(s.dir, 'server.toml');
  writeFileSync(config, `db = "${s.db}"\ndata_dir = "${varDir}"\n`);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GPUNEX_')));
  const run = (args, input) => spawnSync(path.join(BIN, 'gpunex-server'), args,
    { input, encoding: 'utf8', timeout: 30000, env, cwd: s.dir });

  const boot = run(['admin', 'bootstrap', '--config', config]);  // after the subcommand
  assert.equal(boot.status, 0, boot.stderr);
  assert.ok(existsSync(path.join(varDir, 'first-admin.txt')), boot.stdout);
  const made = run(['--config', config, 'admin', 'create-user', '--email', 'cfg@example.com', '--role', 'reviewer',
    '--password-stdin'], 'reviewer-password-1\n');  // before it
  assert.equal(made.status, 0, made.stderr);

  // No --db, no GPUNEX_DB, no --config: refused, and no var/gpunex.db is made in the current folder.
  const none = run(['admin', 'create-user', '--email', 'x@example.com', '--password-stdin'], 'x-password-12\n');
  assert.equal(none.status, 2);
  assert.match(none.stderr, /which store\? give --db URL, GPUNEX_DB, or --config FILE/);
  // A --config file that names no db is not taken to mean the default store in the current folder.
  const noDb = path.join(s.dir, 'no-db.toml');
  writeFileSync(noDb, 'heartbeat_interval = 20\n');
  const unnamed = run(['admin', 'credit', '--config', noDb, '--email', 'cfg@example.com', '--amount', '1',
    '--reference', 'r1']);
  assert.equal(unnamed.status, 2);
  assert.equal(unnamed.stderr, `error: admin: ${noDb} names no db: give --db URL or GPUNEX_DB\n`);
  assert.ok(!existsSync(path.join(s.dir, 'var')));

  await s.start();
  try {
    assert.deepEqual(await rolesAfterLogin(s.url, 'cfg@example.com', 'reviewer-password-1'), ['customer', 'reviewer']);
  } finally {
    await s.stop();
  }
});

test(`${BACKEND}: admin set-password sets a lost password and ends the account's sessions; grant-role and revoke-role make and unmake staff, never the last admin`, async () => {
  const s = await new TestServer().start();
  try {
    const made = admin(['create-user', '--db', s.db, '--email', 'ops@example.com', '--role', 'admin', '--password-stdin'],
      'first-password-1\n');
    assert.equal(made.status, 0, made.stderr);
    const signedIn = new Client(s.url);
    await signedIn.login('ops@example.com', 'first-password-1');
    assert.equal((await signedIn.request('GET', '/v1/me')).status, 200);

    const set = admin(['set-password', '--db', s.db, '--email', 'OPS@example.com', '--password-stdin'], 'second-password-2\n');
    assert.equal(set.status, 0, set.stderr);
    assert.equal(set.stdout, 'password of ops@example.com set; 1 session ended\n');
    assert.equal((await signedIn.request('GET', '/v1/me')).status, 401, 'the session made with the old password ended');
    const old = await new Client(s.url).request('POST', '/v1/auth/login',
      { body: { email: 'ops@example.com', password: 'first-password-1' } });
    assert.equal(old.status, 401, old.body);
    assert.deepEqual(await rolesAfterLogin(s.url, 'ops@example.com', 'second-password-2'), ['admin', 'customer']);
    const short = admin(['set-password', '--db', s.db, '--email', 'ops@example.com', '--password-stdin'], 'short\n');
    assert.equal(short.status, 1);
    assert.equal(short.stderr, 'error: Password must be at least 10 characters\n');
    const nobody = admin(['set-password', '--db', s.db, '--email', 'nobody@example.com', '--password-stdin'], 'x-password-12\n');
    assert.equal(nobody.stderr, 'error: no account has the e-mail nobody@example.com\n');

    // A customer who signed up is made a reviewer, then not.
    await new Client(s.url).signupAndLogin('rita@example.com', 'rita-password-1');
    const grant = admin(['grant-role', '--db', s.db, '--email', 'rita@example.com', '--role', 'reviewer']);
    assert.equal(grant.status, 0, grant.stderr);
    assert.match(grant.stdout, /^rita@example\.com \(usr_\w+\) now with roles customer reviewer\n$/);
    assert.deepEqual(await rolesAfterLogin(s.url, 'rita@example.com', 'rita-password-1'), ['customer', 'reviewer']);
    assert.equal(admin(['revoke-role', '--db', s.db, '--email', 'rita@example.com', '--role', 'reviewer']).status, 0);
    assert.deepEqual(await rolesAfterLogin(s.url, 'rita@example.com', 'rita-password-1'), ['customer']);
    const again = admin(['revoke-role', '--db', s.db, '--email', 'rita@example.com', '--role', 'reviewer']);
    assert.equal(again.status, 1);
    assert.equal(again.stderr, 'error: rita@example.com is not a reviewer: nothing to take back\n');
    // The provider role comes from an approved application, not from the shell.
    const provider = admin(['grant-role', '--db', s.db, '--email', 'rita@example.com', '--role', 'provider']);
    assert.notEqual(provider.status, 0);
    assert.match(provider.stderr, /provider not in \{reviewer,admin\}/);
    // The only admin keeps the role.
    const last = admin(['revoke-role', '--db', s.db, '--email', 'ops@example.com', '--role', 'admin']);
    assert.equal(last.status, 1);
    assert.equal(last.stderr, 'error: ops@example.com is the only admin: grant another account admin first\n');
    assert.deepEqual(await rolesAfterLogin(s.url, 'ops@example.com', 'second-password-2'), ['admin', 'customer']);

    // A mistyped store is an error, not a new empty database that the command then acts on.
    if (BACKEND === 'sqlite') {
      const typo = path.join(s.dir, 'typo', 'gpunex.db');
      for (const [args, input] of [[['credit', '--email', 'rita@example.com', '--amount', '1', '--reference', 'r1']],
        [['create-user', '--email', 'x@example.com', '--password-stdin'], 'x-password-12\n'],
        [['set-password', '--email', 'ops@example.com', '--password-stdin'], 'x-password-12\n']]) {
        const r = admin([...args, '--db', `sqlite:${typo}`], input);
        assert.equal(r.status, 1, `${args[0]}: ${r.stdout}`);
        assert.equal(r.stderr, `error: no SQLite database at ${typo} (the server makes it at its first start: is --db right?)\n`);
        assert.ok(!existsSync(path.dirname(typo)), args[0]);
      }
    }
  } finally {
    await s.stop();
  }
});

// Every server on one database needs the same server_secret (an approval key sealed by one is revealed
// by another): a server started with another secret is refused, saying what to do; when the old secret
// is lost for good, admin adopt-server-secret makes the new one the database's, and the old is refused.
test(`${BACKEND}: a server with another server_secret than the database's is refused until adopt-server-secret`, async () => {
  const s = await new TestServer().start();
  await s.stop();
  const other = mkdtempSync(path.join(tmpdir(), 'gpunex-other-secret-'));
  const serve = (dir) => spawnSync(path.join(BIN, 'gpunex-server'), ['--db', s.db, '--data-dir', dir,
    '--listen', '127.0.0.1:0', '--log-level', 'warn'], { encoding: 'utf8', timeout: 30000 });
  try {
    const refused = serve(other);
    assert.equal(refused.status, 1, refused.stdout);
    assert.match(refused.stderr, /^error: server_secret: this database's servers use another server_secret \(recorded \d{4}-\d\d-\d\dT/);
    assert.match(refused.stderr, /Give this server the same secret \(GPUNEX_SERVER_SECRET, or the same <data_dir>\/server\.key\)/);
    assert.match(refused.stderr, /gpunex-server admin adopt-server-secret/);
    // The secret's value is nowhere in what the operator is told.
    assert.ok(!refused.stderr.includes(readFileSync(path.join(s.dir, 'server.key'), 'utf8').trim()));

    const adopt = admin(['adopt-server-secret', '--db', s.db, '--data-dir', other]);
    assert.equal(adopt.status, 0, adopt.stderr);
    assert.equal(adopt.stdout, `the database's servers must now use the secret of ${path.join(other, 'server.key')}: ` +
      'give every other server the same one\n');
    const moved = new TestServer();
    moved.dir = other;
    moved.db = s.db;
    await moved.start();
    await moved.stop();
    const old = serve(s.dir);
    assert.equal(old.status, 1);
    assert.match(old.stderr, /this database's servers use another server_secret/);
  } finally {
    rmSync(other, { recursive: true, force: true });
  }
});
