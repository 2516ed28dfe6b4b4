// Cookie sessions: HttpOnly + SameSite=Strict cookies, CSRF on cookie-authenticated
// mutations, expired sessions refused, graceful shutdown on SIGTERM.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { BACKEND, TestServer, Client } from '../lib/server.mjs';
import { approvedProvider } from '../lib/provider.mjs';
import { postedMachine } from '../lib/rental_machine.mjs';

function sql(server, statement) {
  if (server.db.startsWith('sqlite:')) execFileSync('sqlite3', [server.db.slice(7), statement]);
  else execFileSync('psql', [server.db, '-q', '-c', statement]);
}

test(`${BACKEND}: cookie session, CSRF, expiry`, async () => {
  const server = await new TestServer().start();
  try {
    const c = new Client(server.url);
    await c.request('POST', '/v1/auth/signup',
      { body: { email: 'kim@example.com', password: 'correct-horse-battery', full_name: 'Kim' } });
    const login = await c.request('POST', '/v1/auth/login',
      { body: { email: 'kim@example.com', password: 'correct-horse-battery' } });
    assert.equal(login.status, 200);
    const cookies = login.headers.getSetCookie();
    const session = cookies.find((x) => x.startsWith('gpunex_session='));
    const csrf = cookies.find((x) => x.startsWith('gpunex_csrf='));
    assert.match(session, /HttpOnly/);
    assert.match(session, /SameSite=Strict/);
    assert.doesNotMatch(csrf, /HttpOnly/);
    const cookieHeader = [session, csrf].map((x) => x.split(';')[0]).join('; ');
    const csrfValue = csrf.split(';')[0].split('=')[1];
    assert.equal(csrfValue, login.json.csrf_token);

    const me = await c.request('GET', '/v1/me', { headers: { Cookie: cookieHeader, Authorization: '' } });
    assert.equal(me.status, 200);
    assert.equal(me.json.email, 'kim@example.com');

    // A tampered session cookie is refused, even with the right CSRF token.
    const sessionValue = session.split(';')[0].split('=')[1];
    const last = sessionValue.at(-1) === 'A' ? 'B' : 'A';
    const tampered = `gpunex_session=${sessionValue.slice(0, -1)}${last}; ${csrf.split(';')[0]}`;
    const tamperedMe = await c.request('GET', '/v1/me', { headers: { Cookie: tampered, Authorization: '' } });
    assert.equal(tamperedMe.status, 401);
    assert.equal(tamperedMe.json.error.code, 'invalid_session');
    assert.equal(tamperedMe.headers.get('www-authenticate'), 'Bearer realm="gpunex"', 'a 401 names its scheme');
    const tamperedPost = await c.request('POST', '/v1/auth/logout',
      { headers: { Cookie: tampered, Authorization: '', 'X-CSRF-Token': csrfValue } });
    assert.equal(tamperedPost.status, 401);

    const noCsrf = await c.request('POST', '/v1/auth/logout', { headers: { Cookie: cookieHeader, Authorization: '' } });
    assert.equal(noCsrf.status, 403);
    assert.equal(noCsrf.json.error.code, 'csrf_failed');
    const wrongCsrf = await c.request('POST', '/v1/auth/logout',
      { headers: { Cookie: cookieHeader, Authorization: '', 'X-CSRF-Token': 'nope' } });
    assert.equal(wrongCsrf.status, 403);
    const ok = await c.request('POST', '/v1/auth/logout',
      { headers: { Cookie: cookieHeader, Authorization: '', 'X-CSRF-Token': csrfValue } });
    assert.equal(ok.status, 200);
    const after = await c.request('GET', '/v1/me', { headers: { Cookie: cookieHeader, Authorization: '' } });
    assert.equal(after.status, 401);
    assert.equal(after.json.error.code, 'invalid_session');
    const afterPost = await c.request('POST', '/v1/auth/logout',
      { headers: { Cookie: cookieHeader, Authorization: '', 'X-CSRF-Token': csrfValue } });
    assert.equal(afterPost.status, 401, 'a logged-out session cookie cannot mutate either');

    // An expired session is refused.
    const again = new Client(server.url);
    await again.login('kim@example.com', 'correct-horse-battery');
    assert.equal((await again.request('GET', '/v1/me')).status, 200);
    sql(server, 'UPDATE sessions SET expires_at = 1');
    const expired = await again.request('GET', '/v1/me');
    assert.equal(expired.status, 401);
    assert.equal(expired.json.error.code, 'invalid_session');

    // Session tokens are stored only as hashes.
    const tokenInDb = execFileSync(server.db.startsWith('sqlite:') ? 'sqlite3' : 'psql',
      server.db.startsWith('sqlite:') ? [server.db.slice(7), 'SELECT token_hash FROM sessions']
        : [server.db, '-tA', '-c', 'SELECT token_hash FROM sessions']).toString();
    assert.ok(!tokenInDb.includes(again.token));
  } finally {
    await server.stop();
  }
});

test(`${BACKEND}: metrics count requests by route and status`, async () => {
  const server = await new TestServer().start();
  try {
    const c = new Client(server.url);
    await c.request('GET', '/healthz');
    await c.request('GET', '/v1/nothing-here');
    // /readyz reads the schema version: a select this test makes itself, whatever the workers have run yet
    // (CI21 on PostgreSQL asked before any worker had selected anything).
    assert.equal((await c.request('GET', '/readyz')).status, 200);
    const m = await c.request('GET', '/metrics');
    assert.equal(m.status, 200);
    assert.match(m.headers.get('content-type'), /text\/plain/);
    assert.match(m.body, /gpunex_http_requests_total\{method="GET",route="\/healthz",status="200"\} 1/);
    assert.match(m.body, /gpunex_http_requests_total\{method="GET",route="\(not found\)",status="404"\} 1/);
    assert.match(m.body, /gpunex_http_request_duration_seconds_bucket\{route="\/healthz",le="\+Inf"\} 1/);
    assert.match(m.body, /gpunex_store_statement_duration_seconds_count\{op="select"\} \d+/);
  } finally {
    await server.stop();
  }
});

// The store's side of /metrics, read at the scrape: mail waiting (here no SMTP server answers, so the
// signup's confirmation waits and retries) and the fleet by status, with its GPUs listed or not.
test(`${BACKEND}: metrics give the outbox's backlog and the fleet`, async () => {
  const server = await new TestServer(['--smtp-url', 'smtp://127.0.0.1:9', '--heartbeat-interval', '1']).start();
  let machine;
  try {
    const provider = await approvedProvider(server, 'metrics-provider@example.com');
    machine = await postedMachine(server, provider, { gpus: 2, name: 'metered' });
    const ann = new Client(server.url);
    await ann.signupAndLogin('metrics-customer@example.com');
    const figure = (body, name) => Number(body.match(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm'))?.[1]);
    const m = (await new Client(server.url).request('GET', '/metrics')).body;
    assert.ok(figure(m, 'gpunex_outbox_pending') >= 1, m);
    assert.ok(figure(m, 'gpunex_outbox_oldest_pending_seconds') >= 0, m);
    assert.equal(figure(m, 'gpunex_machines{status="online"}'), 1, m);
    assert.equal(figure(m, 'gpunex_machines{status="offline"}'), 0, m);
    assert.equal(figure(m, 'gpunex_gpus{listed="true"}'), 2, m);
    assert.match(m, /^# TYPE gpunex_worker_round_failures_total counter$/m);
  } finally {
    if (machine) await machine.stop();
    await server.stop();
  }
});

test(`${BACKEND}: SIGTERM stops the server cleanly`, async () => {
  const server = await new TestServer().start();
  const c = new Client(server.url);
  assert.equal((await c.request('GET', '/healthz')).status, 200);
  const r = await server.stop();
  assert.deepEqual(r, { code: 0, signal: null });
});

test(`${BACKEND}: an account changes its own password with the current one: its other sessions end, this one stays`, async () => {
  const server = await new TestServer().start();
  try {
    const here = new Client(server.url);
    await here.signupAndLogin('pat@example.com', 'first-password-1');
    const laptop = new Client(server.url);
    await laptop.login('pat@example.com', 'first-password-1');
    const change = (body) => here.request('POST', '/v1/me/password', { body });

    const wrong = await change({ current_password: 'not-my-password', new_password: 'second-password-2' });
    assert.equal(wrong.status, 400, wrong.body);
    assert.deepEqual([wrong.json.error.field, wrong.json.error.message], ['current_password', 'Current password is wrong']);
    const short = await change({ current_password: 'first-password-1', new_password: 'short' });
    assert.equal(short.status, 400, short.body);
    assert.deepEqual([short.json.error.field, short.json.error.message],
      ['new_password', 'Password must be at least 10 characters']);
    const missing = await change({ current_password: 'first-password-1' });
    assert.equal(missing.status, 400);
    assert.equal(missing.json.error.field, 'new_password');
    assert.equal((await laptop.request('GET', '/v1/me')).status, 200, 'a refused change ends nothing');

    const done = await change({ current_password: 'first-password-1', new_password: 'second-password-2' });
    assert.equal(done.status, 200, done.body);
    assert.deepEqual(done.json, { status: 'password_changed', other_sessions_ended: 1 });
    assert.equal((await here.request('GET', '/v1/me')).status, 200, 'the session that changed it stays');
    assert.equal((await laptop.request('GET', '/v1/me')).status, 401, 'the other session ended');
    const old = await new Client(server.url).request('POST', '/v1/auth/login',
      { body: { email: 'pat@example.com', password: 'first-password-1' } });
    assert.equal(old.status, 401);
    await new Client(server.url).login('pat@example.com', 'second-password-2');
    // The account is told, in case it was not its owner.
    const told = (await here.request('GET', '/v1/notifications')).json.items.filter((n) => n.kind === 'password_changed');
    assert.equal(told.length, 1);
    assert.equal(told[0].link, `${server.url}/#/account`);
    // Nobody signed out, and no provider API key (a session only), changes a password.
    const body = { current_password: 'correct-horse-battery', new_password: 'third-password-3' };
    const anon = await new Client(server.url).request('POST', '/v1/me/password', { body });
    assert.equal(anon.status, 401);
    const { key } = await approvedProvider(server, 'keyed@example.com');
    const keyed = new Client(server.url);
    keyed.token = key;
    const byKey = await keyed.request('POST', '/v1/me/password', { body });
    assert.equal(byKey.status, 403, byKey.body);
    assert.equal(byKey.json.error.code, 'api_key_not_allowed');
  } finally {
    await server.stop();
  }
});
