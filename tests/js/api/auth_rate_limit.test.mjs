// The per-address limit on /v1/auth/signup and /v1/auth/login (auth_rate_limit_per_minute), apart
// from the failed-login limit (tests/scenarios/login_rate_limit.scn): a JSON 429 with Retry-After.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { BACKEND, BIN, TestServer, Client } from '../lib/server.mjs';

test(`${BACKEND}: --auth-rate-limit-per-minute answers 429 on signup and login, not on logout`, async () => {
  const help = spawnSync(path.join(BIN, 'gpunex-server'), ['--help'], { encoding: 'utf8' }).stdout;
  assert.match(help, /auth_rate_limit_per_minute = 60 .*\n.*\/v1\/auth\/signup and \/v1\/auth\/login.*logout is not limited/);

  const server = await new TestServer(['--auth-rate-limit-per-minute', '3']).start();
  try {
    const c = new Client(server.url);
    const password = 'correct-horse-battery';
    assert.equal((await c.request('POST', '/v1/auth/signup',
      { body: { email: 'rae@example.com', password, full_name: 'Rae' } })).status, 201);
    await c.login('rae@example.com', password);
    const wrong = await c.request('POST', '/v1/auth/login', { body: { email: 'rae@example.com', password: 'nope' } });
    assert.equal(wrong.status, 401);

    // The fourth request in the minute, whatever it is, is refused by this limit (one failed login is
    // far from the ten of the failed-login limit).
    const signup = await c.request('POST', '/v1/auth/signup',
      { body: { email: 'sam@example.com', password, full_name: 'Sam' } });
    assert.equal(signup.status, 429);
    assert.match(signup.headers.get('content-type'), /^application\/json/);
    assert.deepEqual(signup.json, { error: { code: 'rate_limited',
      message: 'too many requests from this address; try again later', field: null } });
    const retry = Number(signup.headers.get('retry-after'));
    assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry}`);
    const login = await c.request('POST', '/v1/auth/login', { body: { email: 'rae@example.com', password } });
    assert.equal(login.status, 429);
    assert.equal(login.json.error.code, 'rate_limited');

    // Signed-in requests and logout are not limited.
    assert.equal((await c.request('GET', '/v1/me')).status, 200);
    assert.equal((await c.request('POST', '/v1/auth/logout')).status, 200);
    assert.equal((await c.request('GET', '/v1/me')).status, 401);
  } finally {
    await server.stop();
  }
});
