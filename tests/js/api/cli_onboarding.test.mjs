// The gpunex CLI for onboarding: apply from TOML (draft, submit, resubmit after needs_info),
// application status, the reviewer's review list/show/needs-info/approve/reject (approve
// adding an "other" GPU to the catalog with every reference figure), and the provider's keys
// list/rotate/revoke; --json everywhere; errors print the server's message and the field it names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BACKEND, ROOT, TestServer, Client } from '../lib/server.mjs';
import { gpunex } from '../lib/cli.mjs';

const json = (r) => { assert.equal(r.code, 0, r.err + r.out); return JSON.parse(r.out); };

function login(server, email, password) {
  const home = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
  const r = gpunex(home, ['--server', server.url, 'login', '--email', email, '--password-stdin'], `${password}\n`);
  assert.equal(r.code, 0, r.err);
  return home;
}

test(`${BACKEND}: gpunex apply, application status, review, keys`, async () => {
  const server = await new TestServer().start();
  try {
    await new Client(server.url).signupAndLogin('alice@example.com', 'correct-horse-battery', 'Alice Provider');
    server.createUser('rita@example.com', 'operator-password-1', 'reviewer');
    const alice = login(server, 'alice@example.com', 'correct-horse-battery');
    const rita = login(server, 'rita@example.com', 'operator-password-1');
    const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-toml-'));

    // The example in docs/ is a valid application; --draft only saves it.
    const example = path.join(dir, 'application.toml');
    copyFileSync(path.join(ROOT, 'docs', 'application.example.toml'), example);
    const draft = json(gpunex(alice, ['apply', '--file', example, '--draft', '--json']));
    assert.equal(draft.status, 'draft');
    assert.equal(draft.gpus.length, 2);
    assert.equal(draft.gpus[1].model, 'other');
    assert.deepEqual(draft.gpus[1].availability.windows[1], { days: ['sat', 'sun'], start: '00:00', end: '24:00' });

    // A bad field: the server's message and the field it names, in text and in --json.
    const bad = path.join(dir, 'bad.toml');
    writeFileSync(bad, `full_name = "Alice Provider"
email = "alice@example.com"
ups = false
commitment_months = 9
[[gpus]]
model = "L4"
count = 1
system_ram_gb = 64
download_gbps = 1.0
upload_gbps = 1.0
availability = "24/7"
location = { city = "Lisbon", country = "PT", region = "eu-west" }
`);
    const badText = gpunex(alice, ['apply', '--file', bad]);
    assert.equal(badText.code, 1);
    assert.match(badText.err, /Commitment period must be 3, 6, 12 or 24 months \(field: commitment_months\)/);
    const badJson = gpunex(alice, ['apply', '--file', bad, '--json']);
    assert.equal(badJson.code, 1);
    assert.equal(JSON.parse(badJson.out).error.field, 'commitment_months');
    writeFileSync(path.join(dir, 'broken.toml'), 'full_name = "unterminated\n');
    const broken = gpunex(alice, ['apply', '--file', path.join(dir, 'broken.toml')]);
    assert.equal(broken.code, 1);
    assert.match(broken.err, /broken\.toml:1:/);

    // Submitting updates the open draft rather than starting a second application.
    const good = path.join(dir, 'good.toml');
    writeFileSync(good, `full_name = "Alice Provider"
email = "alice@example.com"
company = "Alice Compute GmbH"
ups = true
commitment_months = 12
[[gpus]]
model = "L40S"
count = 4
system_ram_gb = 512
download_gbps = 10
upload_gbps = 10
availability = "24/7"
location = { city = "Berlin", country = "DE", region = "eu-central" }
[[gpus]]
model = "RTX-4090"
count = 2
system_ram_gb = 128
download_gbps = 1
upload_gbps = 0.5
location = { city = "Munich", country = "DE", region = "eu-central" }
[gpus.availability]
timezone = "Europe/Berlin"
windows = [{ days = ["mon", "tue", "wed", "thu", "fri"], start = "18:00", end = "08:00" }]
`);
    const sub = gpunex(alice, ['apply', '--file', good]);
    assert.equal(sub.code, 0, sub.err);
    assert.match(sub.out, new RegExp(`application ${draft.id}: submitted\\nexpected review by \\d{4}-`));

    const st = json(gpunex(alice, ['application', 'status', '--json']));
    assert.equal(st.id, draft.id);
    assert.equal(st.status, 'submitted');
    const stText = gpunex(alice, ['application', 'status', draft.id]);
    assert.match(stText.out, /: submitted\n/);
    assert.match(stText.out, /draft -> submitted/);

    // A customer has no review console.
    const notReviewer = gpunex(alice, ['review', 'list']);
    assert.equal(notReviewer.code, 1);
    assert.match(notReviewer.err, /error: /);

    const queue = json(gpunex(rita, ['review', 'list', '--json']));
    assert.deepEqual(queue.items.map((a) => a.id), [draft.id]);
    assert.match(gpunex(rita, ['review', 'list']).out, new RegExp(`${draft.id}  Alice Provider .*  4 × L40S, 2 × RTX-4090  suggested community`));
    const shown = gpunex(rita, ['review', 'show', draft.id]);
    assert.match(shown.out, /\[FAIL\] availability: gpus\[1\] is available on a schedule, not 24\/7/);
    assert.match(shown.out, /\[pass\] ups/);
    const shownJson = json(gpunex(rita, ['review', 'show', draft.id, '--json']));
    assert.equal(shownJson.id, draft.id);
    assert.equal(shownJson.status, 'submitted');
    assert.equal(shownJson.suggested_tier, 'community');
    assert.deepEqual(shownJson.gpus.map((g) => [g.model, g.count]), [['L40S', 4], ['RTX-4090', 2]]);
    const availability = shownJson.tier_reasons.find((r) => r.rule === 'availability');
    assert.equal(availability.passed, false);
    assert.match(availability.reason, /gpus\[1\] is available on a schedule/);
    assert.equal(shownJson.tier_reasons.find((r) => r.rule === 'ups').passed, true);
    assert.deepEqual(shownJson.history.map((h) => h.to), ['draft', 'submitted']);
    assert.ok(shownJson.expected_review_by);

    // Enterprise is refused by a rule; the message names the rule and the field.
    const refused = gpunex(rita, ['review', 'approve', draft.id, '--tier', 'enterprise', '--note', 'hi']);
    assert.equal(refused.code, 1);
    assert.match(refused.err, /Enterprise tier refused by rule 'availability'.*\(field: tier, --tier\)/);
    const refusedJson = JSON.parse(gpunex(rita, ['review', 'approve', draft.id, '--tier', 'enterprise', '--json']).out);
    assert.equal(refusedJson.error.code, 'tier_rule_failed');

    const ask = json(gpunex(rita, ['review', 'needs-info', draft.id, '--note', 'Make the 4090 host 24/7, 1 Gbit/s up', '--json']));
    assert.equal(ask.application.status, 'needs_info');
    const needs = gpunex(alice, ['application', 'status']);
    assert.match(needs.out, /needs_info .*"Make the 4090 host 24\/7, 1 Gbit\/s up"/);

    // Resubmit: the same command edits the application sent back and submits it again.
    writeFileSync(good, `full_name = "Alice Provider"
email = "alice@example.com"
company = "Alice Compute GmbH"
ups = true
commitment_months = 12
[[gpus]]
model = "L40S"
count = 4
system_ram_gb = 512
download_gbps = 10
upload_gbps = 10
availability = "24/7"
location = { city = "Berlin", country = "DE", region = "eu-central" }
`);
    const again = json(gpunex(alice, ['apply', '--file', good, '--json']));
    assert.equal(again.id, draft.id);
    assert.equal(again.status, 'submitted');
    assert.equal(again.suggested_tier, 'enterprise');

    // Approve: the reviewer learns a key was issued, never the key.
    const approved = gpunex(rita, ['review', 'approve', draft.id, '--tier', 'enterprise', '--note', 'Welcome', '--json']);
    const a = json(approved);
    assert.equal(a.tier, 'enterprise');
    assert.equal(a.api_key_issued, true);
    assert.ok(a.provider_id && a.api_key_id);
    assert.ok(!('api_key' in a));
    assert.doesNotMatch(approved.out, /gpx_/);
    const approvedText = gpunex(rita, ['review', 'reject', draft.id, '--note', 'too late']);
    assert.equal(approvedText.code, 1, 'deciding twice is a conflict');

    // Keys: list, rotate (the new key once), revoke.
    const list = json(gpunex(alice, ['keys', 'list', '--json']));
    assert.deepEqual(list.items.map((k) => k.id), [a.api_key_id]);
    const rotated = gpunex(alice, ['keys', 'rotate', '--revoke', a.api_key_id]);
    assert.equal(rotated.code, 0, rotated.err);
    assert.match(rotated.err, /shown only now/);
    assert.match(rotated.err, /is revoked: agents still using it stop \(exit status 4\) until they are given this one/);
    const key = rotated.out.trim();
    assert.match(key, /^gpx_[A-Za-z0-9_-]{43}$/);
    const prof = await fetch(`${server.url}/v1/provider/profile`, { headers: { Authorization: `Bearer ${key}` } });
    assert.equal(prof.status, 200);
    const listText = gpunex(alice, ['keys', 'list']);
    assert.match(listText.out, new RegExp(`${a.api_key_id} .* revoked `));
    assert.match(listText.out, / active\n/);
    const created = json(gpunex(alice, ['keys', 'rotate', '--json']));
    assert.match(created.api_key, /^gpx_/);
    const newId = JSON.parse(gpunex(alice, ['keys', 'list', '--json']).out).items.find((k) => k.active && k.id !== created.id).id;
    const revoked = json(gpunex(alice, ['keys', 'revoke', newId, '--json']));
    assert.equal(revoked.active, false);
    const revokedText = gpunex(alice, ['keys', 'revoke', created.id]);
    assert.match(revokedText.out, /^revoked .*: agents still using it are refused from now on and stop \(exit status 4\)/);
    const gone = await fetch(`${server.url}/v1/provider/profile`, { headers: { Authorization: `Bearer ${key}` } });
    assert.equal(gone.status, 401);
    const missing = gpunex(alice, ['keys', 'rotate', '--revoke', 'key_nope']);
    assert.equal(missing.code, 1);
    assert.match(missing.err, /no such API key to revoke \(field: revoke, --revoke\)/);

    // Rejection needs a note, and a reject with one works (a second applicant).
    await new Client(server.url).signupAndLogin('mallory@example.com', 'correct-horse-battery', 'Mallory M');
    const mallory = login(server, 'mallory@example.com', 'correct-horse-battery');
    const m = json(gpunex(mallory, ['apply', '--file', example, '--json']));
    const noNote = gpunex(rita, ['review', 'reject', m.id]);
    assert.notEqual(noNote.code, 0);
    assert.match(noNote.err, /--note is required/, 'the CLI asks for --note');
    const rej = gpunex(rita, ['review', 'reject', m.id, '--note', 'Not enough bandwidth']);
    assert.equal(rej.code, 0, rej.err);
    assert.match(rej.out, /: rejected/);
    const rejectedJson = json(gpunex(rita, ['review', 'show', m.id, '--json']));
    assert.equal(rejectedJson.status, 'rejected');
    assert.equal(rejectedJson.history.at(-1).note, 'Not enough bandwidth');

    // reject --json: the decided application, and no key.
    await new Client(server.url).signupAndLogin('trent@example.com', 'correct-horse-battery', 'Trent T');
    const trent = login(server, 'trent@example.com', 'correct-horse-battery');
    const t = json(gpunex(trent, ['apply', '--file', example, '--json']));
    const rejJson = json(gpunex(rita, ['review', 'reject', t.id, '--note', 'No UPS for the weekend host', '--json']));
    assert.deepEqual(Object.keys(rejJson), ['application']);
    assert.equal(rejJson.application.id, t.id);
    assert.equal(rejJson.application.status, 'rejected');
    assert.equal(rejJson.application.tier, null);
    assert.ok(rejJson.application.decided_at);
    assert.deepEqual(rejJson.application.history.at(-1),
      { ...rejJson.application.history.at(-1), from: 'submitted', to: 'rejected', note: 'No UPS for the weekend host' });
    const twice = gpunex(rita, ['review', 'reject', t.id, '--note', 'again', '--json']);
    assert.equal(twice.code, 1);
    assert.equal(JSON.parse(twice.out).error.code, 'invalid_state');
    assert.match(gpunex(mallory, ['application', 'status']).out, /rejected .*"Not enough bandwidth"/);

    // Approving an "other" GPU into the catalog with every reference figure; a bad one is named.
    await new Client(server.url).signupAndLogin('carol@example.com', 'correct-horse-battery', 'Carol C');
    const carol = login(server, 'carol@example.com', 'correct-horse-battery');
    const c = json(gpunex(carol, ['apply', '--file', example, '--json']));
    const model = {
      id: 'RTX-5090', name: 'NVIDIA GeForce RTX 5090', vram: '32', 'nvml-name': 'NVIDIA GeForce RTX 5090',
      'mem-bw-gbs': '1792', 'fp32-tflops': '104.8', 'fp16-tflops': '104.8', 'fp16-tensor-tflops': '209.5',
      'bf16-tensor-tflops': '209.5', 'fp8-tensor-tflops': '419', 'tdp-w': '575', 'pcie-gen': '5',
      'compute-capability': '12.0', 'reference-price': '0.85',
    };
    const approve = (change, ...extra) => gpunex(rita, ['review', 'approve', c.id, '--tier', 'community',
      ...Object.entries({ ...model, ...change }).map(([k, v]) => `--add-model-${k}=${v}`), ...extra]);
    const badFigure = approve({ 'fp8-tensor-tflops': '0' });
    assert.equal(badFigure.code, 1);
    assert.match(badFigure.err, /add_model\.fp8_tensor_tflops must be a positive number \(field: add_model\.fp8_tensor_tflops, --add-model-fp8-tensor-tflops\)/);
    const badCc = approve({ 'compute-capability': 'twelve' }, '--json');
    assert.equal(JSON.parse(badCc.out).error.field, 'add_model.compute_capability');
    const badPrice = approve({ 'reference-price': 'cheap' }, '--json');
    assert.equal(JSON.parse(badPrice.out).error.field, 'add_model.reference_usdc_per_gpu_hour');
    // In words, the reviewer is told how the applicant gets the key, as the server says it (by default
    // not by mail: the mail carries a link to the one reveal).
    const approvedWords = approve({});
    assert.equal(approvedWords.code, 0, approvedWords.err);
    assert.match(approvedWords.out, /API key key_\S+ issued: revealed once on the applicant's application page \(the mail carries a link\)/);
    const added = json(gpunex(rita, ['review', 'show', c.id, '--json']));
    assert.equal(added.status, 'approved');
    assert.equal(added.gpus[1].model, 'RTX-5090');
    // The reviewer's reference price is the new model's recommendation until providers list it (#14.8).
    const carolProvider = login(server, 'carol@example.com', 'correct-horse-battery');
    const rec = json(gpunex(carolProvider, ['price', 'recommend', 'RTX-5090', '--json']));
    assert.deepEqual([rec.basis, rec.recommended], ['catalog', '0.850000']);
    const catalog = await (await fetch(`${server.url}/v1/catalog/gpus/RTX-5090`)).json();
    assert.deepEqual(catalog, {
      id: 'RTX-5090', name: 'NVIDIA GeForce RTX 5090', nvml_name_pattern: 'NVIDIA GeForce RTX 5090', vram_gib: 32,
      mem_bw_gbs: 1792, fp32_tflops: 104.8, fp16_tflops: 104.8, fp16_tensor_tflops: 209.5, bf16_tensor_tflops: 209.5,
      fp8_tensor_tflops: 419, tdp_w: 575, pcie_gen: 5, compute_capability: '12.0', builtin: false,
    });

    // Two different unlisted models: --add-model-for says which one the new catalog entry is for.
    await new Client(server.url).signupAndLogin('dave@example.com', 'correct-horse-battery', 'Dave D');
    const dave = login(server, 'dave@example.com', 'correct-horse-battery');
    const twoOthers = path.join(dir, 'two-others.toml');
    writeFileSync(twoOthers, `full_name = "Dave D"
email = "dave@example.com"
ups = false
commitment_months = 6
${['NVIDIA RTX PRO 6000', 'AMD Instinct MI300X'].map((m) => `[[gpus]]
model = "other"
model_other = "${m}"
count = 1
system_ram_gb = 256
download_gbps = 1.0
upload_gbps = 1.0
availability = "24/7"
location = { city = "Hamburg", country = "DE", region = "eu-central" }
`).join('\n')}`);
    const dv = json(gpunex(dave, ['apply', '--file', twoOthers, '--json']));
    const pro = ['--add-model-id=RTX-PRO-6000', '--add-model-name=NVIDIA RTX PRO 6000', '--add-model-vram=96'];
    const which = gpunex(rita, ['review', 'approve', dv.id, '--tier', 'community', ...pro, '--json']);
    assert.equal(which.code, 1);
    assert.equal(JSON.parse(which.out).error.field, 'add_model.model_other', 'two unlisted models: which one is asked');
    const none = gpunex(rita, ['review', 'approve', dv.id, '--tier', 'community', ...pro,
      '--add-model-for', 'NVIDIA H300', '--json']);
    assert.equal(JSON.parse(none.out).error.field, 'add_model.model_other');
    const forPro = json(gpunex(rita, ['review', 'approve', dv.id, '--tier', 'community', ...pro,
      '--add-model-for', 'NVIDIA RTX PRO 6000', '--json']));
    assert.deepEqual(forPro.application.gpus.map((g) => [g.model, g.model_other]),
      [['RTX-PRO-6000', undefined], ['other', 'AMD Instinct MI300X']]);
  } finally {
    await server.stop();
  }
});
