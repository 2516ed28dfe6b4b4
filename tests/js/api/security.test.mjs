// Security hardening (issue #19): each test sends the attack and checks that it is refused.
// docs/security.md names the boundary each test guards.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { TestServer, Client, canonicalJson, until } from '../lib/server.mjs';
import { storeRows } from '../lib/rentals.mjs';
import { approvedProvider } from '../lib/provider.mjs';

let server;
before(async () => { server = await new TestServer().start(); });
after(async () => { await server.stop(); });

let n = 0;
const email = (what) => `sec-${what}-${++n}.${process.pid}@example.com`;

// nlohmann keeps the last of two equal keys, another reader (a proxy, a WAF) may keep the first.
test('a JSON key given twice is refused on every endpoint, the field named', async () => {
  const c = new Client(server.url);
  const raw = `{"email":"${email('dup')}","password":"correct-horse-battery","full_name":"A","full_name":"B"}`;
  const r = await c.request('POST', '/v1/auth/signup', { raw, headers: { 'Content-Type': 'application/json' } });
  assert.equal(r.status, 400, r.body);
  assert.equal(r.json.error.code, 'duplicate_field');
  assert.equal(r.json.error.field, 'full_name');
  await c.signupAndLogin(email('dup2'));
  const nested = '{"full_name":"X","email":"x@example.com","ups":true,"commitment_months":3,'
    + '"gpus":[{"model":"L40S","model":"H100","count":1}]}';
  const a = await c.request('POST', '/v1/applications', { raw: nested, headers: { 'Content-Type': 'application/json' } });
  assert.equal(a.status, 400, a.body);
  assert.equal(a.json.error.code, 'duplicate_field');
  assert.equal(a.json.error.field, 'model');
});

test('names and application text refuse control characters and bidi overrides, the field named', async () => {
  const c = new Client(server.url);
  for (const fullName of ['Mallory\nBcc: victim@example.com', 'Mallory\u202Egpj.exe', 'a\u2066b', 'esc\u001b[2J', 'x\u0085y']) {
    const r = await c.request('POST', '/v1/auth/signup', { body: { email: email('ctl'), password: 'correct-horse-battery', full_name: fullName } });
    assert.equal(r.status, 400, `${JSON.stringify(fullName)}: ${r.body}`);
    assert.ok(JSON.stringify(r.json.error).includes('full_name'), r.body);
  }
  const me = email('app');
  await c.signupAndLogin(me);
  const app = (over) => ({ full_name: 'Honest Name', email: me, ups: false, commitment_months: 3,
    gpus: [{ model: 'L40S', count: 1, system_ram_gb: 64, download_gbps: 1, upload_gbps: 1, availability: '24/7',
      location: { city: 'Berlin', country: 'DE', region: 'eu-central' } }], ...over });
  for (const [over, field] of [[{ full_name: 'Eve\u202Eenilno' }, 'full_name'], [{ full_name: 'Eve\nX-Header: 1' }, 'full_name'],
    [{ company: 'ACME\u202E' }, 'company'], [{ maintenance_notes: 'ok\u2067' }, 'maintenance_notes']]) {
    const r = await c.request('POST', '/v1/applications', { body: app(over) });
    assert.equal(r.status, 400, r.body);
    assert.ok(JSON.stringify(r.json.error).includes(`"${field}"`), r.body);
  }
  const ok = await c.request('POST', '/v1/applications', { body: app({ maintenance_notes: 'line one\nline two' }) });
  assert.equal(ok.status, 201, ok.body);
});

// A cross-site form can post text/plain with the victim's cookie, or log the victim into the attacker's
// account (login CSRF): the API takes only application/json, and cookie or anonymous state changes
// must come from the server's own origin.
test('login and signup refuse text/plain bodies and foreign origins', async () => {
  const c = new Client(server.url);
  const me = email('csrf');
  const body = JSON.stringify({ email: me, password: 'correct-horse-battery', full_name: 'Victim' });
  const plain = await c.request('POST', '/v1/auth/signup', { raw: body, headers: { 'Content-Type': 'text/plain' } });
  assert.equal(plain.status, 415, plain.body);
  assert.equal(plain.json.error.code, 'unsupported_media_type');
  const form = await c.request('POST', '/v1/auth/signup', { raw: body, headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
  assert.equal(form.status, 415, form.body);
  const foreign = await c.request('POST', '/v1/auth/signup', { raw: body, headers: { Origin: 'https://evil.example' } });
  assert.equal(foreign.status, 403, foreign.body);
  assert.equal(foreign.json.error.code, 'cross_site_request');
  const crossSite = await c.request('POST', '/v1/auth/signup', { raw: body, headers: { 'Sec-Fetch-Site': 'cross-site' } });
  assert.equal(crossSite.status, 403, crossSite.body);
  // The dashboard's own requests: same origin.
  const own = await c.request('POST', '/v1/auth/signup', { raw: body,
    headers: { Origin: server.url, 'Sec-Fetch-Site': 'same-origin', 'Content-Type': 'application/json; charset=utf-8' } });
  assert.equal(own.status, 201, own.body);
  const login = JSON.stringify({ email: me, password: 'correct-horse-battery' });
  const evilLogin = await c.request('POST', '/v1/auth/login', { raw: login, headers: { Origin: 'http://evil.example' } });
  assert.equal(evilLogin.status, 403, evilLogin.body);
  const plainLogin = await c.request('POST', '/v1/auth/login', { raw: login, headers: { 'Content-Type': 'text/plain;charset=UTF-8' } });
  assert.equal(plainLogin.status, 415, plainLogin.body);
  // A cookie session's state change from another site is refused even with the right CSRF token.
  const ok = await c.request('POST', '/v1/auth/login', { raw: login, headers: { Origin: server.url } });
  assert.equal(ok.status, 200, ok.body);
  const cookie = ok.headers.get('set-cookie').split(';')[0];
  const csrf = ok.json.csrf_token;
  const out = await c.request('POST', '/v1/auth/logout', { headers: { Cookie: cookie, 'X-CSRF-Token': csrf ?? '', Origin: 'https://evil.example' } });
  assert.equal(out.status, 403, out.body);
});

const mode = (p) => statSync(p).mode & 0o777;

// Another local user must not read mails (API keys, links) or the database (hashes, sessions).
test('the mail drop and the SQLite database are 0600 in 0700 folders', async () => {
  const s = await new TestServer(['--mail-poll-interval-ms', '100']).start();
  try {
    const c = new Client(s.url);
    const me = email('mail');
    await c.signupAndLogin(me);
    const app = await c.request('POST', '/v1/applications', { body: { full_name: 'Mail Owner', email: me, ups: false,
      commitment_months: 3, gpus: [{ model: 'L40S', count: 1, system_ram_gb: 64, download_gbps: 1, upload_gbps: 1,
        availability: '24/7', location: { city: 'Berlin', country: 'DE', region: 'eu-central' } }] } });
    assert.equal(app.status, 201, app.body);
    assert.equal((await c.request('POST', `/v1/applications/${app.json.id}/submit`)).status, 200);
    const dir = path.join(s.dir, 'mail');
    const files = await until('a mail in the drop', () => {
      try { const f = readdirSync(dir).filter((n) => n.endsWith('.eml')); return f.length ? f : null; } catch { return null; }
    }, 20000);
    assert.equal(mode(dir), 0o700, 'the mail folder');
    for (const f of files) assert.equal(mode(path.join(dir, f)), 0o600, f);
    if (s.db.startsWith('sqlite:')) {
      const db = s.db.slice(7);
      for (const f of [db, `${db}-wal`, `${db}-shm`]) {
        try { statSync(f); } catch { continue; }
        assert.equal(mode(f), 0o600, f);
      }
    }
  } finally {
    await s.stop();
  }
});

// A stored plain SHA-256 of {"email","password"} is guessed offline without argon2.
test('a signup with an Idempotency-Key does not store a plain hash of its body', async () => {
  const c = new Client(server.url);
  const body = { email: email('idem'), password: 'correct-horse-battery', full_name: 'Idem' };
  const key = `sec-${process.pid}-${Date.now()}`;
  const r = await c.request('POST', '/v1/auth/signup', { body, headers: { 'Idempotency-Key': key } });
  assert.equal(r.status, 201, r.body);
  const again = await c.request('POST', '/v1/auth/signup', { body, headers: { 'Idempotency-Key': key } });
  assert.equal(again.status, 201, again.body);
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  const plain = createHash('sha256').update(`POST /v1/auth/signup\n${canonicalJson(body)}`).digest('hex');
  const rows = storeRows(server, 'SELECT idem_key, request_hash, body FROM idempotency_keys');
  assert.ok(rows.length > 0);
  for (const [k, hash, stored] of rows) {
    assert.notEqual(hash, plain, 'the plain SHA-256 of the body is stored');
    assert.notEqual(k, key, 'the Idempotency-Key is stored in clear');
    assert.ok(!stored.includes(body.email), 'the answer is stored in clear');
  }
});

test('the SMTP URL\'s password never reaches the log or the help', async () => {
  const s = await new TestServer(['--smtp-url', 'smtp://mailer:hunter2-secret@127.0.0.1:1', '--log-level', 'info']).start();
  try {
    await until('the mailer line', () => s.logs.join('').includes('"mail"') || null, 10000);
  } finally {
    await s.stop();
  }
  const logs = s.logs.join('');
  assert.ok(logs.includes('smtp://***@127.0.0.1:1'), logs);
  assert.ok(!logs.includes('hunter2'), logs);
});

test('--web-dir serves regular files only: no NUL in names, no symlinks', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-web-'));
  writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>ok</title>');
  const secret = path.join(mkdtempSync(path.join(tmpdir(), 'gpunex-secret-')), 'secret.txt');
  writeFileSync(secret, 'top secret');
  symlinkSync(secret, path.join(dir, 'leak.txt'));
  const s = await new TestServer(['--web-dir', dir]).start();
  try {
    const c = new Client(s.url);
    const index = await c.request('GET', '/index.html');
    assert.equal(index.status, 200);
    const nul = await c.request('GET', '/index.html%00.png');
    assert.equal(nul.status, 404, `${nul.headers.get('content-type')} ${nul.body}`);
    const link = await c.request('GET', '/leak.txt');
    assert.equal(link.status, 404, link.body);
    assert.ok(!link.body.includes('top secret'));
  } finally {
    await s.stop();
  }
});

// One client holding idle connections must not take every slot until the timeout.
test('connections are capped per client address, with a log line, and the server keeps serving', async () => {
  const net = await import('node:net');
  const s = await new TestServer(['--max-connections-per-ip', '5']).start();
  const sockets = [];
  try {
    const closedEarly = [];
    for (let i = 0; i < 12; i++) {
      const sock = net.connect(s.port, '127.0.0.1');
      await new Promise((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
      const closed = new Promise((resolve) => sock.once('close', () => resolve(true)));
      sock.on('error', () => {});
      sockets.push(sock);
      closedEarly.push(closed);
    }
    const closedNow = await Promise.all(closedEarly.map((p) => Promise.race([p, new Promise((r) => setTimeout(() => r(false), 1500))])));
    assert.equal(closedNow.filter(Boolean).length, 7, `refused: ${closedNow}`);
    await until('the cap\'s log line', () => s.logs.join('').includes('too many open connections') || null, 5000);
    assert.match(s.logs.join(''), /max_connections_per_ip/);
    for (const sock of sockets) sock.destroy();
    await until('a request served again', async () => (await new Client(s.url).request('GET', '/healthz')).status === 200 || null, 10000);
  } finally {
    for (const sock of sockets) sock.destroy();
    await s.stop();
  }
});

// Behind a TLS-terminating proxy on this host: the proxy's headers are believed only from it.
test('trusted_proxies: forwarded client address and HTTPS believed only from the proxy; /metrics needs the token', async () => {
  const s = await new TestServer(['--trusted-proxies', '127.0.0.1', '--public-url', 'https://gpunex.example.com', '--metrics-token', 'metrics-secret-1',
    '--log-level', 'info']).start();
  const untrusted = await new TestServer(['--log-level', 'info']).start();
  try {
    const c = new Client(s.url);
    const me = email('proxy');
    await c.request('POST', '/v1/auth/signup', { body: { email: me, password: 'correct-horse-battery', full_name: 'Proxied' } });
    const fwd = { 'X-Forwarded-For': '203.0.113.7', 'X-Forwarded-Proto': 'https' };
    const login = await c.request('POST', '/v1/auth/login', { body: { email: me, password: 'correct-horse-battery' }, headers: fwd });
    assert.equal(login.status, 200, login.body);
    assert.match(login.headers.get('set-cookie'), /; Secure/);
    assert.match(login.headers.get('strict-transport-security') || '', /max-age=\d+/);
    await until('the access log line with the client address', () => s.logs.join('').includes('"remote_ip":"203.0.113.7"') || null, 5000);
    // The same headers from an address not in trusted_proxies are not believed.
    const u = new Client(untrusted.url);
    await u.request('POST', '/v1/auth/signup', { body: { email: me, password: 'correct-horse-battery', full_name: 'Direct' } });
    const direct = await u.request('POST', '/v1/auth/login', { body: { email: me, password: 'correct-horse-battery' }, headers: fwd });
    assert.equal(direct.status, 200, direct.body);
    assert.doesNotMatch(direct.headers.get('set-cookie'), /Secure/);
    assert.equal(direct.headers.get('strict-transport-security'), null);
    assert.ok(!untrusted.logs.join('').includes('203.0.113.7'), 'an untrusted X-Forwarded-For reached the log');
    // /metrics: a proxied request from loopback is no longer the operator; the token is.
    assert.equal((await c.request('GET', '/metrics', { headers: fwd })).status, 403);
    assert.equal((await c.request('GET', '/metrics')).status, 403, 'with a token set, loopback alone is not enough');
    const withToken = await c.request('GET', '/metrics', { headers: { Authorization: 'Bearer metrics-secret-1' } });
    assert.equal(withToken.status, 200, withToken.body);
    assert.equal((await u.request('GET', '/metrics', { headers: { 'X-Forwarded-For': '198.51.100.1' } })).status, 403,
      'a loopback request through a proxy is not the operator');
    assert.equal((await u.request('GET', '/metrics')).status, 200, 'loopback without a proxy or token set');
  } finally {
    await s.stop();
    await untrusted.stop();
  }
});

// A copy of the database (a backup, a dump, another local user before the files were 0600) must not hold
// a working API key, and without encrypted mail the key must not travel by mail: the approval key waits
// sealed under the server key (<data_dir>/server.key, 0600), and the mail sends the applicant to the reveal.
test('the approval key is sealed at rest and mailed only over TLS; the mail drop gets a link instead', async () => {
  const s = await new TestServer(['--mail-poll-interval-ms', '100']).start();
  try {
    const me = email('sealed');
    const p = await approvedProvider(s, me, { reveal: false, confirmEmail: true });
    const rows = storeRows(s, `SELECT secret FROM api_key_reveals WHERE api_key_id = '${p.keyId}'`);
    assert.equal(rows.length, 1);
    assert.ok(rows[0][0].length > 40, 'a sealed copy is kept');
    assert.doesNotMatch(rows[0][0], /gpx_/, 'the key is kept in clear');
    assert.equal(mode(path.join(s.dir, 'server.key')), 0o600, 'the server key');
    const dir = path.join(s.dir, 'mail');
    const approval = await until('the approval mail', () => {
      try {
        return readdirSync(dir).filter((f) => f.endsWith('.eml')).map((f) => readFileSync(path.join(dir, f), 'utf8'))
          .find((t) => /^Subject: GPUnex: you are approved/m.test(t) && t.includes(`To: ${me}`)) || null;
      } catch { return null; }
    }, 20000);
    assert.doesNotMatch(approval, /gpx_/, 'the approval mail in the drop carries the key');
    assert.ok(approval.includes(`${s.url}/#/applications/${p.applicationId}`), approval);
    const shown = await p.client.request('POST', `/v1/provider/api-keys/${p.keyId}/reveal`);
    assert.equal(shown.status, 200, shown.body);
    assert.match(shown.json.api_key, /^gpx_/);
    const again = await p.client.request('POST', `/v1/provider/api-keys/${p.keyId}/reveal`);
    assert.equal(again.status, 410, again.body);
    // The key, read back from its seal, works.
    const keyed = new Client(s.url);
    const mine = await keyed.request('GET', '/v1/provider/api-keys', { headers: { Authorization: `Bearer ${shown.json.api_key}` } });
    assert.equal(mine.status, 200, mine.body);
  } finally {
    await s.stop();
  }
});

// Failed logins slow the guesser, not the owner: counted per account and per address with waits that
// grow (1 s, doubling), never a lockout; a stranger's failures do not stop the owner on another client.
test('failed logins wait per account and per address, growing, and never lock the owner out', async () => {
  const s = await new TestServer(['--trusted-proxies', '127.0.0.0/8', '--public-url', 'https://gpunex.example.com', '--auth-rate-limit-per-minute', '100000']).start();
  try {
    const c = new Client(s.url);
    const owner = email('owner');
    const password = 'correct-horse-battery';
    assert.equal((await c.request('POST', '/v1/auth/signup', { body: { email: owner, password, full_name: 'Owner' } })).status, 201);
    const from = (ip, body) => c.request('POST', '/v1/auth/login', { body, headers: { 'X-Forwarded-For': ip } });
    // A stranger guesses from one address: four answered, then each next try waits.
    for (let i = 0; i < 4; i++) assert.equal((await from('203.0.113.66', { email: owner, password: `guess-${i}` })).status, 401);
    const held = await from('203.0.113.66', { email: owner, password });
    assert.equal(held.status, 429, held.body);
    assert.equal(held.json.error.code, 'too_many_failed_logins');
    const retry = Number(held.headers.get('retry-after'));
    assert.ok(retry >= 1 && retry <= 2, `Retry-After ${retry}`);
    // The owner, on another client, is not held back by the stranger's failures.
    const mine = await from('198.51.100.10', { email: owner, password });
    assert.equal(mine.status, 200, mine.body);
    // After the wait, the right password works from the stranger's address too (no lockout), and each
    // further failure there doubles the wait.
    await sleep(retry * 1000 + 100);
    assert.equal((await from('203.0.113.66', { email: owner, password: 'guess-5' })).status, 401);
    const longer = await from('203.0.113.66', { email: owner, password });
    assert.equal(longer.status, 429);
    assert.ok(Number(longer.headers.get('retry-after')) >= 2, `doubled: ${longer.headers.get('retry-after')}`);
    await sleep(Number(longer.headers.get('retry-after')) * 1000 + 100);
    assert.equal((await from('203.0.113.66', { email: owner, password })).status, 200, 'the right password after the wait');
    // Per address: one address guessing across many accounts (ten free, then one answered) waits too,
    // whatever account it tries next.
    for (let i = 0; i < 11; i++) {
      assert.equal((await from('203.0.113.77', { email: email(`nobody${i}`), password: 'x-guess' })).status, 401);
    }
    const spray = await from('203.0.113.77', { email: email('nobody-else'), password: 'x-guess' });
    assert.equal(spray.status, 429, spray.body);
    assert.equal((await from('198.51.100.11', { email: owner, password })).status, 200);
  } finally {
    await s.stop();
  }
});

// argon2 (tens of ms and ~64 MiB per login) runs on its own threads behind a bounded queue: a flood of
// logins gets 503 busy for what does not fit, and the I/O threads keep answering everything else.
test('a flood of logins is queued off the I/O threads and turned away with 503 when full', async () => {
  const s = await new TestServer(['--password-threads', '1', '--password-queue', '2', '--login-free-failures', '1000000',
    '--auth-rate-limit-per-minute', '1000000']).start();
  try {
    const c = new Client(s.url);
    const me = email('flood');
    await c.request('POST', '/v1/auth/signup', { body: { email: me, password: 'correct-horse-battery', full_name: 'Flood' } });
    const flood = [...Array(60).keys()].map((i) => c.request('POST', '/v1/auth/login',
      { body: { email: me, password: `wrong-${i}` }, headers: { 'X-Forwarded-For': `203.0.113.${i}` } }));
    // While the flood waits for the password thread, other requests are answered at once.
    const t0 = Date.now();
    const health = await c.request('GET', '/healthz');
    const healthMs = Date.now() - t0;
    const answers = await Promise.all(flood);
    assert.equal(health.status, 200);
    const statuses = answers.map((r) => r.status);
    assert.ok(statuses.every((st) => st === 401 || st === 429 || st === 503), statuses.join(','));
    const busy = answers.filter((r) => r.status === 503);
    assert.ok(busy.length > 0, `no 503 busy among ${statuses.join(',')}`);
    assert.equal(busy[0].json.error.code, 'busy');
    assert.equal(busy[0].headers.get('retry-after'), '1');
    assert.ok(healthMs < 1000, `/healthz took ${healthMs} ms during the flood`);
    // The owner is never locked out, but may be asked to wait: the flood's failures that reached the
    // password thread came from this address too (how many depends on the machine's speed; under the
    // sanitizers more than the 3 free ones did). One wait of Retry-After (never past the 60 s cap), then
    // the right password works.
    const login = () => c.request('POST', '/v1/auth/login', { body: { email: me, password: 'correct-horse-battery' } });
    let ok = await login();
    if (ok.status === 429) {
      const wait = Number(ok.headers.get('retry-after'));
      assert.ok(wait >= 1 && wait <= 60, `the owner waits ${wait} s`);
      await sleep(wait * 1000 + 100);
      ok = await login();
    }
    assert.equal(ok.status, 200, ok.body);
  } finally {
    await s.stop();
  }
});

// The application form's `email` is whatever the applicant typed: mail about the application goes to the
// account's own address, so nobody can have the platform write to a stranger.
test('mail about an application goes to the account\'s address, never the form\'s', async () => {
  const s = await new TestServer(['--mail-poll-interval-ms', '100']).start();
  try {
    const c = new Client(s.url);
    const me = email('acct');
    await c.signupAndLogin(me);
    await s.confirmEmail(c, me);
    const victim = email('victim');
    const app = await c.request('POST', '/v1/applications', { body: { full_name: 'Mallory', email: victim, ups: false,
      commitment_months: 3, gpus: [{ model: 'L40S', count: 1, system_ram_gb: 64, download_gbps: 1, upload_gbps: 1,
        availability: '24/7', location: { city: 'Berlin', country: 'DE', region: 'eu-central' } }] } });
    assert.equal(app.status, 201, app.body);
    assert.equal((await c.request('POST', `/v1/applications/${app.json.id}/submit`)).status, 200);
    const rows = await until('the submission mail', () => {
      const r = storeRows(s, "SELECT to_addr FROM outbox WHERE kind = 'application_submitted'");
      return r.length ? r : null;
    }, 10000);
    assert.deepEqual(rows.map((r) => r[0]), [me]);
  } finally {
    await s.stop();
  }
});

// The installer hands the agent its key as a file: one other users may read is refused (the key would be theirs).
test('gpunex-agent --api-key-file refuses a key file that other users may read', async () => {
  const { spawnSync } = await import('node:child_process');
  const { chmodSync } = await import('node:fs');
  const { BIN } = await import('../lib/server.mjs');
  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-keyfile-'));
  const file = path.join(dir, 'agent.key');
  writeFileSync(file, 'gpx_not-a-real-key\n');
  chmodSync(file, 0o644);
  const r = spawnSync(path.join(BIN, 'gpunex-agent'), ['run', '--server', 'http://127.0.0.1:1', '--data-dir', dir,
    '--api-key-file', file, '--simulate', 'L4:1'], { encoding: 'utf8', timeout: 10000, env: { ...process.env, GPUNEX_API_KEY: '' } });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /--api-key-file .*readable by other users; chmod 600 it/);
});
