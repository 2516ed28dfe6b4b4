// gpunex-server admin: create-user makes staff accounts that can log in with their roles, and
// bootstrap (run by `make run` before it serves) prints a first admin login once, then nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { BACKEND, BIN, TestServer, Client } from '../lib/server.mjs';

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

test(`${BACKEND}: admin bootstrap prints a first admin login once`, async () => {
  // As scripts/run.sh does: bootstrap on the data folder's database, then serve it.
  const s = new TestServer().prepare();
  const first = admin(['bootstrap', '--db', s.db]);
  assert.equal(first.status, 0, first.stderr);
  const m = first.stdout.match(/^First admin account \(shown once\):\n {2}e-mail: +(\S+)\n {2}password: (\S+)\n$/);
  assert.ok(m, first.stdout);
  const [, email, password] = m;
  const second = admin(['bootstrap', '--db', s.db]);
  assert.equal(second.status, 0, second.stderr);
  assert.equal(second.stdout, '');
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
