// The gpunex CLI's market verbs: price set/list/recommend, schedule set from a
// TOML file (bad input names the field), with --json and human output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BACKEND, TestServer, Client } from '../lib/server.mjs';
import { gpunex } from '../lib/cli.mjs';

const application = {
  full_name: 'Cli Provider', email: 'prov@example.com', gpus: [{
    model: 'L40S', count: 2, system_ram_gb: 256, download_gbps: 1, upload_gbps: 1, availability: '24/7',
    location: { city: 'Berlin', country: 'DE', region: 'eu-central' },
  }], ups: false, commitment_months: 6,
};

test(`${BACKEND}: gpunex price and schedule`, async () => {
  const server = await new TestServer().start();
  const home = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
  try {
    const provider = new Client(server.url);
    await provider.signupAndLogin('prov@example.com');
    const app = await provider.request('POST', '/v1/applications', { body: application });
    assert.equal(app.status, 201, app.body);
    assert.equal((await provider.request('POST', `/v1/applications/${app.json.id}/submit`)).status, 200);
    server.createUser('rev@example.com', 'operator-password-1', 'reviewer');
    const reviewer = new Client(server.url);
    await reviewer.login('rev@example.com', 'operator-password-1');
    const decision = await reviewer.request('POST', `/v1/review/applications/${app.json.id}/decision`,
      { body: { decision: 'approve', tier: 'community', note: 'ok' } });
    assert.equal(decision.status, 200, decision.body);

    const login = gpunex(home, ['--server', server.url, 'login', '--email', 'prov@example.com', '--password-stdin'],
      'correct-horse-battery\n');
    assert.equal(login.code, 0, login.err);

    const set = gpunex(home, ['price', 'set', 'L40S', '0.95', '--json']);
    assert.equal(set.code, 0, set.err);
    assert.equal(JSON.parse(set.out).usdc_per_gpu_hour, '0.950000');

    const bad = gpunex(home, ['price', 'set', 'L40S', '0.0000001']);
    assert.equal(bad.code, 1);
    assert.match(bad.err, /more than 6 decimals/);

    const list = gpunex(home, ['price', 'list']);
    assert.equal(list.code, 0, list.err);
    assert.match(list.out, /^MODEL +USDC\/GPU-H +YOU RECEIVE +SINCE$/m);
    assert.match(list.out, /^L40S +0\.950000 +0\.760000 +\d{4}-/m);
    assert.match(list.out, /commission of 20%\n$/);

    const rec = gpunex(home, ['price', 'recommend', 'L40S']);
    assert.equal(rec.code, 0, rec.err);
    assert.match(rec.out, /L40S in eu-central: 0\.900000 USDC\/GPU-h \(band 0\.900000–0\.900000, basis catalog\)/);
    // The id in any case, or a name that names one model, as the marketplace's filter takes them.
    const lower = gpunex(home, ['price', 'recommend', 'l40s']);
    assert.equal(lower.code, 0, lower.err);
    assert.equal(lower.out, rec.out);
    const several = gpunex(home, ['price', 'recommend', 'A100']);
    assert.equal(several.code, 1);
    assert.match(several.err, /"A100" is not a model of the GPU catalog; it names several models: (A100-[A-Z0-9-]+(, )?){3}; give one id/);

    const file = path.join(home, 'schedule.toml');
    writeFileSync(file, [
      'timezone = "Europe/Berlin"', 'always = false',
      '[[windows]]', 'days = ["fri"]', 'start = "18:00"', 'end = "18:00"', '',
    ].join('\n'));
    const sched = gpunex(home, ['schedule', 'set', 'm-1', '--file', file, '--json']);
    assert.equal(sched.code, 1);
    assert.equal(JSON.parse(sched.out).error.field, "windows[0].end");  // --json: the error body on stdout
  } finally {
    await server.stop();
  }
});
