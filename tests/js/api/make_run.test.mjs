// `make run` (scripts/run.sh, with the build already done) on a free port and a temporary folder:
// it prints the first admin login and the dashboard URL, serves the dashboard and /healthz, starts
// the local agent (simulated when NVML finds no GPU, and says so) whose machine comes Online for
// the demo provider, and on Ctrl-C (SIGINT to its process group, as a terminal sends it) stops the
// agent and the server, exits 130 and leaves no process behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { BACKEND, BIN, ROOT, TestServer, Client, until } from '../lib/server.mjs';
import { freePort } from '../lib/smtp.mjs';
import { Pty } from '../lib/pty.mjs';

// Processes whose command line names `dir` (the server and the agent both take a folder under it).
function processesUsing(dir) {
  const found = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
      if (cmd.includes(dir)) found.push(`${pid}: ${cmd}`);
    } catch { /* gone meanwhile */ }
  }
  return found;
}

test(`${BACKEND}: make run serves the dashboard with a local agent and stops cleanly on Ctrl-C`, async () => {
  const { dir, db } = new TestServer().prepare();
  const listen = `127.0.0.1:${await freePort()}`;
  const url = `http://${listen}`;
  const proc = spawn(path.join(ROOT, 'scripts', 'run.sh'), [], {
    env: { ...process.env, GPUNEX_BIN_DIR: BIN, GPUNEX_VAR_DIR: dir, GPUNEX_DB: db, GPUNEX_LISTEN: listen },
    detached: true, // its own process group, like a shell job: SIGINT goes to the script and its children
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  try {
    await until('make run to be ready', () => out.includes('Ctrl-C stops the agent and the server.') || proc.exitCode !== null,
      120000);
    assert.equal(proc.exitCode, null, out);
    assert.ok(out.includes(`Dashboard: ${url}/\n`), out);

    // Output that is not a terminal (here a pipe; a log file, a log shipper): the first admin's
    // login is in a 0600 file under the var folder, and no line of the output carries the password.
    const adminFile = path.join(dir, 'first-admin.txt');
    assert.equal(statSync(adminFile).mode & 0o777, 0o600);
    const admin = readFileSync(adminFile, 'utf8').match(/^e-mail: +(\S+)\npassword: (\S+)\n$/);
    assert.ok(admin, readFileSync(adminFile, 'utf8'));
    assert.ok(!out.includes(admin[2]), out);
    assert.ok(out.includes(`its password is in ${adminFile} (mode 0600`), out);
    assert.ok(out.split('\n').some((l) => l.startsWith('{"')), `the server's JSON log lines are in the output:\n${out}`);
    const staff = new Client(url);
    assert.ok((await staff.login(admin[1], admin[2])).user.roles.includes('admin'));

    const page = await fetch(`${url}/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type'), /^text\/html/);
    assert.match(await page.text(), /<title>[^<]*GPUnex/);
    const health = await fetch(`${url}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok' });

    // Simulated exactly when this host has no GPU that NVML finds, and it says which.
    const realGpus = spawnSync(path.join(BIN, 'gpunex-agent'), ['info'], { stdio: 'ignore' }).status === 0;
    assert.match(out, realGpus ? /Agent: NVML found GPUs; reporting this host's real GPUs\./
      : /Agent: no NVIDIA GPUs found \(NVML\); running a SIMULATED [12]x (L40S|L4) /);
    // Rentals need a container engine: with none on this host, make run starts a throwaway Podman
    // service for the demo agent (else its machine would not be offered), and stops it on Ctrl-C
    // (processesUsing below finds none left).
    const podman = spawnSync('sh', ['-c', 'command -v podman'], { stdio: 'ignore' }).status === 0;
    if (!process.env.DOCKER_HOST && !existsSync('/var/run/docker.sock') && podman) {
      assert.match(out, /Containers: a throwaway Podman service at unix:\/\/\S+\/podman\/podman\.sock /, out);
    }
    // The demo provider's password is in a 0600 file, not in the output.
    const demo = out.match(/Demo provider login: (\S+), its password in (\S+) \(mode 0600\)/);
    assert.ok(demo, out);
    assert.equal(statSync(demo[2]).mode & 0o777, 0o600);
    const demoPassword = readFileSync(demo[2], 'utf8').trim();
    assert.ok(!out.includes(demoPassword), out);
    const provider = new Client(url);
    await provider.login(demo[1], demoPassword);
    const machine = await until('the demo machine Online', async () => {
      const r = await provider.request('GET', '/v1/provider/machines');
      return r.status === 200 && r.json.items.find((m) => m.status === 'online');
    }, 60000);
    assert.equal(machine.simulated, !realGpus);

    // Once benchmarked, the summary tells the truth about every GPU, as the API does: listed with
    // its score, or delisted with the reason (issue #14: it said nothing while they were delisted).
    await until('the demo GPUs\' benchmark verdict', () => /Demo GPU \d+ .*\n/.test(out) || proc.exitCode !== null, 300000);
    const verdicts = [...out.matchAll(/Demo GPU (\d+) \(([^,)]+)[^)]*\): (listed, perf score ([\d.]+)|DELISTED: (.*))\n/g)];
    const listed = (await provider.request('GET', '/v1/provider/machines')).json.items[0].gpus;
    assert.equal(verdicts.length, listed.length, out);
    for (const v of verdicts) {
      const g = listed.find((x) => x.index === Number(v[1]));
      assert.ok(g && g.benchmarked, JSON.stringify(listed));
      assert.equal(v[2], g.model);
      assert.equal(Boolean(v[4]), g.listed, `${v[0]} vs ${JSON.stringify(g)}`);
      if (g.listed) assert.equal(Number(v[4]), Number(g.perf_score.toFixed(1)));
      else assert.equal(v[5], g.delist_reason);
    }
    // Each model has the rate the output names, and a listed GPU of a machine that can run rentals is
    // offered to customers at it (a GPU with no rate is not offered: the demo was an empty marketplace).
    const prices = (await provider.request('GET', '/v1/provider/prices')).json.items;
    for (const model of new Set(listed.map((g) => g.model))) {
      const said = out.match(new RegExp(`Demo rate: ${model} at (\\d+\\.\\d+) USDC/GPU-hour`));
      assert.ok(said, out);
      assert.equal(prices.find((p) => p.model === model)?.usdc_per_gpu_hour, said[1]);
    }
    const demoMachine = (await provider.request('GET', '/v1/provider/machines')).json.items[0];
    if (!demoMachine.rentals_blocked && listed.some((g) => g.listed)) {
      const offers = await until('the demo GPU offered', async () => {
        const r = await new Client(url).request('GET', '/v1/marketplace/offers');
        return r.json.items.length > 0 && r.json.items;
      }, 30000);
      assert.ok(offers.every((o) => o.machine_id === demoMachine.id), JSON.stringify(offers));
      for (const o of offers) {
        assert.equal(o.usdc_per_gpu_hour, prices.find((p) => p.model === o.model)?.usdc_per_gpu_hour, JSON.stringify(o));
      }
    }

    process.kill(-proc.pid, 'SIGINT');
    let timer;
    const end = await Promise.race([exited, new Promise((r) => { timer = setTimeout(() => r('timeout'), 30000); })]);
    clearTimeout(timer);
    assert.deepEqual(end, { code: 130, signal: null }, out);
    assert.match(out, /Stopping\.\.\./);
    assert.deepEqual(processesUsing(dir), []);
    await assert.rejects(fetch(`${url}/healthz`));
  } finally {
    try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* already gone */ }
  }
});

test(`${BACKEND}: make run on a terminal prints the first admin's login once, outside the JSON log lines`, async () => {
  const { dir, db } = new TestServer().prepare();
  const listen = `127.0.0.1:${await freePort()}`;
  const url = `http://${listen}`;
  const tty = new Pty([path.join(ROOT, 'scripts', 'run.sh')], {
    env: { ...process.env, GPUNEX_BIN_DIR: BIN, GPUNEX_VAR_DIR: dir, GPUNEX_DB: db, GPUNEX_LISTEN: listen,
      GPUNEX_NO_AGENT: '1' },
  });
  try {
    await tty.expect('Ctrl-C stops the agent and the server.', 120000);
    // A request the access log writes a JSON line for, after the login was printed.
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    await tty.expect(/"path":"\/healthz"/);
    const lines = tty.text.split('\n');
    const m = tty.text.match(/^First admin account \(shown once\):\n {2}e-mail: +(\S+)\n {2}password: (\S+)$/m);
    assert.ok(m, tty.text);
    const [, email, password] = m;
    assert.equal(tty.text.split(password).length - 1, 1, `printed once:\n${tty.text}`);
    const jsonLines = lines.filter((l) => { try { return typeof JSON.parse(l) === 'object'; } catch { return false; } });
    assert.ok(jsonLines.length > 0, tty.text);
    assert.ok(jsonLines.every((l) => !l.includes(password)));
    assert.ok(!existsSync(path.join(dir, 'first-admin.txt')), 'no file when it was shown on the terminal');
    assert.ok((await new Client(url).login(email, password)).user.roles.includes('admin'));

    tty.type('\x03');  // Ctrl-C on the terminal
    assert.equal((await tty.wait(30000)).code, 130, tty.text);
    assert.deepEqual(processesUsing(dir), []);
  } finally {
    // Only if Ctrl-C did not stop them: the script's own children, found by their folder.
    for (const p of processesUsing(dir)) process.kill(Number(p.split(':')[0]), 'SIGKILL');
    if (tty.proc.exitCode === null) tty.proc.kill('SIGKILL');
  }
});
