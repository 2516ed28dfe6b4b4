// The real gpunex-agent (simulated GPUs) against a real server: Online within
// seconds, Offline after the missed heartbeats, a restart re-attaches, an outage
// loses nothing and stores nothing twice, a revoked key stops the agent, and
// no NVIDIA driver without --simulate is a clear error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BIN, BACKEND, TestServer, Client, until } from '../lib/server.mjs';
import { agentEnv } from '../lib/agent.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A provider with an API key, through the public API: apply, submit, approve.
async function provider(server, email) {
  const c = new Client(server.url);
  await c.signupAndLogin(email);
  const app = await c.request('POST', '/v1/applications', { body: {
    full_name: 'Agent Tester', email, ups: false, commitment_months: 3,
    gpus: [{ model: 'L40S', count: 2, system_ram_gb: 256, download_gbps: 1, upload_gbps: 1, availability: '24/7',
      location: { city: 'Berlin', country: 'DE', region: 'eu-central' } }] } });
  assert.equal(app.status, 201, app.body);
  assert.equal((await c.request('POST', `/v1/applications/${app.json.id}/submit`)).status, 200);
  const reviewer = new Client(server.url);
  const rEmail = `rev-${email}`;
  server.createUser(rEmail, 'operator-password-1', 'reviewer');
  await reviewer.login(rEmail, 'operator-password-1');
  const d = await reviewer.request('POST', `/v1/review/applications/${app.json.id}/decision`,
    { body: { decision: 'approve', tier: 'community', note: 'ok' } });
  assert.equal(d.status, 200, d.body);
  assert.ok(!('api_key' in d.json), 'the reviewer never sees the key');
  await c.login(email, 'correct-horse-battery');  // the provider role granted at approval
  const shown = await c.request('POST', `/v1/provider/api-keys/${d.json.api_key_id}/reveal`);
  assert.equal(shown.status, 200, shown.body);
  return { client: c, key: shown.json.api_key, keyId: d.json.api_key_id };
}

class Agent {
  constructor(serverUrl, key, dataDir, extra = ['--simulate', 'L40S:2']) {
    this.logs = [];
    this.proc = spawn(path.join(BIN, 'gpunex-agent'), ['run', '--server', serverUrl, '--data-dir', dataDir,
      '--heartbeat-interval', '1', ...extra], { env: agentEnv({ GPUNEX_API_KEY: key }), stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc.stdout.on('data', (d) => this.logs.push(d.toString()));
    this.proc.stderr.on('data', (d) => this.logs.push(d.toString()));
    this.exited = new Promise((resolve) => this.proc.on('exit', (code) => resolve(code)));
  }
  async stop() {
    if (this.proc.exitCode === null) this.proc.kill('SIGTERM');
    return this.exited;
  }
}

// A TCP relay in front of the server, so a test can cut the agent off and reconnect it on the same address.
class Relay {
  constructor(targetPort) { this.targetPort = targetPort; this.sockets = new Set(); }
  async listen(port = 0) {
    this.server = net.createServer((s) => {
      const up = net.connect(this.targetPort, '127.0.0.1');
      this.sockets.add(s); this.sockets.add(up);
      s.pipe(up); up.pipe(s);
      const drop = () => { s.destroy(); up.destroy(); this.sockets.delete(s); this.sockets.delete(up); };
      s.on('error', drop); up.on('error', drop); s.on('close', drop); up.on('close', drop);
    });
    await new Promise((r) => this.server.listen(port, '127.0.0.1', r));
    this.port = this.server.address().port;
    return this;
  }
  async cut() {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }
}

async function machines(c) {
  const r = await c.request('GET', '/v1/provider/machines');
  assert.equal(r.status, 200, r.body);
  return r.json.items;
}

test(`${BACKEND}: agent goes Online, Offline, re-attaches, and loses nothing in an outage`, async () => {
  const server = await new TestServer(['--heartbeat-interval', '1', '--offline-after-missed', '3']).start();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'gpunex-agent-'));
  let agent;
  let relay;
  try {
    const { client, key } = await provider(server, 'agent-a@example.com');
    const script = await client.request('GET', '/agent/install.sh');
    assert.equal(script.status, 200);
    assert.ok(script.body.includes(`GPUNEX_SERVER="\${GPUNEX_SERVER:-${server.url}}"`), script.body.slice(0, 400));
    assert.match(script.headers.get('content-type'), /shellscript/);
    relay = await new Relay(server.port).listen();
    const url = `http://127.0.0.1:${relay.port}`;

    const t0 = Date.now();
    agent = new Agent(url, key, dataDir);
    const online = await until('Online', async () => (await machines(client)).find((m) => m.status === 'online'), 20000);
    assert.ok(Date.now() - t0 < 20000);
    assert.equal(online.simulated, true);
    assert.deepEqual(online.gpus.map((g) => g.model), ['L40S', 'L40S']);
    assert.ok(agent.logs.join('').includes('SIMULATED GPUs: 2x L40S'), agent.logs.join(''));

    // Stop the agent: Offline after 3 missed 1 s heartbeats, with an event.
    assert.equal(await agent.stop(), 0);
    await until('Offline', async () => (await machines(client))[0].status === 'offline', 15000);
    const detail = await client.request('GET', `/v1/provider/machines/${online.id}`);
    assert.ok(detail.json.events.some((e) => e.kind === 'offline'), detail.body);
    // Its provider is told, with the way to its page.
    const offlineNotices = (await client.request('GET', '/v1/notifications')).json.items
      .filter((n) => n.kind === 'machine_offline');
    assert.equal(offlineNotices.length, 1, JSON.stringify(offlineNotices));
    assert.match(offlineNotices[0].title, new RegExp(`\\(${online.id}\\) is offline$`));
    assert.ok(offlineNotices[0].link.endsWith(`/#/machines/${online.id}`), offlineNotices[0].link);

    // Restart: the same machine, never a duplicate.
    agent = new Agent(url, key, dataDir);
    await until('Online again', async () => (await machines(client))[0].status === 'online', 20000);
    assert.equal((await machines(client)).length, 1);
    assert.equal((await machines(client))[0].id, online.id);

    // Outage: the agent keeps spooling, then replays in order once the server is reachable again.
    await relay.cut();
    await sleep(3500);
    const spooled = readdirSync(path.join(dataDir, 'spool')).length;
    assert.ok(spooled >= 2, `expected spooled heartbeats, found ${spooled}`);
    await relay.listen(relay.port);
    await until('spool drained', async () => readdirSync(path.join(dataDir, 'spool')).length === 0, 20000);
    assert.equal(await agent.stop(), 0);
    agent = null;
    // A heartbeat taken between the drain and the stop stays spooled (numbered, not sent: the next start
    // sends it), so it is not counted as stored below.
    const spooledAtStop = readdirSync(path.join(dataDir, 'spool')).sort();
    const left = spooledAtStop.length;
    const lastSeq = Number(readFileSync(path.join(dataDir, 'seq'), 'utf8').trim());
    assert.ok(left <= 1, `${left} heartbeats left in the spool at the stop: ${spooledAtStop}`);
    if (left === 1) assert.equal(Number(spooledAtStop[0].slice(0, 20)), lastSeq, 'the one left is the last taken');

    // Every heartbeat the agent numbered and sent was stored exactly once: one sample per GPU per seq.
    const d2 = await client.request('GET', `/v1/provider/machines/${online.id}`);
    for (const g of d2.json.gpus) {
      const samples = g.series_24h.reduce((n, m) => n + m.samples, 0);
      assert.equal(samples, lastSeq - left,
        `GPU ${g.uuid}: ${samples} samples stored for ${lastSeq} heartbeats, ${left} of them still spooled`);
    }
  } finally {
    if (agent) await agent.stop();
    if (relay) await relay.cut();
    await server.stop();
  }
});

test(`${BACKEND}: a revoked key stops the agent with a clear message`, async () => {
  const server = await new TestServer().start();
  try {
    const p = await provider(server, 'agent-b@example.com');
    const del = await p.client.request('DELETE', `/v1/provider/api-keys/${p.keyId}`);
    assert.equal(del.status, 200, del.body);
    const agent = new Agent(server.url, p.key, mkdtempSync(path.join(tmpdir(), 'gpunex-agent-')));
    const code = await Promise.race([agent.exited, sleep(10000).then(() => 'timeout')]);
    if (code === 'timeout') await agent.stop();
    assert.equal(code, 4);
    assert.match(agent.logs.join(''), /API key refused by the server \(revoked or invalid\): create a new key in the dashboard and restart the agent/);
  } finally {
    await server.stop();
  }
});

test(`${BACKEND}: no NVIDIA driver and no --simulate is exit 3 with what to install`, async () => {
  const agent = new Agent('http://127.0.0.1:9', 'gpx_unused', mkdtempSync(path.join(tmpdir(), 'gpunex-agent-')),
    ['--nvml-library', 'libnvidia-ml-absent-for-test.so.1']);
  assert.equal(await agent.exited, 3);
  assert.match(agent.logs.join(''), /no NVIDIA driver found \(libnvidia-ml-absent-for-test\.so\.1 not loadable\): install the NVIDIA driver, or run with --simulate MODEL:COUNT/);
});

// The help says what each exit status means: an install script or a service manager acts on 4 (a new key
// is needed, a restart would not help) and 3 (no driver) differently from a failure.
test('gpunex-agent --help names its exit statuses', () => {
  const help = spawnSync(path.join(BIN, 'gpunex-agent'), ['--help'], { encoding: 'utf8' });
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /Exit status: 0 done .*; 1 a failure .*; 2 the command line is wrong; 3 no NVIDIA driver .*; 4 the server refused the API key/s);
  const unit = readFileSync(new URL('../../../deploy/agent/gpunex-agent.service', import.meta.url), 'utf8');
  assert.match(unit, /^RestartPreventExitStatus=4 3 2$/m, 'systemd does not restart into the same refusal');
});
