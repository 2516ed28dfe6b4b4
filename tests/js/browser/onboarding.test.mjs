// Browser: the provider journey of DESIGN §3.2–3.5 through the dashboard. Apply with two
// GPU entries (one on a weekly schedule), a bad field shows its message next to it, the
// reviewer asks for more information in the review console, the applicant edits and
// resubmits, the reviewer approves as Enterprise (after the console shows the 422 for a
// schedule), the provider sees the approval and reveals the key issued at approval exactly
// once on the application page (a new key on the keys page is likewise shown once), and the
// approval mail reached a real SMTP server (with a link to the reveal, not the key, over plain SMTP).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BACKEND, Client, TestServer } from '../lib/server.mjs';
import { launchBrowser, screenshotter } from '../lib/browser.mjs';
import { freePort, SmtpSink } from '../lib/smtp.mjs';

const subjectHas = (s) => (m) => new RegExp(`^Subject: .*${s}`, 'm').test(m);

async function login(page, url, email, password) {
  await page.goto(`${url}/#/login`);
  await page.getByRole('heading', { name: 'Log in' }).waitFor();
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Roles' }).waitFor();
}

async function fillGpu(entry, g) {
  await entry.getByLabel('GPU model').selectOption(g.model);
  await entry.getByLabel('Number of GPUs').fill(String(g.count));
  await entry.getByLabel('Host system RAM (GB)').fill(String(g.ram));
  await entry.getByLabel('Download speed (Gbit/s)').fill(String(g.down));
  await entry.getByLabel('Upload speed (Gbit/s)').fill(String(g.up));
  await entry.getByLabel('City').fill(g.city);
  await entry.getByLabel('Country').fill(g.country);
  await entry.getByLabel('Region').fill(g.region);
}

test(`${BACKEND}: apply, needs_info, resubmit, approve as Enterprise, approval key revealed once, mail sent`, async () => {
  const smtpPort = await freePort();
  const sink = await new SmtpSink(smtpPort, mkdtempSync(path.join(tmpdir(), 'gpunex-smtp-'))).start();
  const server = await new TestServer(['--smtp-url', `smtp://127.0.0.1:${smtpPort}`,
    '--mail-from', 'GPUnex <noreply@gpunex.test>', '--mail-poll-interval-ms', '200', '--mail-retry-base-ms', '200']).start();
  server.createUser('rita@example.com', 'operator-password-1', 'reviewer', 'Rita Reviewer');
  // Two browsers, so the applicant and the reviewer each keep their own session.
  const shot = screenshotter(`onboarding-${BACKEND}`);
  const alice = await launchBrowser(shot);
  const rita = await launchBrowser(shot);
  const errors = [];
  try {
    const p = await alice.newPage();
    p.on('pageerror', (e) => errors.push(`applicant: ${e.message}`));
    await p.goto(`${server.url}/#/signup`);
    await p.getByLabel('Full name').fill('Alice Provider');
    await p.getByLabel('E-mail').fill('alice@example.com');
    await p.getByLabel(/^Password/).fill('correct-horse-battery');
    await p.getByRole('button', { name: 'Sign up' }).click();
    await p.getByRole('heading', { name: 'Roles' }).waitFor();
    await shot(p, 'roles');

    // Every page asks to confirm the address until the link mailed to it is opened (no other mail goes
    // there before); opening it from the mail confirms it and the banner is gone.
    const banner = p.getByRole('region', { name: 'Address confirmation' });
    assert.match(await banner.textContent(), /open the link we sent to alice@example\.com/);
    const confirmMail = await sink.waitFor((m) => /^To: alice@example\.com/m.test(m) && subjectHas('Confirm your e-mail')(m),
      'with the confirmation link');
    await p.goto(/http:\/\/\S+#\/confirm-email\/[A-Za-z0-9_-]+/.exec(confirmMail)[0]);
    await p.getByRole('heading', { name: 'E-mail address confirmed' }).waitFor();
    assert.match(await p.getByRole('status').textContent(), /sends your account's mail to alice@example\.com/);
    await p.getByRole('link', { name: 'Continue' }).click();
    await p.getByRole('heading', { name: 'Roles' }).waitFor();
    assert.equal(await banner.count(), 0, 'no banner once confirmed');

    await p.getByRole('link', { name: 'Apply to Provide GPUs' }).click();
    await p.getByRole('heading', { name: 'Apply to provide GPUs' }).waitFor();
    assert.equal(await p.getByLabel('Full legal name').inputValue(), 'Alice Provider');
    await shot(p, 'apply-empty');
    await p.getByLabel('Company (optional)').fill('Alice Compute GmbH');
    const e1 = p.getByRole('group', { name: 'GPU entry 1' });
    await fillGpu(e1, { model: 'L40S', count: 4, ram: 512, down: 10, up: 10, city: 'Berlin', country: 'DE', region: 'eu-central' });

    // Entries can be added and removed.
    await p.getByRole('button', { name: 'Add another GPU entry' }).click();
    await p.getByRole('button', { name: 'Add another GPU entry' }).click();
    await p.getByRole('group', { name: 'GPU entry 3' }).waitFor();
    await p.getByRole('button', { name: 'Remove GPU entry 3' }).click();
    assert.equal(await p.getByRole('group', { name: /^GPU entry \d$/ }).count(), 2);

    // The second entry: a weekly schedule with two windows, and (at first) no country.
    const e2 = p.getByRole('group', { name: 'GPU entry 2' });
    await fillGpu(e2, { model: 'RTX-4090', count: 2, ram: 128, down: 1, up: 0.5, city: 'Munich', country: '', region: 'eu-central' });
    await e2.getByLabel('Weekly schedule').check();
    await e2.getByLabel('Time zone').fill('Europe/Berlin');
    await e2.getByRole('button', { name: 'Add a window' }).click();
    const w2 = e2.getByRole('group', { name: 'Window 2' });
    for (const d of ['Mon', 'Tue', 'Wed', 'Thu', 'Fri']) await w2.getByLabel(d, { exact: true }).uncheck();
    for (const d of ['Sat', 'Sun']) await w2.getByLabel(d, { exact: true }).check();
    await w2.getByLabel('Start (HH:MM)').fill('00:00');
    await w2.getByLabel('End (HH:MM)').fill('24:00');
    await p.getByRole('group', { name: /UPS/ }).getByLabel('Yes').check();
    await p.getByLabel('Commitment period').selectOption('12');
    await p.getByLabel('Maintenance notes (optional)').fill('Sundays 02:00-04:00 CET');

    // Validation: the server names gpus[1].location.country; the message sits next to that entry's field.
    await p.getByRole('button', { name: 'Submit application' }).click();
    const country2 = e2.getByLabel('Country');
    await p.locator('#f-gpus-1-location-country-error', { hasText: 'GPU 2: country is required' }).waitFor();
    assert.equal(await country2.getAttribute('aria-invalid'), 'true');
    assert.equal(await e1.getByLabel('Country').getAttribute('aria-invalid'), null);
    assert.ok(await country2.evaluate((e) => e === document.activeElement), 'the bad field has the focus');
    await shot(p, 'apply-validation-error');

    // A bad schedule time is named too, next to the window's start field.
    await w2.getByLabel('Start (HH:MM)').fill('7:00');
    await country2.fill('DE');
    await p.getByRole('button', { name: 'Save as draft' }).click();
    await p.locator('#f-gpus-1-availability-windows-1-start-error', { hasText: /start/ }).waitFor();
    assert.equal(await country2.getAttribute('aria-invalid'), null, 'the fixed field is no longer marked');
    await shot(p, 'apply-schedule-error');
    await w2.getByLabel('Start (HH:MM)').fill('00:00');
    await p.getByRole('button', { name: 'Save as draft' }).click();
    await p.getByRole('status').filter({ hasText: 'Draft saved' }).waitFor();
    await shot(p, 'apply-draft-saved');

    await p.getByRole('button', { name: 'Submit application' }).click();
    await p.getByRole('heading', { name: 'Your provider application' }).waitFor();
    await p.locator('#app-status', { hasText: 'Submitted' }).waitFor();
    assert.match(await p.locator('#expected-review').textContent(), /\d{4}.*1–3 business days/);
    const appUrl = p.url();
    const appId = appUrl.split('/').pop();
    await shot(p, 'status-submitted');

    // The reviewer: queue, detail with the suggested tier and the reasons, a refused Enterprise, needs_info.
    const r = await rita.newPage();
    r.on('pageerror', (e) => errors.push(`reviewer: ${e.message}`));
    await login(r, server.url, 'rita@example.com', 'operator-password-1');
    await r.getByRole('link', { name: 'Review', exact: true }).click();
    await r.getByRole('heading', { name: 'Review queue' }).waitFor();
    const row = r.getByRole('table', { name: 'Review queue' }).getByRole('row', { name: /Alice Provider/ });
    // Each model with its own count, as declared (issue #14: the total read as that many of the first model).
    assert.match(await row.textContent(), /4 × L40S, 2 × RTX-4090/);
    assert.match(await row.textContent(), /of 3 business days/);
    await shot(r, 'review-queue');
    await row.getByRole('link', { name: 'Alice Provider' }).click();
    await r.getByRole('heading', { name: 'Application from Alice Provider' }).waitFor();
    assert.match(await r.locator('#suggested-tier').textContent(), /Community/);
    const rules = r.getByRole('table', { name: 'Tier rules' });
    assert.match(await rules.getByRole('row', { name: /24\/7 availability/ }).textContent(),
      /fail.*gpus\[1\] is available on a schedule/);
    await shot(r, 'review-detail');

    await r.getByLabel('Tier', { exact: true }).selectOption('enterprise');
    await r.getByLabel('Note to the applicant').fill('welcome');
    await r.getByRole('button', { name: 'Record decision' }).click();
    await r.locator('#f-tier-error', { hasText: "Enterprise tier refused by rule 'availability'" }).waitFor();
    assert.equal(await r.getByLabel('Tier', { exact: true }).getAttribute('aria-invalid'), 'true');
    await shot(r, 'review-enterprise-refused');

    await r.getByLabel('Ask for more information').check();
    assert.ok(await r.getByLabel('Tier', { exact: true }).isHidden(), 'the tier is only for approval');
    await r.getByLabel('Note to the applicant').fill('For Enterprise, make the RTX 4090 host 24/7 with 1 Gbit/s up.');
    await r.getByRole('button', { name: 'Record decision' }).click();
    await r.getByRole('status').filter({ hasText: 'Decision recorded: More information needed' }).waitFor();
    await shot(r, 'review-needs-info-recorded');

    // The applicant: the notification, the note on the status page, edit and resubmit.
    await p.getByRole('link', { name: /^Notifications/ }).click();
    await p.getByRole('heading', { name: 'Notifications' }).waitFor();
    const note = p.getByRole('listitem').filter({ hasText: 'More information needed' });
    assert.match(await note.textContent(), /make the RTX 4090 host 24\/7/);
    assert.equal(await p.locator('#unread').textContent(), '2');
    await shot(p, 'notifications');
    await note.getByRole('button', { name: /Mark .* as read/ }).click();
    await p.locator('#unread-count', { hasText: '1 unread' }).waitFor();
    await note.getByRole('link', { name: 'Open' }).click();
    await p.getByRole('heading', { name: 'Your provider application' }).waitFor();
    assert.match(await p.locator('.reviewer-note').textContent(), /make the RTX 4090 host 24\/7 with 1 Gbit\/s up/);
    await shot(p, 'status-needs-info');
    await p.getByRole('link', { name: 'Edit and resubmit' }).click();
    await p.getByRole('heading', { name: 'Edit your application' }).waitFor();
    const e2b = p.getByRole('group', { name: 'GPU entry 2' });
    assert.equal(await e2b.getByLabel('Time zone').inputValue(), 'Europe/Berlin');
    assert.equal(await e2b.getByRole('group', { name: 'Window 2' }).getByLabel('End (HH:MM)').inputValue(), '24:00');
    await e2b.getByLabel('24/7').check();
    await e2b.getByLabel('Upload speed (Gbit/s)').fill('1');
    await shot(p, 'apply-edit');
    await p.getByRole('button', { name: 'Resubmit application' }).click();
    await p.locator('#app-status', { hasText: 'Submitted' }).waitFor();
    assert.match(await p.getByRole('table', { name: 'History' }).textContent(), /resubmitted/);
    await shot(p, 'status-resubmitted');

    // The reviewer approves as Enterprise, now the suggestion; the console says a key was issued, not what it is.
    await r.goto(`${server.url}/#/review`);
    await r.getByRole('link', { name: 'Alice Provider' }).click();
    await r.getByRole('heading', { name: 'Application from Alice Provider' }).waitFor();
    assert.match(await r.locator('#suggested-tier').textContent(), /Enterprise/);
    assert.equal(await r.getByLabel('Tier', { exact: true }).inputValue(), 'enterprise');
    await r.getByLabel('Note to the applicant').fill('Welcome aboard');
    await r.getByRole('button', { name: 'Record decision' }).click();
    const issued = r.getByRole('status').filter({ hasText: 'Approved as Enterprise' });
    await issued.waitFor();
    assert.match(await issued.textContent(), new RegExp(`API key \\w+ was issued.*curl -fsSL ${server.url}/agent/install.sh \\| bash`));
    assert.doesNotMatch(await r.content(), /gpx_/, 'the reviewer never sees the provider key');
    await shot(r, 'review-approved');

    // The provider: the approval with its tier, and the key issued at approval, revealed exactly once.
    await p.getByRole('link', { name: 'Roles' }).click();
    await p.getByRole('heading', { name: 'Roles' }).waitFor();
    await p.getByRole('link', { name: 'Application', exact: true }).click();
    await p.getByRole('heading', { name: 'Approved as Enterprise provider' }).waitFor();
    assert.equal(p.url(), appUrl);
    assert.match(await p.locator('#approval-key').textContent(), /is ready\. It is shown once/);
    await shot(p, 'status-approved');
    await p.getByRole('button', { name: 'Show my API key (shown once)' }).click();
    await p.getByRole('heading', { name: 'Your provider API key' }).waitFor();
    const approvalKey = await p.getByLabel('API key', { exact: true }).inputValue();
    assert.match(approvalKey, /^gpx_[A-Za-z0-9_-]{43}$/);
    assert.match(await p.locator('#new-key-warning').textContent(), /only time it is shown/);
    assert.ok((await p.locator('#approval-key').textContent()).includes(`curl -fsSL ${server.url}/agent/install.sh | bash`),
      'the one-line install command is beside the key');
    await shot(p, 'status-key-revealed');
    const asAgent = await fetch(`${server.url}/v1/provider/profile`, { headers: { Authorization: `Bearer ${approvalKey}` } });
    assert.equal(asAgent.status, 200, 'the key shown is the provider\'s live key');
    assert.equal((await asAgent.json()).tier, 'enterprise');
    // Gone for good: a reload says when it was shown, with neither the key nor the button.
    await p.reload();
    await p.getByRole('heading', { name: 'Approved as Enterprise provider' }).waitFor();
    await p.locator('#approval-key', { hasText: 'was already shown here on' }).waitFor();
    assert.equal(await p.getByRole('button', { name: /Show my API key/ }).count(), 0);
    assert.doesNotMatch(await p.content(), /gpx_[A-Za-z0-9_-]{20,}/);
    await shot(p, 'status-key-already-shown');
    await p.getByRole('link', { name: 'Manage API keys' }).click();
    await p.getByRole('heading', { name: 'API keys' }).waitFor();
    const keys = p.getByRole('table', { name: 'Your API keys' });
    assert.equal(await keys.getByRole('row').count(), 2, 'the key issued at approval is listed');
    const firstPrefix = (await keys.locator('tbody code').first().textContent()).replace('…', '');
    await shot(p, 'keys-before');
    await p.getByRole('button', { name: 'Create a new API key' }).click();
    await p.getByRole('heading', { name: 'Your new API key' }).waitFor();
    const key = await p.getByLabel('API key', { exact: true }).inputValue();
    assert.match(key, /^gpx_[A-Za-z0-9_-]{43}$/);
    assert.match(await p.locator('#new-key-warning').textContent(), /only time it is shown/);
    await shot(p, 'keys-new-key-once');
    const profile = await fetch(`${server.url}/v1/provider/profile`, { headers: { Authorization: `Bearer ${key}` } });
    assert.equal(profile.status, 200);
    assert.equal((await profile.json()).tier, 'enterprise');

    // A second view lists the key by prefix only.
    await p.getByRole('link', { name: 'Roles' }).click();
    await p.getByRole('heading', { name: 'Roles' }).waitFor();
    await p.getByRole('link', { name: 'API keys' }).first().click();
    await p.getByRole('heading', { name: 'API keys' }).waitFor();
    assert.equal(await keys.getByRole('row').count(), 3);
    assert.equal(await p.locator('#new-key').count(), 0);
    assert.doesNotMatch(await p.content(), new RegExp(key));
    await shot(p, 'keys-second-view');
    await p.reload();
    await p.getByRole('heading', { name: 'API keys' }).waitFor();
    assert.doesNotMatch(await p.content(), /gpx_[A-Za-z0-9_-]{20,}/);

    // Rotate the approval key: a new one shown once, the old one revoked.
    await p.getByRole('button', { name: `Rotate key ${firstPrefix}` }).click();
    await p.getByRole('heading', { name: 'Your new API key' }).waitFor();
    assert.match(await p.getByRole('row', { name: new RegExp(firstPrefix) }).textContent(), /revoked/);
    await shot(p, 'keys-rotated');

    // The approval mail went out through SMTP with the install command and, over this plain SMTP (no TLS
    // required), a link to the one-time reveal instead of the key (issue #19).
    const mail = await sink.waitFor(subjectHas('approved as an? Enterprise provider'), 'about the approval');
    assert.match(mail, /^To: alice@example\.com/m);
    assert.ok(mail.includes(`curl -fsSL ${server.url}/agent/install.sh | bash`));
    assert.ok(!mail.includes(approvalKey) && !/gpx_/.test(mail), 'plain SMTP: the approval key is not mailed');
    assert.ok(mail.includes(appUrl.replace(/^.*#/, '#')), 'the mail links the one-time reveal');
    assert.ok(!mail.includes(key), 'keys made later are never mailed');
    assert.ok(mail.includes(appId));
    assert.deepEqual(errors, []);
  } finally {
    await alice.close();
    await rita.close();
    await server.stop();
    await sink.stop();
  }
});

test(`${BACKEND}: the reviewer adds an "other" GPU to the catalog with every reference figure`, async () => {
  const server = await new TestServer().start();
  server.createUser('rita@example.com', 'operator-password-1', 'reviewer', 'Rita Reviewer');
  const shot = screenshotter(`onboarding-add-model-${BACKEND}`);
  const browser = await launchBrowser(shot);
  try {
    const bob = new Client(server.url);
    await bob.signupAndLogin('bob@example.com', 'correct-horse-battery', 'Bob Builder');
    const created = await bob.request('POST', '/v1/applications', { body: {
      full_name: 'Bob Builder', email: 'bob@example.com',
      gpus: [{ model: 'other', model_other: 'NVIDIA GeForce RTX 5090', count: 2, system_ram_gb: 128, download_gbps: 1,
        upload_gbps: 1, availability: '24/7', location: { city: 'Oslo', country: 'NO', region: 'eu-north' } },
      { model: 'other', model_other: 'AMD Instinct MI300X', count: 1, system_ram_gb: 256, download_gbps: 1,
        upload_gbps: 1, availability: '24/7', location: { city: 'Oslo', country: 'NO', region: 'eu-north' } }],
      ups: false, commitment_months: 6 } });
    assert.equal(created.status, 201, created.body);
    assert.equal((await bob.request('POST', `/v1/applications/${created.json.id}/submit`)).status, 200);

    const r = await browser.newPage();
    await login(r, server.url, 'rita@example.com', 'operator-password-1');
    await r.goto(`${server.url}/#/review/${created.json.id}`);
    await r.getByRole('heading', { name: 'Application from Bob Builder' }).waitFor();
    await r.getByLabel('Add it to the GPU catalog when approving').check();
    const figures = {
      'Catalog id': 'RTX-5090', 'Display name': 'NVIDIA GeForce RTX 5090',
      'Name NVML reports (optional)': 'NVIDIA GeForce RTX 5090', 'Memory (GiB)': '32',
      'PCIe generation (optional)': '5', 'Compute capability (optional)': 'twelve',
      'Memory bandwidth GB/s': '1792', 'FP32 TFLOP/s': '104.8', 'FP16 TFLOP/s': '104.8',
      'FP16 tensor TFLOP/s': '209.5', 'BF16 tensor TFLOP/s': '209.5', 'FP8 tensor TFLOP/s': '419',
      'Board power (TDP) W': '575', 'Reference price, USDC per GPU-hour (optional)': '0.85',
    };
    for (const [label, v] of Object.entries(figures)) await r.getByLabel(label, { exact: true }).fill(v);
    // Two different unlisted models: the reviewer picks which one this entry is for.
    const forWhich = r.getByLabel('For the applicant\'s GPU');
    assert.deepEqual(await forWhich.locator('option').allTextContents(), ['NVIDIA GeForce RTX 5090', 'AMD Instinct MI300X']);
    await forWhich.selectOption('AMD Instinct MI300X');
    await forWhich.selectOption('NVIDIA GeForce RTX 5090');
    await shot(r, 'add-model-filled');
    // The server names the bad field; the message sits next to it.
    await r.getByRole('button', { name: 'Record decision' }).click();
    await r.locator('#f-add-model-compute-capability-error', { hasText: 'add_model.compute_capability must be' }).waitFor();
    await shot(r, 'add-model-bad-field');
    await r.getByLabel('Compute capability (optional)', { exact: true }).fill('12.0');
    await r.getByRole('button', { name: 'Record decision' }).click();
    await r.getByRole('status').filter({ hasText: 'Decision recorded: Approved' }).waitFor();
    await shot(r, 'add-model-approved');

    const catalog = await (await fetch(`${server.url}/v1/catalog/gpus/RTX-5090`)).json();
    assert.deepEqual(catalog, {
      id: 'RTX-5090', name: 'NVIDIA GeForce RTX 5090', nvml_name_pattern: 'NVIDIA GeForce RTX 5090', vram_gib: 32,
      mem_bw_gbs: 1792, fp32_tflops: 104.8, fp16_tflops: 104.8, fp16_tensor_tflops: 209.5, bf16_tensor_tflops: 209.5,
      fp8_tensor_tflops: 419, tdp_w: 575, pcie_gen: 5, compute_capability: '12.0', builtin: false,
    });
    const app = await bob.request('GET', `/v1/applications/${created.json.id}`);
    assert.deepEqual(app.json.gpus.map((g) => [g.model, g.model_other]),
      [['RTX-5090', undefined], ['other', 'AMD Instinct MI300X']], 'only the chosen "other" entry became RTX-5090');
    // The reviewer's reference price is the new model's recommendation until providers list it (#14.8).
    await bob.login('bob@example.com', 'correct-horse-battery');
    const rec = await bob.request('GET', '/v1/provider/price-recommendations?model=RTX-5090');
    assert.equal(rec.status, 200, rec.body);
    assert.deepEqual([rec.json.basis, rec.json.recommended], ['catalog', '0.850000']);
  } finally {
    await browser.close();
    await server.stop();
  }
});

test(`${BACKEND}: another user cannot open an application; a customer has no review console`, async () => {
  const server = await new TestServer().start();
  const shot = screenshotter(`onboarding-access-${BACKEND}`);
  const browser = await launchBrowser(shot);
  try {
    const p = await browser.newPage();
    await p.goto(`${server.url}/#/signup`);
    await p.getByLabel('Full name').fill('Bob Nosy');
    await p.getByLabel('E-mail').fill('bob@example.com');
    await p.getByLabel(/^Password/).fill('correct-horse-battery');
    await p.getByRole('button', { name: 'Sign up' }).click();
    await p.getByRole('heading', { name: 'Roles' }).waitFor();
    assert.equal(await p.getByRole('link', { name: 'Review', exact: true }).isHidden(), true);
    await p.goto(`${server.url}/#/applications/app_doesnotexist`);
    await p.getByRole('heading', { name: 'Not found' }).waitFor();
    await shot(p, 'application-not-found');
    await p.goto(`${server.url}/#/review`);
    await p.getByText('The review console is for reviewers.').waitFor();
    await shot(p, 'review-not-allowed');
  } finally {
    await browser.close();
    await server.stop();
  }
});
