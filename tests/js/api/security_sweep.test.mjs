// The bad-input sweep (issue #19): every API endpoint that takes a body gets each family of bad input
// (malformed JSON, a body that is not an object, wrong types, unknown and duplicate fields, control
// characters, huge values, a huge body); each answer is a JSON 4xx, naming the field where there is
// one, never a 5xx; every other endpoint gets bad query values; and the server keeps serving.
// docs/security.md lists it under "Anyone on the network → the API".
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer, Client } from '../lib/server.mjs';
import { approvedProvider } from '../lib/provider.mjs';
import { postedMachine } from '../lib/rental_machine.mjs';
import { customerWithCredit } from '../lib/rentals.mjs';

let server;
let machine;
const clients = {};
const ids = {};

const form = (email) => ({
  full_name: 'Sweep Applicant', email, company: 'Sweep Ltd', ups: true, commitment_months: 12,
  gpus: [{ model: 'L40S', count: 1, system_ram_gb: 64, download_gbps: 1, upload_gbps: 1, availability: '24/7',
    location: { city: 'Berlin', country: 'DE', region: 'eu-central' } }],
});

before(async () => {
  // Generous sign-in limits: the sweep itself sends signup and login a few dozen bad bodies.
  server = await new TestServer(['--auth-rate-limit-per-minute', '100000', '--login-free-failures', '100000'])
    .start();
  const provider = await approvedProvider(server, `sweep-provider.${process.pid}@example.com`);
  machine = await postedMachine(server, provider, { gpus: 1, name: 'sweep' });
  clients.provider = provider.client;
  clients.agent = new Client(server.url);
  clients.agent.token = provider.key;
  ids.machine = machine.machineId;
  ids.keyId = provider.keyId;
  clients.customer = await customerWithCredit(server, '100.00');
  clients.admin = server.adminClient;
  clients.anonymous = new Client(server.url);
  // A draft application (PUT, PATCH) and a submitted one (the reviewer's decision).
  const me = `sweep-applicant.${process.pid}@example.com`;
  clients.applicant = new Client(server.url);
  await clients.applicant.signupAndLogin(me);
  const draft = await clients.applicant.request('POST', '/v1/applications', { body: form(me) });
  assert.equal(draft.status, 201, draft.body);
  ids.draft = draft.json.id;
  ids.applicantEmail = me;
  const other = new Client(server.url);
  const otherEmail = `sweep-other.${process.pid}@example.com`;
  await other.signupAndLogin(otherEmail);
  const sub = await other.request('POST', '/v1/applications', { body: form(otherEmail) });
  assert.equal((await other.request('POST', `/v1/applications/${sub.json.id}/submit`)).status, 200);
  ids.submitted = sub.json.id;
  server.createUser(`sweep-reviewer.${process.pid}@example.com`, 'operator-password-1', 'reviewer');
  clients.reviewer = new Client(server.url);
  await clients.reviewer.login(`sweep-reviewer.${process.pid}@example.com`, 'operator-password-1');
});

after(async () => {
  await machine?.stop();
  await server?.stop();
});

// Each endpoint that takes a JSON body: who sends it and a valid body, which the sweep never sends
// whole (only with one field spoiled), so nothing happens. `free` fields take any text (passwords).
function endpoints() {
  const now = new Date().toISOString();
  return [
    { method: 'POST', path: '/v1/auth/signup', as: 'anonymous', free: ['password'],
      body: { email: `sweep-new.${process.pid}@example.com`, password: 'correct-horse-battery', full_name: 'New' } },
    { method: 'POST', path: '/v1/auth/login', as: 'anonymous', free: ['password'],
      body: { email: ids.applicantEmail, password: 'correct-horse-battery' } },
    { method: 'POST', path: '/v1/auth/confirm-email', as: 'anonymous', body: { token: 'not-a-token-gpunex-sent' } },
    { method: 'POST', path: '/v1/me/email', as: 'customer', free: ['password'],
      body: { email: `sweep-moved.${process.pid}@example.com`, password: 'correct-horse-battery' } },
    { method: 'POST', path: '/v1/applications', as: 'customer', body: form('c@example.com') },
    { method: 'PUT', path: `/v1/applications/${ids.draft}`, as: 'applicant', body: form(ids.applicantEmail) },
    { method: 'PATCH', path: `/v1/applications/${ids.draft}`, as: 'applicant',
      body: { company: 'Patched Ltd', maintenance_notes: 'Sundays' } },
    { method: 'POST', path: `/v1/review/applications/${ids.submitted}/decision`, as: 'reviewer',
      body: { decision: 'needs_info', note: 'Which PSU?' } },
    { method: 'POST', path: '/v1/admin/credits', as: 'admin',
      body: { email: ids.applicantEmail, amount: '1.00', reference: 'sweep' } },
    { method: 'POST', path: '/v1/rentals', as: 'customer',
      body: { machine_id: ids.machine, image: 'docker.io/library/busybox:1.36', command: ['sleep', '1'],
        env: { A: 'b' }, ports: [8080], max_hours: 1 } },
    { method: 'PUT', path: `/v1/provider/machines/${ids.machine}/schedule`, as: 'provider',
      body: { timezone: 'Europe/Berlin', always: false,
        windows: [{ days: ['mon'], start: '09:00', end: '17:00' }], maintenance: [] } },
    { method: 'PUT', path: '/v1/provider/prices/L40S', as: 'provider', body: { usdc_per_gpu_hour: '0.50' } },
    { method: 'PUT', path: '/v1/provider/payout-settings', as: 'provider', free: ['password'],
      body: { method: 'solana_usdc', wallet_address: 'GJRs4FwHtemZ5ZE9x3FNvJ8TMwitKTh21yxdRPqn7npE', schedule: 'weekly',
        password: 'correct-horse-battery' } },
    { method: 'POST', path: '/v1/provider/api-keys', as: 'provider', body: { revoke: ids.keyId } },
    { method: 'POST', path: '/v1/admin/payout-runs/prun_nope/sepa-batch', as: 'admin', body: { eur_per_usdc: '0.92' } },
    { method: 'POST', path: '/v1/admin/payouts/pay_nope/returned', as: 'admin', body: { reason: 'account closed' } },
    { method: 'POST', path: '/v1/agent/register', as: 'agent',
      body: { protocol_version: 1, agent_version: '0.1.0', machine_fingerprint: `sweep-fp-${process.pid}`, simulated: true,
        host: { hostname: 'sweep', cpu_model: 'EPYC', cpu_cores: 32, ram_mib: 262144, disk_free_mib: 900000,
          os: 'Debian GNU/Linux 12', kernel: '6.1.0' },
        gpus: [{ index: 0, uuid: 'GPU-sweep-new-0', name: 'NVIDIA L40S', model: 'L40S', memory_mib: 46068,
          driver_version: '550.54.15', cuda_version: '12.4', pci_bus_id: '00000000:17:00.0' }] } },
    { method: 'POST', path: '/v1/agent/heartbeat', as: 'agent',
      body: { protocol_version: 1, machine_id: ids.machine, seq: 1, sent_at: now, telemetry: [], jobs: [] } },
    { method: 'POST', path: '/v1/agent/benchmarks', as: 'agent',
      body: { protocol: 1, machine_id: ids.machine, simulated: true, started_at_ms: 1000, finished_at_ms: 2000,
        gpus: [], machine: [] } },
    { method: 'POST', path: '/v1/agent/rental-events', as: 'agent',
      body: { protocol_version: 1, machine_id: ids.machine, seq: 1,
        events: [{ rental_id: 'rnt_nope', type: 'running', at: now }] } },
  ];
}

// Endpoints with no body of their own, on ids that name nothing (so a body they ignore changes nothing).
function bodilessEndpoints() {
  return [
    ['POST', '/v1/applications/app_nope/submit', 'applicant'],
    ['POST', '/v1/notifications/ntf_nope/read', 'customer'],
    ['POST', '/v1/provider/api-keys/key_nope/reveal', 'provider'],
    ['DELETE', '/v1/provider/api-keys/key_nope', 'provider'],
    ['POST', '/v1/provider/machines/mch_nope/benchmarks/run', 'provider'],
    ['POST', '/v1/rentals/rnt_nope/stop', 'customer'],
    ['POST', '/v1/provider/rentals/rnt_nope/stop', 'provider'],
    ['POST', '/v1/admin/payouts/pay_nope/paid', 'admin'],
    ['POST', '/v1/admin/sepa-batches/sepab_nope/sent', 'admin'],
  ];
}

// Every GET of the API, with the ids the fixtures made.
function getPaths() {
  return [
    ['/v1/me', 'customer'], ['/v1/applications', 'applicant'], [`/v1/applications/${ids.draft}`, 'applicant'],
    ['/v1/review/applications', 'reviewer'], ['/v1/billing/balance', 'customer'], ['/v1/billing/history', 'customer'],
    ['/v1/catalog/gpus', 'customer'], ['/v1/catalog/gpus/L40S', 'customer'], ['/v1/marketplace/offers', 'customer'],
    ['/v1/notifications', 'customer'], ['/v1/provider/api-keys', 'provider'], ['/v1/provider/earnings', 'provider'],
    ['/v1/provider/machines', 'provider'], [`/v1/provider/machines/${ids.machine}`, 'provider'],
    [`/v1/provider/machines/${ids.machine}/benchmarks`, 'provider'],
    [`/v1/provider/machines/${ids.machine}/reliability`, 'provider'],
    [`/v1/provider/machines/${ids.machine}/schedule`, 'provider'], ['/v1/provider/payout-settings', 'provider'],
    ['/v1/provider/price-recommendations', 'provider'], ['/v1/provider/prices', 'provider'],
    ['/v1/provider/prices/L40S', 'provider'], ['/v1/provider/profile', 'provider'], ['/v1/provider/rentals', 'provider'],
    ['/v1/rentals', 'customer'], ['/v1/rentals/rnt_nope', 'customer'], ['/v1/rentals/rnt_nope/logs', 'customer'],
    [`/v1/agent/rentals?machine_id=${ids.machine}&known=&wait_s=0`, 'agent'],
    ['/v1/bench/net/ping', 'agent'], ['/healthz', 'anonymous'], ['/readyz', 'anonymous'],
    ['/v1/provider/payouts', 'provider'], ['/v1/admin/payout-runs', 'admin'], ['/v1/admin/hot-wallet', 'admin'],
    ['/v1/admin/sepa-batches/sepab_nope/file', 'admin'],
  ];
}

const wrongType = (v) => {
  if (typeof v === 'string') return 12345;
  if (typeof v === 'number') return 'twelve';
  if (typeof v === 'boolean') return 'yes';
  if (Array.isArray(v)) return { not: 'a list' };
  if (v && typeof v === 'object') return 'not an object';
  return 7;
};
const hugeValues = (v) => {
  if (typeof v === 'string') return [{ value: 'x'.repeat(200000) }];
  if (typeof v === 'number') return [{ raw: '1e400' }, { raw: '18446744073709551616' }, { value: -1e300 }];
  // Long lists, kept under the 1 MiB body limit (a larger body is the huge-body family's).
  if (Array.isArray(v)) {
    const item = v[0] ?? 1;
    return [{ value: Array(Math.min(20000, Math.floor(700000 / JSON.stringify(item).length))).fill(item) }];
  }
  if (v && typeof v === 'object') {
    return [{ value: Object.fromEntries([...Array(5000).keys()].map((i) => [`k${i}`, 'v'])) }];
  }
  return [];
};
const CONTROL = ['\u0000', '\u001b[2J', '\u202e', '\r\nX-Injected: 1'];

// One request and what every answer must be: no 5xx, a 4xx in JSON with an error code, the field named.
async function expectRefused(ep, raw, what, field) {
  const c = clients[ep.as];
  const r = await c.request(ep.method, ep.path, { raw });
  const where = `${ep.method} ${ep.path} ${what}: ${r.status} ${r.body.slice(0, 300)}`;
  assert.ok(r.status >= 400 && r.status < 500, where);
  assert.ok(r.json && r.json.error && typeof r.json.error.code === 'string', `not a JSON error: ${where}`);
  if (field !== undefined) assert.ok(JSON.stringify(r.json.error).includes(field), `field ${field} not named: ${where}`);
  return r;
}

test('every endpoint answers each bad-input family with a JSON 4xx naming the field, never a 5xx', async () => {
  let sent = 0;
  for (const ep of endpoints()) {
    const free = new Set(ep.free || []);
    for (const raw of ['{"a":', '[1,', '{"a":1}garbage', '{"a":1,}', "{'a':1}", Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])]) {
      await expectRefused(ep, raw, `malformed ${JSON.stringify(String(raw))}`); sent++;
    }
    for (const raw of ['[]', '"text"', 'null', '42']) {
      await expectRefused(ep, raw, `not an object ${JSON.stringify(raw)}`); sent++;
    }
    await expectRefused(ep, JSON.stringify({ ...ep.body, pad: 'x'.repeat(2 << 20) }), 'a 2 MiB body'); sent++;
    await expectRefused(ep, JSON.stringify({ ...ep.body, zz_unknown: 1 }), 'an unknown field', 'zz_unknown'); sent++;
    const [first] = Object.keys(ep.body);
    const dup = `{${JSON.stringify(first)}:${JSON.stringify(ep.body[first])},${JSON.stringify(ep.body).slice(1)}`;
    const d = await expectRefused(ep, dup, 'a duplicate field', first); sent++;
    assert.equal(d.json.error.code, 'duplicate_field', `${ep.path}: ${d.body}`);
    for (const [field, value] of Object.entries(ep.body)) {
      const named = free.has(field) ? undefined : field;
      await expectRefused(ep, JSON.stringify({ ...ep.body, [field]: wrongType(value) }), `${field} of a wrong type`, field); sent++;
      if (typeof value === 'string') {
        for (const ctl of CONTROL) {
          await expectRefused(ep, JSON.stringify({ ...ep.body, [field]: value + ctl }), `${field} with ${JSON.stringify(ctl)}`, named); sent++;
        }
      }
      for (const huge of hugeValues(value)) {
        const raw = huge.raw !== undefined
          ? JSON.stringify({ ...ep.body, [field]: '@@' }).replace('"@@"', huge.raw)
          : JSON.stringify({ ...ep.body, [field]: huge.value });
        // A number beyond a double (1e400) fails the JSON parse itself: a 400 with no field to name.
        await expectRefused(ep, raw, `${field} huge (${raw.length} bytes)`, huge.raw === '1e400' ? undefined : named); sent++;
      }
    }
  }
  for (const [method, path, as] of bodilessEndpoints()) {
    for (const raw of ['{"a":', JSON.stringify({ pad: 'x'.repeat(2 << 20) }), '{"a":1,"a":2}', '{"zz_unknown":"\\u0000"}']) {
      const r = await clients[as].request(method, path, { raw });
      assert.ok(r.status >= 400 && r.status < 500 && r.json && r.json.error, `${method} ${path}: ${r.status} ${r.body.slice(0, 200)}`);
      sent++;
    }
  }
  for (const [path, as] of getPaths()) {
    const sep = path.includes('?') ? '&' : '?';
    for (const q of ['limit=-1', 'limit=99999999999999999999999', 'limit=abc', 'cursor=%00%1b%E2%80%AE', `cursor=${'x'.repeat(6000)}`,
      'after=%ff%fe', 'zz_unknown=1', 'model=%00', 'status=%0d%0aX:1']) {
      const r = await clients[as].request('GET', `${path}${sep}${q}`);
      assert.ok(r.status < 500, `GET ${path}${sep}${q.slice(0, 40)}: ${r.status} ${r.body.slice(0, 200)}`);
      if (r.status >= 400) assert.ok(r.json && r.json.error, `GET ${path}${sep}${q.slice(0, 40)}: not JSON: ${r.body.slice(0, 200)}`);
      sent++;
    }
  }
  assert.ok(sent > 500, `only ${sent} requests sent`);
  // Still serving, and the valid requests still work.
  assert.equal((await clients.anonymous.request('GET', '/healthz')).status, 200);
  assert.equal((await clients.customer.request('GET', '/v1/me')).status, 200);
  const price = await clients.provider.request('PUT', '/v1/provider/prices/L40S', { body: { usdc_per_gpu_hour: '0.55' } });
  assert.equal(price.status, 200, price.body);
  const logs = server.logs.join('');
  assert.doesNotMatch(logs, /"level":"(error|critical)"/, 'the sweep left an error in the log');
});
