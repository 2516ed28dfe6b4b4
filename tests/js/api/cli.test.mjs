// The gpunex CLI: login keeps the token with mode 0600, whoami, logout, --json.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BACKEND, BIN, TestServer, Client } from '../lib/server.mjs';

function gpunex(home, args, input) {
  const r = spawnSync(path.join(BIN, 'gpunex'), args, {
    input, env: { PATH: process.env.PATH, HOME: home }, encoding: 'utf8',
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test(`${BACKEND}: gpunex login, whoami, logout`, async () => {
  const server = await new TestServer().start();
  const home = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
  try {
    await new Client(server.url).request('POST', '/v1/auth/signup',
      { body: { email: 'cli@example.com', password: 'correct-horse-battery', full_name: 'Cli User' } });

    const bad = gpunex(home, ['--server', server.url, 'login', '--email', 'cli@example.com', '--password-stdin'],
      'wrong-password-1\n');
    assert.equal(bad.code, 1);
    assert.match(bad.err, /e-mail or password is wrong/);

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
    assert.ok(!existsSync(cred));
    const after = gpunex(home, ['--server', server.url, 'whoami']);
    assert.equal(after.code, 1);
    assert.match(after.err, /not logged in/);
  } finally {
    await server.stop();
  }
});
