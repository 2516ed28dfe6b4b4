// gpunex-server's configuration: --help lists every key, a bad value exits naming
// the key, TOML < environment < flags, and operator accounts from the shell.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BACKEND, BIN, TestServer, Client } from '../lib/server.mjs';

const server = (args, env = {}) => spawnSync(path.join(BIN, 'gpunex-server'), args,
  { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 20000 });

test('--help documents every configuration key', () => {
  const r = server(['--help']);
  assert.equal(r.status, 0);
  for (const key of ['listen', 'db', 'heartbeat_interval', 'tls_cert', 'tls_key', 'body_limit_bytes',
    'GPUNEX_LISTEN', 'GPUNEX_DB', 'GPUNEX_HEARTBEAT_INTERVAL', '--heartbeat-interval', '--config']) {
    assert.ok(r.stdout.includes(key), `--help lacks ${key}`);
  }
});

test('an invalid value stops the server with a message naming the key', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-cfg-'));
  let r = server(['--heartbeat-interval', 'soon', '--db', `sqlite:${dir}/x.db`]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /heartbeat_interval must be a whole number/);
  r = server(['--db', `sqlite:${dir}/x.db`], { GPUNEX_LISTEN: 'no-port' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /environment: listen must be HOST:PORT/);
  const file = path.join(dir, 'bad.toml');
  writeFileSync(file, 'body_limit_bytes = "big"\n');
  r = server(['--config', file]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /bad\.toml: body_limit_bytes must be a whole number/);
  writeFileSync(file, 'colour = "blue"\n');
  r = server(['--config', file]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unknown configuration key 'colour'/);
});

test(`${BACKEND}: TOML < environment < flags`, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-cfg-'));
  const file = path.join(dir, 'gpunex.toml');
  // The file asks for a tiny body limit; the environment raises it; the flag (TestServer's --listen) wins for listen.
  writeFileSync(file, 'body_limit_bytes = 2048\nlisten = "127.0.0.1:1"\n');
  const s = await new TestServer(['--config', file], { GPUNEX_BODY_LIMIT_BYTES: '4096' }).start();
  try {
    const c = new Client(s.url);
    const small = await c.request('POST', '/v1/auth/signup', { raw: 'x'.repeat(3000) });
    assert.equal(small.status, 400);
    const big = await c.request('POST', '/v1/auth/signup', { raw: 'x'.repeat(5000) });
    assert.equal(big.status, 413);
  } finally {
    await s.stop();
  }
});

test(`${BACKEND}: admin create-user makes a reviewer who can log in`, async () => {
  const s = await new TestServer().start();
  try {
    s.createUser('rita@example.com', 'reviewer-password-1', 'reviewer', 'Rita Reviewer');
    const c = new Client(s.url);
    const login = await c.login('rita@example.com', 'reviewer-password-1');
    assert.deepEqual(login.user.roles, ['customer', 'reviewer']);
    const dup = spawnSync(path.join(BIN, 'gpunex-server'), ['admin', 'create-user', '--db', s.db, '--email',
      'rita@example.com', '--role', 'reviewer', '--password-stdin'], { input: 'reviewer-password-1\n', encoding: 'utf8' });
    assert.equal(dup.status, 1);
    assert.match(dup.stderr, /already exists/);
    const short = spawnSync(path.join(BIN, 'gpunex-server'), ['admin', 'create-user', '--db', s.db, '--email',
      'x@example.com', '--role', 'admin', '--password-stdin'], { input: 'short\n', encoding: 'utf8' });
    assert.equal(short.status, 1);
    assert.match(short.stderr, /password must be at least 10 characters/);
  } finally {
    await s.stop();
  }
});
