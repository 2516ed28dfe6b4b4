// Mail through a real SMTP server (Debian python3-aiosmtpd on a loopback port):
// the onboarding flow's mails arrive as proper RFC 5322 messages, the approval
// mail carries the install command with this server's URL and the API key, and
// a mail queued while the SMTP server is down survives a restart of both.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BACKEND, TestServer, Client } from '../lib/server.mjs';
import { freePort, SmtpSink } from '../lib/smtp.mjs';

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

async function applyAndSubmit(server, email, name) {
  const c = new Client(server.url);
  await c.signupAndLogin(email);
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
    const { id } = await applyAndSubmit(server, 'ada@example.com', 'Ada Lovelace');
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
    const key = ok.json.api_key;
    assert.match(key, /^gpx_[A-Za-z0-9_-]{43}$/);
    const approved = await sink.waitFor(subjectHas('approved'), 'about the approval');
    assert.match(approved, /^Subject: GPUnex: you are approved as an Enterprise provider\r?\n/m);
    assert.ok(approved.includes(`curl -fsSL ${server.url}/agent/install.sh | bash`), approved);
    assert.ok(approved.includes(key), 'the approval mail carries the API key');
    assert.ok(!server.logs.join('').includes(key), 'the API key never reaches the logs');

    // A rejection tells the applicant why, in the reviewer's words.
    const { id: bobApp } = await applyAndSubmit(server, 'bob@example.com', 'Bob Builder');
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
