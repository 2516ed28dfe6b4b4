// Mail through a real SMTP server (Debian python3-aiosmtpd on a loopback port):
// the onboarding flow's mails arrive as proper RFC 5322 messages, the approval
// mail carries the install command with this server's URL and, over this plain
// SMTP (no TLS required), a link to the one-time reveal instead of the API key
// (issue #19; the key-carrying path is tests/unit/mail_worker_test.cpp), the
// rejection carries the reviewer's note, a mail queued while the SMTP server is
// down survives a restart of both, a refused mail is retried with growing delays
// and delivered once, a mail refused too often is given up with no secret kept,
// and without SMTP each mail is an .eml file under <data dir>/mail/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BACKEND, TestServer, Client, until } from '../lib/server.mjs';
import { freePort, SmtpSink } from '../lib/smtp.mjs';

// The outbox rows, oldest first: {kind, attempts, secret ('kept' or 'none'), sent, last_error}.
function outbox(server) {
  const q = "SELECT kind, attempts, CASE WHEN secret IS NULL THEN 'none' ELSE 'kept' END, "
    + "CASE WHEN sent_at IS NULL THEN 'no' ELSE 'yes' END, COALESCE(last_error, '') FROM outbox ORDER BY created_at, id";
  const out = server.db.startsWith('sqlite:')
    ? execFileSync('sqlite3', ['-separator', '|', server.db.slice(7), q]).toString()
    : execFileSync('psql', [server.db, '-tA', '-F', '|', '-c', q]).toString();
  return out.split('\n').filter(Boolean).map((l) => {
    const [kind, attempts, secret, sent, ...err] = l.split('|');
    return { kind, attempts: Number(attempts), secret, sent: sent === 'yes', last_error: err.join('|') };
  });
}

const subjectHas = (s) => (m) => new RegExp(`^Subject: .*${s}`, 'm').test(m);

function application(email, name) {
  return {
    full_name: name, email, company: 'Mail Test Ltd',
    gpus: [{ model: 'H100-SXM', count: 8, system_ram_gb: 2048, download_gbps: 10, upload_gbps: 10, availability: '24/7',
      location: { city: 'Dublin', country: 'IE', region: 'eu-west' } },
    { model: 'L4', count: 2, system_ram_gb: 64, download_gbps: 2, upload_gbps: 2, availability: '24/7',
      location: { city: 'Cork', country: 'IE', region: 'eu-west' } }],
    ups: true, commitment_months: 12,
  };
}

// The applicant signs up and opens the confirmation link read by `confirmFrom` (account mail goes only to a
// confirmed address), or, without it, is an account the operator made (confirmed as made), so the mails
// counted below are only the onboarding's.
async function applyAndSubmit(server, email, name, confirmFrom) {
  const c = new Client(server.url);
  if (confirmFrom) {
    await c.signupAndLogin(email, 'correct-horse-battery', name);
    await server.confirmEmail(c, email, confirmFrom);
  } else {
    server.createUser(email, 'correct-horse-battery', 'customer', name);
    await c.login(email, 'correct-horse-battery');
  }
  const created = await c.request('POST', '/v1/applications', { body: application(email, name) });
  assert.equal(created.status, 201, created.body);
  const sub = await c.request('POST', `/v1/applications/${created.json.id}/submit`);
  assert.equal(sub.status, 200, sub.body);
  return { client: c, id: created.json.id };
}

function serverArgs(smtpPort) {
  return ['--smtp-url', `smtp://127.0.0.1:${smtpPort}`, '--mail-from', 'GPUnex <noreply@gpunex.test>',
    '--mail-poll-interval-ms', '200', '--mail-retry-base-ms', '200'];
}

test(`${BACKEND}: onboarding mails reach a real SMTP server`, async () => {
  const smtpPort = await freePort();
  const sink = await new SmtpSink(smtpPort, mkdtempSync(path.join(tmpdir(), 'gpunex-smtp-'))).start();
  const server = await new TestServer(serverArgs(smtpPort)).start();
  try {
    const { id } = await applyAndSubmit(server, 'ada@example.com', 'Ada Lovelace', () => sink.messages());
    const submitted = await sink.waitFor(subjectHas('we received'), 'about the submission');
    assert.match(submitted, /^X-Envelope-To: ada@example\.com/m);
    assert.match(submitted, /^X-Envelope-From: noreply@gpunex\.test/m);
    assert.match(submitted, /^Date: \w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} \+0000/m);
    assert.match(submitted, /^Message-ID: <mail_\w+@gpunex\.test>/m);
    assert.match(submitted, /^From: GPUnex <noreply@gpunex\.test>/m);
    assert.match(submitted, /^To: ada@example\.com/m);
    assert.match(submitted, /expect our answer by \w+day, \d{2} \w+ \d{4}/);
    assert.match(submitted, new RegExp(`${id}`));

    server.createUser('rita@example.com', 'operator-password-1', 'reviewer');
    const rita = new Client(server.url);
    await rita.login('rita@example.com', 'operator-password-1');
    const ask = await rita.request('POST', `/v1/review/applications/${id}/decision`,
      { body: { decision: 'needs_info', note: 'Which PSU feeds the H100 host?' } });
    assert.equal(ask.status, 200, ask.body);
    const needsInfo = await sink.waitFor(subjectHas('more information'), 'asking for more information');
    assert.match(needsInfo, /Which PSU feeds the H100 host\?/);
    assert.ok(needsInfo.includes(`${server.url}/#/applications/${id}`), 'needs_info mail links the application');

    const ada = new Client(server.url);
    await ada.login('ada@example.com', 'correct-horse-battery');
    assert.equal((await ada.request('POST', `/v1/applications/${id}/submit`)).status, 200);
    const ok = await rita.request('POST', `/v1/review/applications/${id}/decision`,
      { body: { decision: 'approve', tier: 'enterprise', note: 'Welcome' } });
    assert.equal(ok.status, 200, ok.body);
    assert.ok(!('api_key' in ok.json), 'the reviewer never sees the key');
    const key = await revealKey(server, 'ada@example.com', ok.json.api_key_id);
    assert.match(key, /^gpx_[A-Za-z0-9_-]{43}$/);
    const approved = await sink.waitFor(subjectHas('approved'), 'about the approval');
    assert.match(approved, /^Subject: GPUnex: you are approved as an Enterprise provider\r?\n/m);
    assert.ok(approved.includes(`curl -fsSL ${server.url}/agent/install.sh | bash`), approved);
    assert.ok(!approved.includes(key) && !/gpx_/.test(approved), 'plain SMTP: the approval mail carries no API key');
    assert.ok(approved.includes(`${server.url}/#/applications/${id}`), 'the approval mail links the one-time reveal');
    assert.ok(!server.logs.join('').includes(key), 'the API key never reaches the logs');

    // A rejection tells the applicant why, in the reviewer's words.
    const { id: bobApp } = await applyAndSubmit(server, 'bob@example.com', 'Bob Builder', () => sink.messages());
    const no = await rita.request('POST', `/v1/review/applications/${bobApp}/decision`,
      { body: { decision: 'reject', note: 'Your uplink is below 1 Gbit/s; apply again after the upgrade.' } });
    assert.equal(no.status, 200, no.body);
    const rejected = await sink.waitFor((m) => /^To: bob@example\.com/m.test(m) && /not approved/.test(m),
      'about the rejection');
    assert.match(rejected, /^Subject: GPUnex: your provider application\r?\n/m);
    assert.match(rejected, /Hello Bob Builder,/);
    assert.match(rejected, /Your uplink is below 1 Gbit\/s; apply again after the upgrade\./);
    assert.ok(rejected.includes(`${server.url}/#/applications/${bobApp}`), 'the rejection links the application');
    assert.doesNotMatch(rejected, /gpx_/);
  } finally {
    await server.stop();
    await sink.stop();
  }
});

test(`${BACKEND}: a mail queued while SMTP is down is delivered after a restart`, async () => {
  const smtpPort = await freePort();
  const sink = new SmtpSink(smtpPort, mkdtempSync(path.join(tmpdir(), 'gpunex-smtp-')));
  const server = await new TestServer(serverArgs(smtpPort)).start();
  try {
    // No SMTP server yet: the worker fails, backs off and keeps the mail.
    await applyAndSubmit(server, 'bob@example.com', 'Bob Builder');
    await sleep(1000);
    await server.stop();
    assert.deepEqual(readdirSync(sink.dir), []);

    await sink.start();
    await server.start();
    const m = await sink.waitFor(subjectHas('we received'), 'after the restart', 20000);
    assert.match(m, /^To: bob@example\.com/m);
    await sleep(1000);
    assert.equal(sink.messages().length, 1, 'delivered exactly once');
  } finally {
    await server.stop();
    await sink.stop().catch(() => {});
  }
});

// The applicant's one reveal of the key issued at approval (the reviewer's answer never has it).
async function revealKey(server, email, keyId) {
  const owner = new Client(server.url);
  await owner.login(email, 'correct-horse-battery');
  const shown = await owner.request('POST', `/v1/provider/api-keys/${keyId}/reveal`);
  assert.equal(shown.status, 200, shown.body);
  return shown.json.api_key;
}

// Submits one application and approves it: two mails, the second about the approval (no key over plain SMTP).
async function applyAndApprove(server, email, name) {
  const { id } = await applyAndSubmit(server, email, name);
  server.createUser('rita@example.com', 'operator-password-1', 'reviewer');
  const rita = new Client(server.url);
  await rita.login('rita@example.com', 'operator-password-1');
  const ok = await rita.request('POST', `/v1/review/applications/${id}/decision`,
    { body: { decision: 'approve', tier: 'community' } });
  assert.equal(ok.status, 200, ok.body);
  return revealKey(server, email, ok.json.api_key_id);
}

test(`${BACKEND}: a refused mail is retried with growing delays and delivered once`, async () => {
  const smtpPort = await freePort();
  const sink = await new SmtpSink(smtpPort, mkdtempSync(path.join(tmpdir(), 'gpunex-smtp-')), { refuseEach: 3 })
    .start();
  const server = await new TestServer(['--smtp-url', `smtp://127.0.0.1:${smtpPort}`,
    '--mail-poll-interval-ms', '50', '--mail-retry-base-ms', '200', '--mail-max-attempts', '5']).start();
  try {
    const key = await applyAndApprove(server, 'cy@example.com', 'Cy Retry');
    const approved = await sink.waitFor(subjectHas('approved'), 'about the approval after three refusals', 30000);
    assert.ok(!approved.includes(key), 'plain SMTP: the retried approval mail carries no API key');
    await until('both mails delivered', () => outbox(server).every((m) => m.sent), 30000, 100);
    await sleep(500);

    const attempts = sink.attempts();
    const ids = [...new Set(attempts.map((a) => a.messageId))];
    assert.equal(ids.length, 2, 'two mails');
    for (const id of ids) {
      const mine = attempts.filter((a) => a.messageId === id);
      assert.deepEqual(mine.map((a) => a.accepted), [false, false, false, true], `${id}: refused 3 times, then once`);
      // Each wait is at least the backoff: 200, 400, 800 ms (base · 2^(n-1)).
      for (let n = 1; n < mine.length; n++) {
        const gap = mine[n].atMs - mine[n - 1].atMs;
        assert.ok(gap >= 200 * 2 ** (n - 1), `${id}: retry ${n} came after ${gap} ms, before its backoff`);
      }
    }
    assert.equal(sink.messages().length, 2, 'each mail delivered exactly once');
    const rows = outbox(server);
    assert.deepEqual(rows.map((m) => [m.kind, m.attempts, m.secret, m.sent, m.last_error]),
      [['application_submitted', 4, 'none', true, ''], ['application_approved', 4, 'none', true, '']]);
  } finally {
    await server.stop();
    await sink.stop();
  }
});

test(`${BACKEND}: a mail refused max-attempts times is given up with no secret kept`, async () => {
  const smtpPort = await freePort();
  const sink = await new SmtpSink(smtpPort, mkdtempSync(path.join(tmpdir(), 'gpunex-smtp-')), { refuseEach: 1000 })
    .start();
  const server = await new TestServer(['--smtp-url', `smtp://127.0.0.1:${smtpPort}`,
    '--mail-poll-interval-ms', '50', '--mail-retry-base-ms', '100', '--mail-max-attempts', '3']).start();
  try {
    const key = await applyAndApprove(server, 'dee@example.com', 'Dee Down');
    const rows = await until('both mails given up', () => {
      const r = outbox(server);
      return r.length === 2 && r.every((m) => m.attempts === 3) && r;
    }, 30000, 100);
    for (const m of rows) {
      assert.equal(m.sent, false, `${m.kind} is not sent`);
      assert.equal(m.secret, 'none', `${m.kind} keeps no secret`);
      assert.match(m.last_error, /^gave up: .*451/, `${m.kind}: ${m.last_error}`);
    }
    // Given up means never tried again.
    await sleep(1500);
    assert.equal(sink.attempts().length, 6, 'three attempts per mail, no more');
    assert.deepEqual(outbox(server).map((m) => m.attempts), [3, 3]);
    assert.equal(sink.messages().length, 0);
    const approvalAttempts = sink.attempts().filter((a) => /approved/.test(a.text));
    assert.equal(approvalAttempts.length, 3);
    assert.ok(approvalAttempts.every((a) => !a.text.includes(key)), 'plain SMTP: no attempt carried the key');
    assert.ok(!server.logs.join('').includes(key), 'the API key never reaches the logs');
  } finally {
    await server.stop();
    await sink.stop();
  }
});

test(`${BACKEND}: without SMTP each mail is an .eml file under <data dir>/mail`, async () => {
  const server = await new TestServer(['--mail-poll-interval-ms', '50', '--mail-from', 'GPUnex <noreply@gpunex.test>'])
    .start();
  try {
    const { id } = await applyAndSubmit(server, 'eve@example.com', 'Eve Files');
    const dir = path.join(server.dir, 'mail');
    const files = await until('an .eml file', () => existsSync(dir) && readdirSync(dir).filter((f) => f.endsWith('.eml')).length && readdirSync(dir), 20000, 100);
    const emls = files.filter((f) => f.endsWith('.eml'));
    assert.equal(emls.length, 1, files.join(', '));
    assert.match(emls[0], /^\d{8}T\d{6}-mail_[0-9a-f]+\.eml$/);
    const text = readFileSync(path.join(dir, emls[0]), 'utf8');
    assert.match(text, /^From: GPUnex <noreply@gpunex\.test>\r\n/m);
    assert.match(text, /^To: eve@example\.com\r\n/m);
    assert.match(text, /^Subject: GPUnex: we received your provider application\r\n/m);
    assert.match(text, /^Message-ID: <mail_[0-9a-f]+@gpunex\.test>\r\n/m);
    const body = text.slice(text.indexOf('\r\n\r\n') + 4);
    assert.match(body, /^Hello Eve Files,\r\n/);
    // The GPUs as declared, each model with its own count (the review queue shows the same).
    assert.ok(body.includes(`Your application ${id} (GPUs: 8 × H100-SXM, 2 × L4) is now waiting for review.`), body);
    assert.match(body, /expect our answer by \w+day, \d{2} \w+ \d{4}/);
    assert.ok(body.includes(`${server.url}/#/applications/${id}`), body);
    assert.deepEqual(outbox(server).map((m) => [m.kind, m.sent, m.attempts]), [['application_submitted', true, 1]]);
  } finally {
    await server.stop();
  }
});
