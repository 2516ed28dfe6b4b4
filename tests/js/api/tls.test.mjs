// HTTPS from the server's own configuration (tls_cert/tls_key in a TOML file): signup and login over
// TLS, and session cookies marked Secure only when the server speaks TLS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BACKEND, TestServer, Client } from '../lib/server.mjs';

// One JSON request over HTTPS, trusting only `ca` (the test's self-signed certificate).
function httpsJson(url, method, p, { body, headers = {}, ca }) {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const h = { ...headers };
  if (payload !== undefined) Object.assign(h, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) });
  return new Promise((resolve, reject) => {
    const req = https.request(url + p, { method, headers: h, ca }, (res) => {
      const protocol = res.socket.getProtocol();
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, json: text ? JSON.parse(text) : null,
        protocol }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const user = { email: 'tess@example.com', password: 'correct-horse-battery', full_name: 'Tess' };

test(`${BACKEND}: tls_cert and tls_key serve HTTPS; session cookies are Secure, HttpOnly, SameSite=Strict`, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-tls-'));
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
    '-keyout', key, '-out', cert], { stdio: 'pipe' });
  const file = path.join(dir, 'gpunex.toml');
  writeFileSync(file, `tls_cert = "${cert}"\ntls_key = "${key}"\n`);
  const server = await new TestServer(['--config', file]).start();
  try {
    const url = `https://127.0.0.1:${server.port}`;
    const ca = readFileSync(cert);
    const signup = await httpsJson(url, 'POST', '/v1/auth/signup', { body: user, ca });
    assert.equal(signup.status, 201, JSON.stringify(signup.json));
    assert.match(signup.protocol, /^TLSv1\.[23]$/);
    const login = await httpsJson(url, 'POST', '/v1/auth/login',
      { body: { email: user.email, password: user.password }, ca });
    assert.equal(login.status, 200);
    const cookies = login.headers['set-cookie'];
    const session = cookies.find((c) => c.startsWith('gpunex_session='));
    const csrf = cookies.find((c) => c.startsWith('gpunex_csrf='));
    assert.deepEqual(session.split('; ').slice(1).sort(),
      ['HttpOnly', 'Max-Age=604800', 'Path=/', 'SameSite=Strict', 'Secure']);
    assert.deepEqual(csrf.split('; ').slice(1).sort(), ['Max-Age=604800', 'Path=/', 'SameSite=Strict', 'Secure']);
    const me = await httpsJson(url, 'GET', '/v1/me', { headers: { Authorization: `Bearer ${login.json.token}` }, ca });
    assert.equal(me.status, 200);
    assert.equal(me.json.email, user.email);
    const logout = await httpsJson(url, 'POST', '/v1/auth/logout',
      { headers: { Authorization: `Bearer ${login.json.token}` }, ca });
    assert.equal(logout.status, 200);
    assert.ok(logout.headers['set-cookie'].every((c) => c.endsWith('; Secure')), logout.headers['set-cookie']);
    // The TLS port does not speak plain HTTP.
    await assert.rejects(fetch(`http://127.0.0.1:${server.port}/healthz`));
  } finally {
    await server.stop();
  }
});

test(`${BACKEND}: without TLS the session cookies are not Secure`, async () => {
  const server = await new TestServer().start();
  try {
    const c = new Client(server.url);
    assert.equal((await c.request('POST', '/v1/auth/signup', { body: user })).status, 201);
    const login = await c.request('POST', '/v1/auth/login', { body: { email: user.email, password: user.password } });
    assert.equal(login.status, 200);
    const cookies = login.headers.getSetCookie();
    assert.equal(cookies.length, 2);
    for (const cookie of cookies) {
      assert.match(cookie, /SameSite=Strict/);
      assert.doesNotMatch(cookie, /Secure/);
    }
  } finally {
    await server.stop();
  }
});
