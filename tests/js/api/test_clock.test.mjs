// The test clock (#15): a server started with --test-clock (and --enable-test-clock, without which
// it refuses to start) runs on a settable clock that an admin moves with POST /v1/test/clock, so a
// test can run the server through simulated days: sessions expire, machines go offline, and the
// request path and the background workers read the same clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { BACKEND, BIN, TestServer, Client, until } from '../lib/server.mjs';
import { approvedProvider } from '../lib/provider.mjs';

const START = '2031-03-03T08:00:00Z';
const DAY = 86400;

test(`${BACKEND}: test_clock without enable_test_clock is refused at start, naming the key`, () => {
  const r = spawnSync(path.join(BIN, 'gpunex-server'),
    ['--listen', '127.0.0.1:0', '--db', 'sqlite::memory:', '--test-clock', START], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /test_clock/);
  assert.match(r.stderr, /enable_test_clock/);
});

test(`${BACKEND}: a server on the real clock has no clock endpoint`, async () => {
  const server = await new TestServer().start();
  try {
    server.createUser('root@example.com', 'operator-password-1', 'admin');
    const admin = new Client(server.url);
    await admin.login('root@example.com', 'operator-password-1');
    const r = await admin.request('POST', '/v1/test/clock', { body: { advance_seconds: DAY } });
    assert.equal(r.status, 404);
  } finally {
    await server.stop();
  }
});

test(`${BACKEND}: moving the test clock by days expires sessions and takes a silent machine offline`, async () => {
  const server = await new TestServer(['--test-clock', START, '--enable-test-clock', 'true',
    '--heartbeat-interval', '15', '--offline-after-missed', '3']).start();
  try {
    server.createUser('root@example.com', 'operator-password-1', 'admin');
    const admin = new Client(server.url);
    await admin.login('root@example.com', 'operator-password-1');
    const moveBy = async (seconds) => {
      const r = await admin.request('POST', '/v1/test/clock', { body: { advance_seconds: seconds } });
      assert.equal(r.status, 200, r.body);
      return r.json.now;
    };
    assert.equal(await moveBy(0), START, 'the clock starts where the flag says and stands still');

    // Only an admin moves it, and bad input names the field.
    const kim = new Client(server.url);
    await kim.signupAndLogin('kim@example.com');
    const notAdmin = await kim.request('POST', '/v1/test/clock', { body: { advance_seconds: 60 } });
    assert.equal(notAdmin.status, 403);
    const bad = await admin.request('POST', '/v1/test/clock', { body: { advance_seconds: -5 } });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.field, 'advance_seconds');
    const far = await admin.request('POST', '/v1/test/clock', { body: { advance_seconds: 2 ** 62 } });
    assert.equal(far.status, 400, 'a move that would overflow the clock is refused');
    assert.equal(await moveBy(0), START, 'refused moves leave the clock where it was');

    // A machine that heartbeats at the server's (simulated) time is online.
    const { key } = await approvedProvider(server, 'prov@example.com');
    const agent = new Client(server.url);
    agent.token = key;
    const reg = await agent.request('POST', '/v1/agent/register', { body: {
      protocol_version: 1, agent_version: '0.1.0', machine_fingerprint: 'mfp_clock_1', simulated: true,
      host: { hostname: 'rig', cpu_model: 'EPYC', cpu_cores: 16, ram_mib: 262144, disk_free_mib: 900000,
        os: 'Debian GNU/Linux 12 (bookworm)', kernel: '6.1.0', docker_version: '24.0.7' },
      gpus: [{ index: 0, uuid: 'GPU-clock-0', name: 'NVIDIA L40S', model: 'L40S', memory_mib: 46068,
        driver_version: '550.54.15', cuda_version: '12.4', pci_bus_id: '00000000:17:00.0', power_limit_w: 350 }],
    } });
    assert.equal(reg.status, 200, reg.body);
    const machine = reg.json.machine_id;
    const now = await moveBy(0);
    const hb = await agent.request('POST', '/v1/agent/heartbeat', { body: {
      protocol_version: 1, machine_id: machine, seq: 1, sent_at: now, jobs: [], events: [],
      telemetry: [{ index: 0, uuid: 'GPU-clock-0', at: now, memory_used_mib: 0, temperature_c: 40, power_w: 60,
        power_limit_w: 350, util_gpu_pct: 0, util_mem_pct: 0, sm_clock_mhz: 2000, mem_clock_mhz: 9000,
        clock_events: [], ecc_corrected: 0, ecc_uncorrected: 0 }],
    } });
    assert.equal(hb.status, 200, hb.body);
    const status = async () => (await agent.request('GET', `/v1/provider/machines/${machine}`)).json;
    const online = await status();
    assert.equal(online.status, 'online');
    assert.equal(online.last_seen_at, now, 'last seen at the simulated time, not the real one');

    // Six days later the session still holds (its lifetime is 168 h) and the machine, silent for six
    // days of server time, has been taken offline by the machines worker: the worker reads the same clock.
    await moveBy(6 * DAY);
    assert.equal((await kim.request('GET', '/v1/me')).status, 200);
    await until('the machines worker to see the silent machine', async () => (await status()).status === 'offline',
      20000, 200);

    // Two more days: past 168 h, the session is refused as expired.
    await moveBy(2 * DAY);
    const expired = await kim.request('GET', '/v1/me');
    assert.equal(expired.status, 401);
    assert.equal(expired.json.error.code, 'invalid_session');
  } finally {
    await server.stop();
  }
});
