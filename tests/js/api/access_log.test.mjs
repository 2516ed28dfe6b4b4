// The access log: one JSON line per request on stderr at level info, with the request id a client
// sent (when it is plain and short) or the one the server made, as the response's X-Request-Id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { BACKEND, TestServer, Client, until } from '../lib/server.mjs';

// Every JSON line the server wrote so far (each must parse), and the access-log ones among them.
function logLines(server) {
  const lines = server.logs.join('').split('\n').filter((l) => l.startsWith('{'));
  return lines.map((l) => JSON.parse(l));
}
const requestLines = (server) => logLines(server).filter((e) => e.msg === 'request');

test(`${BACKEND}: every request is logged as a JSON line`, async () => {
  const server = await new TestServer(['--log-level', 'info']).start();
  try {
    const c = new Client(server.url);
    const ok = await c.request('GET', '/healthz', { headers: { 'X-Request-Id': 'access-log-test-1' } });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('x-request-id'), 'access-log-test-1');
    const missing = await c.request('GET', '/v1/no-such-thing?x=1');
    assert.equal(missing.status, 404);
    const tooLong = 'x'.repeat(200);  // not honoured: the server makes its own
    const bad = await c.request('POST', '/v1/auth/login', { body: { email: 'a@example.com' },
      headers: { 'X-Request-Id': tooLong } });
    assert.equal(bad.status, 400);
    assert.notEqual(bad.headers.get('x-request-id'), tooLong);

    const lines = await until('three access-log lines', () => {
      const l = requestLines(server);
      return l.length >= 3 && l;
    }, 10000, 50);
    assert.equal(lines.length, 3);
    for (const l of lines) {
      assert.equal(l.level, 'info');
      assert.equal(typeof l.ts_ms, 'number');
      assert.equal(typeof l.duration_ms, 'number');
      assert.ok(l.duration_ms >= 0 && l.duration_ms < 10000, `duration_ms ${l.duration_ms}`);
      assert.equal(l.remote_ip, '127.0.0.1');
    }
    const [h, nf, login] = lines;
    assert.deepEqual([h.method, h.path, h.route, h.status, h.request_id],
      ['GET', '/healthz', '/healthz', 200, 'access-log-test-1']);
    assert.deepEqual([nf.method, nf.path, nf.route, nf.status, nf.request_id],
      ['GET', '/v1/no-such-thing', '(not found)', 404, missing.headers.get('x-request-id')]);
    assert.match(nf.request_id, /^[A-Za-z0-9_-]{16}$/);
    assert.deepEqual([login.method, login.path, login.route, login.status, login.request_id],
      ['POST', '/v1/auth/login', '/v1/auth/login', 400, bad.headers.get('x-request-id')]);
    assert.equal(login.bytes_in, JSON.stringify({ email: 'a@example.com' }).length);
    assert.equal(login.bytes_out, bad.body.length);
  } finally {
    await server.stop();
  }
});

test(`${BACKEND}: --access-log false logs no requests`, async () => {
  const server = await new TestServer(['--log-level', 'info', '--access-log', 'false']).start();
  try {
    const c = new Client(server.url);
    assert.equal((await c.request('GET', '/healthz')).status, 200);
    assert.equal((await c.request('GET', '/v1/no-such-thing')).status, 404);
    await until('the start-up lines', () => logLines(server).some((e) => e.msg === 'listening'), 10000, 50);
    await sleep(300);
    assert.deepEqual(requestLines(server), []);
  } finally {
    await server.stop();
  }
});
