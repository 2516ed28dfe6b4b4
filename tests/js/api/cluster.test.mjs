// The cluster started by one command (issue 20): scripts/cluster.sh up 2 starts PostgreSQL, two
// replicas and nginx (deploy/nginx/gpunex.conf) on loopback. Through nginx a user signs up and logs
// in; nginx's access log shows both replicas answering; one replica killed with SIGKILL, requests
// through nginx still succeed (reads and writes); `down` leaves no process behind. Run once, in the
// PostgreSQL suite: the cluster starts a PostgreSQL of its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BACKEND, BIN, ROOT, Client } from '../lib/server.mjs';

const skip = BACKEND !== 'postgres' && 'the cluster runs on PostgreSQL (run in the api_postgres suite)';

function cluster(dir, ...args) {
  return execFileSync(path.join(ROOT, 'scripts', 'cluster.sh'), args, {
    env: { ...process.env, GPUNEX_CLUSTER_DIR: dir, GPUNEX_BIN_DIR: BIN }, encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'], timeout: 120000,
  }).trim();
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// Every process whose parent is `pid` (nginx's workers, PostgreSQL's backends).
function children(pid) {
  const out = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(e));
    } catch { /* gone meanwhile */ }
  }
  return out;
}

// The replica address of each access-log line for `route` ("upstream=A" or, when nginx moved on
// from a replica that refused, "upstream=A, B": the last one answered).
function upstreams(dir, route) {
  const log = readFileSync(path.join(dir, 'nginx', 'logs', 'gpunex-access.log'), 'utf8');
  return log.split('\n').filter((l) => l.includes(` ${route} `)).map((l) => /upstream=(.*?) upstream_status/.exec(l)[1]);
}

test(`${BACKEND}: scripts/cluster.sh up 2: both replicas serve through nginx, one killed, down leaves nothing`, { skip }, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-cluster-'));
  chmodSync(dir, 0o755);
  let pids = [];
  try {
    const url = cluster(dir, 'up', '2');
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const ports = readFileSync(path.join(dir, 'replica-ports'), 'utf8').trim().split('\n');
    assert.equal(ports.length, 2);
    const replicaPids = [1, 2].map((i) => Number(readFileSync(path.join(dir, `replica-${i}`, 'pid'), 'utf8')));
    const nginxPid = Number(readFileSync(path.join(dir, 'nginx', 'nginx.pid'), 'utf8'));
    const pgPid = Number(readFileSync(path.join(dir, 'pg', 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    pids = [...replicaPids, nginxPid, ...children(nginxPid), pgPid, ...children(pgPid)];
    assert.ok(pids.every(alive));

    const user = new Client(url);
    await user.signupAndLogin('cluster@example.com');
    for (let i = 0; i < 20; i++) {
      const me = await user.request('GET', '/v1/me');
      assert.equal(me.status, 200, me.body);
      assert.equal(me.json.email, 'cluster@example.com');
    }
    const served = upstreams(dir, '/v1/me');
    const counts = Object.fromEntries(ports.map((p) => [p, served.filter((u) => u === `127.0.0.1:${p}`).length]));
    console.log(`GET /v1/me through nginx, answers per replica port: ${JSON.stringify(counts)}`);
    for (const p of ports) assert.ok(counts[p] >= 5, `replica on port ${p} answered ${counts[p]} of 20`);

    // One replica dies without a word: every request through nginx still succeeds, writes included.
    process.kill(replicaPids[0], 'SIGKILL');
    let moved = 0;
    for (let i = 0; i < 20; i++) {
      const me = await user.request('GET', '/v1/me');
      assert.equal(me.status, 200, `request ${i} after the kill: ${me.status} ${me.body}`);
    }
    // Writes: a login (a new session) and its logout.
    const again = new Client(url);
    await again.login('cluster@example.com', 'correct-horse-battery');
    assert.equal((await again.request('POST', '/v1/auth/logout')).status, 200);
    assert.equal((await again.request('GET', '/v1/me')).status, 401);
    const after = upstreams(dir, '/v1/me').slice(20, 40);
    moved = after.filter((u) => u.includes(',')).length;
    assert.ok(after.every((u) => u.endsWith(`127.0.0.1:${ports[1]}`)), `after the kill: ${after.join(' | ')}`);
    console.log(`after SIGKILL of replica 1: ${after.length} of ${after.length} answered by replica 2; ` +
      `${moved} retried past the dead one by nginx`);
    const status = cluster(dir, 'status');
    assert.match(status, /replica 1: not running/);
  } finally {
    cluster(dir, 'down');
  }
  const left = pids.filter(alive);
  assert.deepEqual(left, [], `processes left after down: ${left.join(' ')}`);
  assert.ok(!existsSync(path.join(dir, 'url')));
  rmSync(dir, { recursive: true, force: true });
});
