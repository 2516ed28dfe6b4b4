// The cluster started by one command (issue 20): scripts/cluster.sh up 2 starts PostgreSQL, two
// replicas and nginx (deploy/nginx/gpunex.conf) on loopback. Through nginx a user signs up and logs
// in; nginx's access log shows both replicas answering; one replica killed with SIGKILL, requests
// through nginx still succeed (reads and writes); `down` leaves no process behind. And PostgreSQL
// restarted under the cluster while logins are written: the replicas answer not ready meanwhile,
// come back by themselves, lose no acknowledged write, and hear each other's changes again. Run
// once, in the PostgreSQL suite: the cluster starts a PostgreSQL of its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BACKEND, BIN, ROOT, Client, until } from '../lib/server.mjs';
import { approvedProvider } from '../lib/provider.mjs';
import { startAgent } from '../lib/agent.mjs';
import { agentlessMachine, customerWithCredit, RENTAL_SERVER_ARGS } from '../lib/rentals.mjs';

const skip = BACKEND !== 'postgres' && 'the cluster runs on PostgreSQL (run in the api_postgres suite)';

// Each test's balancer on ports of its own: fetch keeps connections to an origin open, and one to
// the previous test's nginx on the same port would fail a POST.
const basePort = new Map();

// Replica flags per cluster dir (GPUNEX_CLUSTER_SERVER_ARGS), for a test that needs some.
const serverArgs = new Map();

function clusterEnv(dir) {
  return { ...process.env, GPUNEX_CLUSTER_DIR: dir, GPUNEX_BIN_DIR: BIN, GPUNEX_CLUSTER_PORT: basePort.get(dir),
    ...(serverArgs.has(dir) ? { GPUNEX_CLUSTER_SERVER_ARGS: serverArgs.get(dir) } : {}) };
}

function newClusterDir() {
  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-cluster-'));
  chmodSync(dir, 0o755);  // nginx's workers enter it
  basePort.set(dir, String(8000 + 100 * basePort.size));
  return dir;
}

function cluster(dir, ...args) {
  return execFileSync(path.join(ROOT, 'scripts', 'cluster.sh'), args, {
    env: clusterEnv(dir), encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'], timeout: 120000,
  }).trim();
}

// The same, without blocking the event loop (requests go on meanwhile).
async function clusterAsync(dir, ...args) {
  const { stdout } = await promisify(execFile)(path.join(ROOT, 'scripts', 'cluster.sh'), args, {
    env: clusterEnv(dir), encoding: 'utf8', timeout: 120000,
  });
  return stdout.trim();
}

// A process's state letter and start time (clock ticks after boot), or null when there is none.
function procStat(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0], start: fields[19] };
  } catch {
    return null;
  }
}

// The same process still there: not exited (a zombie, exited but not yet reaped by its new parent, has),
// and started when it was seen first (`seen`: {pid, start}). A
// backend that exited during the test may have its pid taken by another test's process meanwhile.
function stillThere(seen) {
  const s = procStat(seen.pid);
  return s !== null && s.state !== 'Z' && s.start === seen.start;
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
  const dir = newClusterDir();
  let pids = [];
  try {
    const url = cluster(dir, 'up', '2');
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const ports = readFileSync(path.join(dir, 'replica-ports'), 'utf8').trim().split('\n');
    assert.equal(ports.length, 2);
    const replicaPids = [1, 2].map((i) => Number(readFileSync(path.join(dir, `replica-${i}`, 'pid'), 'utf8')));
    const nginxPid = Number(readFileSync(path.join(dir, 'nginx', 'nginx.pid'), 'utf8'));
    const pgPid = Number(readFileSync(path.join(dir, 'pg', 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    pids = [...replicaPids, nginxPid, ...children(nginxPid), pgPid, ...children(pgPid)]
      .map((pid) => ({ pid, start: procStat(pid)?.start }));
    assert.ok(pids.every(stillThere));

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
  const left = pids.filter(stillThere).map((p) => p.pid);
  assert.deepEqual(left, [], `processes left after down: ${left.join(' ')}`);
  assert.ok(!existsSync(path.join(dir, 'url')));
  rmSync(dir, { recursive: true, force: true });
});

// A rolling restart (scripts/cluster.sh restart, as the README's loop of systemctl restart): each
// replica drains on SIGTERM and is ready again, and nginx has tried it again, before the next stops, so
// a stream of reads and writes through nginx sees no error at all. And the links the replicas hand out
// name the balancer (their public_url), not a replica's own port.
test(`${BACKEND}: scripts/cluster.sh restart: replicas one at a time, every request through nginx answered`, { skip }, async () => {
  const dir = newClusterDir();
  try {
    const url = cluster(dir, 'up', '2');
    const pidsBefore = [1, 2].map((i) => readFileSync(path.join(dir, `replica-${i}`, 'pid'), 'utf8').trim());
    const user = new Client(url);
    await user.signupAndLogin('rolling@example.com');
    const answers = {};
    let requests = 0;
    let stop = false;
    const count = (r, what) => { requests++; const k = `${what} ${r.status}`; answers[k] = (answers[k] || 0) + 1; };
    const load = (async () => {
      while (!stop) {
        count(await user.request('GET', '/v1/me'), 'GET /v1/me');
        count(await new Client(url).request('POST', '/v1/auth/login',
          { body: { email: 'rolling@example.com', password: 'correct-horse-battery' } }), 'POST /v1/auth/login');
        await sleep(20);
      }
    })();
    let tookMs;
    try {
      await sleep(300);
      const t0 = performance.now();
      await clusterAsync(dir, 'restart');
      tookMs = performance.now() - t0;
      await sleep(300);
    } finally {
      stop = true;
      await load;
    }
    const pidsAfter = [1, 2].map((i) => readFileSync(path.join(dir, `replica-${i}`, 'pid'), 'utf8').trim());
    console.log(`rolling restart of 2 replicas took ${tookMs.toFixed(0)} ms; ${requests} requests through nginx: ` +
      JSON.stringify(answers));
    assert.ok(pidsBefore.every((p, i) => p !== pidsAfter[i]), `both replicas restarted: ${pidsBefore} -> ${pidsAfter}`);
    assert.ok(requests >= 20, `${requests} requests during the restart`);
    assert.deepEqual(Object.keys(answers).sort(), ['GET /v1/me 200', 'POST /v1/auth/login 200'], JSON.stringify(answers));

    // A mail's link names the balancer: the replicas' public_url is nginx's address.
    assert.equal((await new Client(url).request('POST', '/v1/auth/password-reset',
      { body: { email: 'rolling@example.com' } })).status, 202);
    const mail = await until('the reset mail in a replica\'s mail drop', () => {
      for (const i of [1, 2]) {
        const drop = path.join(dir, `replica-${i}`, 'mail');
        if (!existsSync(drop)) continue;
        for (const f of readdirSync(drop)) {
          const text = readFileSync(path.join(drop, f), 'utf8');
          if (text.includes('reset-password')) return text;
        }
      }
      return null;
    }, 30000, 100);
    assert.ok(mail.includes(`${url}/#/reset-password/`), mail);
  } finally {
    cluster(dir, 'down');
  }
  rmSync(dir, { recursive: true, force: true });
});

test(`${BACKEND}: PostgreSQL restarted under the cluster: not ready meanwhile, back by itself, nothing lost`, { skip }, async () => {
  const dir = newClusterDir();
  try {
    const url = cluster(dir, 'up', '2');
    const ports = readFileSync(path.join(dir, 'replica-ports'), 'utf8').trim().split('\n');
    const replica = ports.map((p) => `http://127.0.0.1:${p}`);
    const db = readFileSync(path.join(dir, 'db-url'), 'utf8').trim();
    // approvedProvider() through the balancer; its reviewer is made with the admin command on the store.
    const server = {
      url,
      createUser(email, password, role) {
        execFileSync(path.join(BIN, 'gpunex-server'), ['admin', 'create-user', '--db', db, '--email', email, '--role',
          role, '--full-name', 'Reviewer', '--password-stdin'], { input: `${password}\n`, stdio: ['pipe', 'pipe', 'pipe'] });
      },
    };
    const { client: provider, key } = await approvedProvider(server, 'chaos@example.com');

    // Logins (each a session written) one after another through nginx while PostgreSQL restarts,
    // and each replica's /readyz watched.
    const user = new Client(url);
    await user.signupAndLogin('logins@example.com');
    const acknowledged = [];
    const refused = {};
    const notReady = [0, 0];
    let stop = false;
    const writer = (async () => {
      while (!stop) {
        const r = await new Client(url).request('POST', '/v1/auth/login',
          { body: { email: 'logins@example.com', password: 'correct-horse-battery' } });
        if (r.status === 200) acknowledged.push(r.json.token);
        else refused[r.status] = (refused[r.status] || 0) + 1;
        await sleep(100);
      }
    })();
    const watcher = (async () => {
      while (!stop) {
        for (const i of [0, 1]) {
          const r = await fetch(`${replica[i]}/readyz`).catch(() => null);
          if (r && r.status === 503) notReady[i]++;
        }
        await sleep(25);
      }
    })();
    // Three logins acknowledged before the restart (each hashes a password: on a crowded 2-core CI
    // machine a second held only two).
    await until('three logins before the restart', () => acknowledged.length >= 3, 30000, 50);
    const before = acknowledged.length;
    const t0 = performance.now();
    await clusterAsync(dir, 'restart-db');
    const restartMs = performance.now() - t0;
    const backMs = await until('both replicas ready and listening again', async () => {
      const answers = await Promise.all(replica.map((u) => new Client(u).request('GET', '/readyz')));
      return answers.every((a) => a.status === 200 && a.json.change_feed === 'listening') && performance.now() - t0;
    }, 30000, 50);
    await until('a login acknowledged after the restart', () => acknowledged.length > before, 30000, 50);
    await sleep(500);
    stop = true;
    await Promise.all([writer, watcher]);
    console.log(`PostgreSQL restart took ${restartMs.toFixed(0)} ms; replicas ready and listening again ` +
      `${backMs.toFixed(0)} ms after it began; /readyz 503 seen ${notReady.join(' and ')} times; logins ` +
      `acknowledged ${acknowledged.length} (${before} before the restart), refused ${JSON.stringify(refused)}`);
    assert.ok(before >= 3 && acknowledged.length > before, 'logins went on before and after the restart');
    assert.ok(notReady.every((n) => n > 0), `each replica said not ready while PostgreSQL was down: ${notReady}`);
    for (const status of Object.keys(refused)) assert.equal(Number(status), 503, `refused with ${status}`);

    // Nothing acknowledged is lost: every session answered 200 still works, on either replica.
    for (const [i, token] of acknowledged.entries()) {
      const c = new Client(replica[i % 2]);
      c.token = token;
      assert.equal((await c.request('GET', '/v1/me')).status, 200, `session ${i} of ${acknowledged.length}`);
    }
    // The replicas hear each other again: a key revoked through replica 1 is refused by replica 2 within 1 s.
    const onTwo = new Client(replica[1]);
    onTwo.token = key;
    assert.equal((await onTwo.request('GET', '/v1/provider/profile')).status, 200);
    const keys = await provider.request('GET', '/v1/provider/api-keys');
    const revokeOnOne = new Client(replica[0]);
    revokeOnOne.token = provider.token;
    assert.equal((await revokeOnOne.request('DELETE', `/v1/provider/api-keys/${keys.json.items[0].id}`)).status, 200);
    const t1 = performance.now();
    await until('the revoked key refused on replica 2', async () =>
      (await onTwo.request('GET', '/v1/provider/profile')).status === 401, 5000, 50);
    const revokeMs = performance.now() - t1;
    console.log(`after the restart, revoked on replica 1, refused on replica 2 after ${revokeMs.toFixed(0)} ms`);
    assert.ok(revokeMs < 1000);
  } finally {
    cluster(dir, 'down');
  }
  rmSync(dir, { recursive: true, force: true });
});


const TAKEOVER_S = 2;  // --idempotency-takeover-s of the chaos test's replicas
// kill -9 of a replica under load (issue 20's chaos test): real agents heartbeat through nginx every
// second (each spools a heartbeat until it is acknowledged, with a sequence number the server stores
// once), and a customer rents and stops GPUs, each request retried with its Idempotency-Key after a
// failure. Replica 1 is killed in the middle. Afterwards every agent's sequence numbers are stored
// from 1 without a gap (nothing lost; the store keeps each once), heartbeats went on after the kill,
// and every rental key sent (acknowledged, or sent again) made exactly one rental.
test(`${BACKEND}: kill -9 of a replica under heartbeat and rental load: nothing lost, nothing twice`, { skip }, async () => {
  const dir = newClusterDir();
  serverArgs.set(dir, [...RENTAL_SERVER_ARGS, '--heartbeat-interval', '1', '--allow-simulated-offers', 'true',
    '--require-challenge-answers', 'false', '--idempotency-takeover-s', String(TAKEOVER_S)].join(' '));
  const agents = [];
  let rig;
  try {
    const url = cluster(dir, 'up', '2');
    const db = readFileSync(path.join(dir, 'db-url'), 'utf8').trim();
    const sql = (q) => execFileSync('psql', [db, '-tAc', q], { encoding: 'utf8' }).trim();
    const replicaPids = [1, 2].map((i) => Number(readFileSync(path.join(dir, `replica-${i}`, 'pid'), 'utf8')));
    const server = {
      url,
      createUser(email, password, role) {
        execFileSync(path.join(BIN, 'gpunex-server'), ['admin', 'create-user', '--db', db, '--email', email, '--role',
          role, '--full-name', 'Operator', '--password-stdin'], { input: `${password}\n`, stdio: ['pipe', 'pipe', 'pipe'] });
      },
    };
    for (const n of [1, 2, 3]) {
      const { key } = await approvedProvider(server, `hb${n}@example.com`);
      agents.push(startAgent(url, key, { simulate: 'L40S:1', args: ['--bench-storage-mib', '8', '--bench-net-mib', '2'] }));
    }
    rig = await agentlessMachine(server, 'rig@example.com', { gpus: 2 });
    const customer = await customerWithCredit(server, '100.00');
    await until('three agents heartbeating', () => Number(sql(
      "SELECT COUNT(*) FROM machines WHERE hostname <> 'rig' AND last_seq > 0")) >= 3,
    60000);

    // Rentals: rent one GPU, stop it, again; a failed request is sent again with the same key.
    const keys = [];
    let failures = 0;
    let stop = false;
    // A request the killed replica had reserved its key for, and had committed nothing of, is "in progress"
    // (409) until a retry takes the key over, idempotency_takeover_s after the reservation.
    let answeredOnRetry = 0;
    const send = async (method, p, body, key) => {
      for (let attempt = 0; attempt < 50 + TAKEOVER_S * 10; attempt++) {
        try {
          const r = await customer.request(method, p, { body, headers: { 'Idempotency-Key': key } });
          if (r.status < 500 && !(r.status === 409 && r.json?.error?.code === 'idempotency_in_progress')) {
            if (attempt > 0) answeredOnRetry++;
            return r;
          }
        } catch { /* the connection died with the replica */ }
        failures++;
        await sleep(100);
      }
      throw new Error(`${method} ${p} never answered`);
    };
    const renter = (async () => {
      for (let i = 0; !stop; i++) {
        const key = `chaos-rent-${process.pid}-${i}`;
        keys.push(key);
        const r = await send('POST', '/v1/rentals', { machine_id: rig.machine.id, gpu_count: 1,
          image: 'docker.io/library/busybox:1.36', command: ['sleep', '3600'] }, key);
        assert.equal(r.status, 201, r.body);
        const stopped = await send('POST', `/v1/rentals/${r.json.id}/stop`, {}, `${key}-stop`);
        assert.ok(stopped.status === 200 || stopped.status === 202, stopped.body);
        await sleep(50);
      }
    })();
    await sleep(3000);
    process.kill(replicaPids[0], 'SIGKILL');
    const killedAt = Date.now();
    const seqAtKill = new Map(sql("SELECT id, last_seq FROM machines WHERE hostname <> 'rig'").split('\n')
      .map((l) => l.split('|')).map(([id, seq]) => [id, Number(seq)]));
    await sleep(Math.max(5000, TAKEOVER_S * 1000 + 2000));
    stop = true;
    await renter;

    // Each agent: every seq from 1 to its last was stored once. The agent sends its heartbeats in seq
    // order, and each stored heartbeat adds one beat to its minute's presence, so a lost one leaves fewer
    // beats than the last seq and one stored twice more.
    await sleep(2500);  // the heartbeats in flight at the kill are spooled and sent again
    const rows = sql("SELECT m.hostname, m.id, m.last_seq, (SELECT COALESCE(SUM(p.beats), 0) FROM presence_minute p " +
      "WHERE p.machine_id = m.id) FROM machines m WHERE m.hostname <> 'rig' ORDER BY m.hostname")
      .split('\n').map((l) => l.split('|'));
    assert.equal(rows.length, 3, JSON.stringify(rows));
    for (const [host, id, lastSeq, beats] of rows) {
      assert.equal(Number(beats), Number(lastSeq), `${host} ${id}: ${beats} heartbeats stored, up to seq ${lastSeq}`);
      const after = Number(lastSeq) - seqAtKill.get(id);
      assert.ok(after >= 3, `${host}: ${after} heartbeats after the kill`);
    }
    // Rentals: one per key that was sent, never two.
    const made = Number(sql(`SELECT COUNT(*) FROM rentals WHERE machine_id = '${rig.machine.id}'`));
    console.log(`kill -9 under load: ${rows.map((r) => `${r[0]} ${r[2]} heartbeats`).join(', ')}; ` +
      `${keys.length} rentals made and stopped, ${failures} requests sent again after the kill, ` +
      `${answeredOnRetry} answered on a retry`);
    assert.equal(made, keys.length, `${made} rentals stored for ${keys.length} keys`);
    assert.ok(keys.length >= 3);
  } finally {
    for (const a of agents) await a.stop();
    if (rig) await rig.agent.stop();
    cluster(dir, 'down');
  }
  rmSync(dir, { recursive: true, force: true });
});
