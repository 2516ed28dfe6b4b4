// The gpunex CLI's rental verbs (issue 16): `gpunex rent` and `gpunex rentals list|show|logs|stop`.
// Arguments are checked before anything is sent; rent sends one Idempotency-Key and resends it when
// the answer is lost (a stand-in server answers 503 first), so a retry never rents twice; against a
// real server a customer with credit rents an offer, follows it to running (the test posts the
// agent's messages), reads its logs, stops it, and sees why it ended, with --json everywhere; the
// server's refusals (balance, field, another customer's rental) print its message and exit 1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BACKEND, BIN, TestServer, Client, until } from '../lib/server.mjs';
import { gpunex, homeLoggedIn } from '../lib/cli.mjs';
import { approvedProvider } from '../lib/provider.mjs';
import { postedMachine } from '../lib/rental_machine.mjs';

// The same, without blocking this process (a stand-in server in this process must answer it).
function gpunexAsync(home, args) {
  return new Promise((resolve) => {
    const p = spawn(path.join(BIN, 'gpunex'), args, { env: { PATH: process.env.PATH, HOME: home } });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('exit', (code) => resolve({ code, out, err }));
  });
}

test('gpunex rent and rentals: argument errors, before anything is sent', () => {
  // Nothing listens here: a command that got as far as sending would fail differently.
  const home = homeLoggedIn('http://127.0.0.1:9');
  const rent = (...args) => gpunex(home, ['rent', ...args]);
  const fails = (r, pattern) => {
    assert.notEqual(r.code, 0, r.out);
    assert.match(r.err, pattern);
    assert.doesNotMatch(r.err, /127\.0\.0\.1:9|Couldn't connect|refused/i, 'nothing was sent');
  };
  fails(rent('--model', 'L40S'), /--image is required/);
  fails(rent('--image', 'docker.io/library/ubuntu:22.04'), /--machine ID \(one offer\) or --model MODEL/);
  fails(rent('--machine', 'mch_1', '--region', 'eu-west', '--image', 'x'), /--machine excludes --region/);
  fails(rent('--machine', 'mch_1', '--max-price', '1', '--image', 'x'), /--machine excludes --max-price/);
  fails(rent('--model', 'L40S', '--image', 'x', '--env', 'NOVALUE'), /--env NOVALUE: write it as NAME=VALUE/);
  fails(rent('--model', 'L40S', '--image', 'x', '--env', '=1'), /--env =1: write it as NAME=VALUE/);
  fails(rent('--model', 'L40S', '--image', 'x', '--env', 'A=1', '--env', 'A=2'), /--env A is given twice/);
  fails(rent('--model', 'L40S', '--image', 'x', '--port', 'http'), /--port/);
  fails(rent('--model', 'L40S', '--image', 'x', '--gpus', 'two'), /--gpus/);
  fails(rent('--model', 'L40S', '--image', 'x', '--max-hours', 'soon'), /--max-hours/);
  fails(rent('--model', 'L40S', '--image', 'x', '--ssh-key', path.join(home, 'nope.pub')), /--ssh-key: cannot read/);
  const priv = path.join(home, 'id_ed25519');
  writeFileSync(priv, '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n');
  fails(rent('--model', 'L40S', '--image', 'x', '--ssh-key', priv), /is a private key; give the public one/);
  // A command's own options need `--` before it.
  fails(rent('--model', 'L40S', '--image', 'x', 'sh', '-c', 'true'), /-c/);
  fails(gpunex(home, ['rentals']), /A subcommand is required/);
  fails(gpunex(home, ['rentals', 'show']), /ID is required/);
  fails(gpunex(home, ['rentals', 'logs']), /ID is required/);
  fails(gpunex(home, ['rentals', 'stop']), /ID is required/);
  fails(gpunex(home, ['machines', 'stop-rental']), /ID is required/);

  // Not logged in: said before sending.
  const fresh = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
  for (const args of [['rent', '--model', 'L40S', '--image', 'x'], ['rentals', 'list'], ['rentals', 'show', 'rnt_1'],
    ['rentals', 'logs', 'rnt_1'], ['rentals', 'stop', 'rnt_1']]) {
    const r = gpunex(fresh, ['--server', 'http://127.0.0.1:9', ...args]);
    assert.equal(r.code, 1, args.join(' '));
    assert.equal(r.err, 'error: not logged in to http://127.0.0.1:9; run `gpunex login`\n', args.join(' '));
  }

  const help = gpunex(home, ['rent', '--help']);
  assert.equal(help.code, 0);
  for (const s of ['--machine', '--model', '--region', '--min-reliability', '--max-price', '--gpus', '--image', '--env',
    '--port', '--max-hours', '--ssh-key', '--json', 'Idempotency-Key', 'COMMAND']) assert.ok(help.out.includes(s), s);
  const top = gpunex(home, ['--help']);
  assert.match(top.out, /rent\s+rent GPUs/);
  assert.match(top.out, /rentals\s+your rentals/);
});

test('gpunex rent: the request it sends, and one Idempotency-Key through retries', async () => {
  const seen = [];
  let answers = [503, 201];
  const rental = { id: 'rnt_stand_in', state: 'requested', machine_id: 'mch_a', model: 'L40S', gpu_count: 2, gpus: [],
    usdc_per_gpu_hour: '0.500000', cost_per_hour: '1.000000', image: 'docker.io/library/ubuntu:22.04', command: ['sh', '-c', "echo 'hi'"],
    env_names: ['A', 'B'], ports: [{ container_port: 8888, host_port: null }], max_hours: 2.5, created_at: '2026-01-02T03:04:05Z',
    running_since: null, ended_at: null, end_reason: null, end_text: null, exit_code: null, oom: false, seconds_metered: 0,
    cost_so_far: '0.000000' };
  const stand = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, key: req.headers['idempotency-key'], auth: req.headers.authorization,
        body: JSON.parse(body) });
      const status = answers.shift() ?? 201;
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(status === 201 ? rental : { error: { code: 'unavailable', message: 'busy' } }));
    });
  });
  await new Promise((r) => stand.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${stand.address().port}`;
  try {
    const home = homeLoggedIn(url);
    const key = path.join(home, 'id.pub');
    writeFileSync(key, 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx me@laptop\n');
    const r = await gpunexAsync(home, ['rent', '--model', 'L40S', '--region', 'eu-west', '--min-reliability', '90',
      '--max-price', '1.20', '--gpus', '2', '--image', 'docker.io/library/ubuntu:22.04', '--env', 'A=1=2', '--env', 'B=',
      '--port', '8888', '--max-hours', '2.5', '--ssh-key', key, '--', 'sh', '-c', "echo 'hi'"]);
    assert.equal(r.code, 0, r.err);
    assert.equal(seen.length, 2, 'the 503 was retried');
    assert.equal(seen[0].key, seen[1].key, 'with the same Idempotency-Key');
    assert.match(seen[0].key, /^rent-[A-Za-z0-9_-]{20,}$/);
    assert.deepEqual(seen[1].body, seen[0].body);
    assert.equal(seen[0].method, 'POST');
    assert.equal(seen[0].url, '/v1/rentals');
    assert.equal(seen[0].auth, 'Bearer test-token');
    assert.deepEqual(seen[0].body, {
      filters: { model: 'L40S', region: 'eu-west', min_reliability: 90, max_price: '1.20' }, gpu_count: 2,
      image: 'docker.io/library/ubuntu:22.04', command: ['sh', '-c', "echo 'hi'"], env: { A: '1=2', B: '' }, ports: [8888],
      max_hours: 2.5, ssh_public_key: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx me@laptop',
    });
    assert.match(r.out, /^Rental rnt_stand_in {2}requested$/m);
    assert.match(r.out, /^GPUs: +2 × L40S$/m);
    assert.match(r.out, /^Command: +sh -c 'echo '\\''hi'\\'''$/m);
    assert.match(r.out, /^Env: +A, B \(values not shown\)$/m);
    assert.match(r.out, /^Ports: +8888 \(bound when it runs\)$/m);
    assert.match(r.out, /^Max hours: +2\.5$/m);
    assert.match(r.out, /gpunex rentals stop rnt_stand_in/);

    // One offer: machine_id with the model beside it, no filters; --idempotency-key is sent as given.
    seen.length = 0;
    const one = await gpunexAsync(home, ['rent', '--machine', 'mch_a', '--model', 'L40S', '--image', 'busybox',
      '--idempotency-key', 'my-key-1', '--json']);
    assert.equal(one.code, 0, one.err);
    assert.deepEqual(seen.map((s) => [s.key, s.body]),
      [['my-key-1', { machine_id: 'mch_a', model: 'L40S', gpu_count: 1, image: 'busybox' }]]);
    assert.deepEqual(JSON.parse(one.out), rental);

    // The answer stays lost: it says so and names the key that retries without renting twice.
    seen.length = 0;
    answers = [503, 503, 503, 503];
    const lost = await gpunexAsync(home, ['rent', '--machine', 'mch_a', '--image', 'busybox']);
    assert.equal(lost.code, 1);
    assert.equal(seen.length, 4);
    assert.equal(new Set(seen.map((s) => s.key)).size, 1);
    assert.match(lost.err, /^error: busy/);
  } finally {
    stand.close();
  }

  // Nothing answers at all: whether it rented is unknown; the key to retry with is printed.
  const home = homeLoggedIn('http://127.0.0.1:9');
  const gone = gpunex(home, ['rent', '--machine', 'mch_a', '--image', 'busybox']);
  assert.equal(gone.code, 1);
  assert.match(gone.err, /whether it was rented is unknown: `gpunex rentals list` shows it, or rerun with --idempotency-key rent-[A-Za-z0-9_-]+ \(that never rents twice\)/);
});

function adminCredit(server, email, amount, reference) {
  const r = spawnSync(path.join(BIN, 'gpunex-server'), ['admin', 'credit', '--db', server.db, '--email', email,
    '--amount', amount, '--reference', reference], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
}

test(`${BACKEND}: gpunex rent, rentals list, show, logs, stop against the server`, async () => {
  const server = await new TestServer().start();
  let machine;
  try {
    const provider = await approvedProvider(server, 'prov@example.com');
    machine = await postedMachine(server, provider, { gpus: 2, price: '0.50' });
    const ann = new Client(server.url);
    await ann.signupAndLogin('ann@example.com');
    const home = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
    const login = gpunex(home, ['--server', server.url, 'login', '--email', 'ann@example.com', '--password-stdin'],
      'correct-horse-battery\n');
    assert.equal(login.code, 0, login.err);

    // No credit: refused, naming the amount the first hour needs.
    const poor = gpunex(home, ['rent', '--machine', machine.machineId, '--image', 'docker.io/library/busybox:latest']);
    assert.equal(poor.code, 1, poor.out);
    assert.match(poor.err, /^error: .*0\.5/);
    const poorJson = gpunex(home, ['rent', '--machine', machine.machineId, '--image', 'busybox', '--json']);
    assert.equal(poorJson.code, 1);
    assert.equal(JSON.parse(poorJson.out).error.code, 'insufficient_balance');

    adminCredit(server, 'ann@example.com', '10.00', 'wire cli-1');
    // A bad field: the server's message, naming the field.
    const badPort = gpunex(home, ['rent', '--machine', machine.machineId, '--image', 'busybox', '--port', '70000']);
    assert.equal(badPort.code, 1, badPort.out);
    assert.match(badPort.err, /port numbers from 1 to 65535 \(field: ports, --port\)/);
    // More GPUs than the offer has.
    const many = gpunex(home, ['rent', '--machine', machine.machineId, '--gpus', '3', '--image', 'busybox', '--json']);
    assert.equal(many.code, 1, many.out);
    assert.equal(JSON.parse(many.out).error.code, 'no_gpus_available');

    const args = ['rent', '--machine', machine.machineId, '--model', 'L40S', '--image', 'docker.io/library/busybox:latest',
      '--env', 'GREETING=hello', '--port', '8888', '--max-hours', '2', '--idempotency-key', 'cli-rent-1', '--json',
      '--', 'sh', '-c', 'echo $GREETING; sleep 3600'];
    const rent = gpunex(home, args);
    assert.equal(rent.code, 0, rent.err);
    const rental = JSON.parse(rent.out);
    assert.match(rental.id, /^rnt_/);
    assert.equal(rental.state, 'requested');
    assert.equal(rental.machine_id, machine.machineId);
    assert.equal(rental.gpu_count, 1);
    assert.equal(rental.usdc_per_gpu_hour, '0.500000');
    assert.deepEqual(rental.command, ['sh', '-c', 'echo $GREETING; sleep 3600']);
    assert.deepEqual(rental.env_names, ['GREETING']);
    assert.equal(rental.max_hours, 2);
    // The same command again (a retry with its key): the same rental, not a second one.
    const again = gpunex(home, args);
    assert.equal(again.code, 0, again.err);
    assert.equal(JSON.parse(again.out).id, rental.id);
    const listed = gpunex(home, ['rentals', 'list', '--json']);
    assert.equal(listed.code, 0, listed.err);
    assert.deepEqual(JSON.parse(listed.out).items.map((r) => r.id), [rental.id]);

    // The agent takes it: starting, then running with its port bound, then a line of output.
    const assigned = await machine.rentals();
    assert.deepEqual(assigned.rentals.map((r) => r.id), [rental.id]);
    await machine.event(rental.id, 'starting');
    await machine.event(rental.id, 'running', { ports: [{ container_port: 8888, host_port: 40001 }] });
    await machine.event(rental.id, 'logs', { logs: 'hello\n' });

    const show = gpunex(home, ['rentals', 'show', rental.id]);
    assert.equal(show.code, 0, show.err);
    assert.match(show.out, new RegExp(`^Rental ${rental.id} {2}running$`, 'm'));
    assert.match(show.out, /^GPUs: +1 × L40S: GPU-rig-l40s-\d$/m);
    assert.match(show.out, /^Price: +0\.500000 USDC per GPU-hour, 0\.500000 USDC per hour$/m);
    assert.match(show.out, /^Cost so far: +\d+\.\d{6} USDC for \d+ s running$/m);
    assert.match(show.out, /^Ports: +8888 → 127\.0\.0\.1:40001$/m);  // its machine's address: this test's loopback
    assert.match(show.out, new RegExp(`^Machine: +${machine.machineId}$`, 'm'), 'online: no warning');
    assert.match(show.out, /^Command: +sh -c 'echo \$GREETING; sleep 3600'$/m);
    assert.match(show.out, /^Max hours: +2$/m);
    const list = gpunex(home, ['rentals', 'list']);
    assert.equal(list.code, 0, list.err);
    assert.match(list.out, /^ID +STATE +GPUS +MACHINE +USDC\/H +COST SO FAR +RUN TIME +CREATED +ENDED$/m);
    assert.match(list.out, new RegExp(`^${rental.id} +running +1 × L40S +${machine.machineId} +0\\.500000 `, 'm'));

    // The help's page size is the one the server takes.
    const helpMax = gpunex(home, ['rentals', 'list', '--help']).out.match(/rentals per page, 1 to (\d+)/)[1];
    assert.equal(gpunex(home, ['rentals', 'list', '--limit', helpMax]).code, 0);
    const over = gpunex(home, ['rentals', 'list', '--limit', String(Number(helpMax) + 1)]);
    assert.equal(over.code, 1);
    assert.match(over.err, new RegExp(`limit must be a whole number from 1 to ${helpMax}`));

    const logs = gpunex(home, ['rentals', 'logs', rental.id]);
    assert.equal(logs.code, 0, logs.err);
    assert.equal(logs.out, 'hello\n');
    const logsJson = JSON.parse(gpunex(home, ['rentals', 'logs', rental.id, '--json']).out);
    assert.equal(logsJson.rental_id, rental.id);
    assert.equal(logsJson.logs, 'hello\n');

    // Another customer: not found, in the server's words.
    const bob = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
    await new Client(server.url).signupAndLogin('bob@example.com');
    assert.equal(gpunex(bob, ['--server', server.url, 'login', '--email', 'bob@example.com', '--password-stdin'],
      'correct-horse-battery\n').code, 0);
    for (const verb of ['show', 'logs', 'stop']) {
      const r = gpunex(bob, ['rentals', verb, rental.id, '--json']);
      assert.equal(r.code, 1, `${verb}: ${r.out}`);
      assert.equal(JSON.parse(r.out).error.code, 'rental_not_found', verb);
    }

    const stop = gpunex(home, ['rentals', 'stop', rental.id]);
    assert.equal(stop.code, 0, stop.err);
    assert.match(stop.out, new RegExp(`^Rental ${rental.id} is stopping: `));
    await machine.event(rental.id, 'ended');
    const ended = await until('the rental to end', async () => {
      const r = JSON.parse(gpunex(home, ['rentals', 'show', rental.id, '--json']).out);
      return r.state === 'ended' ? r : null;
    }, 10000);
    assert.equal(ended.end_reason, 'customer_stopped');
    const endedText = gpunex(home, ['rentals', 'show', rental.id]);
    assert.match(endedText.out, /^Why: +Stopped by you$/m);
    assert.match(endedText.out, new RegExp(`^Cost: +${ended.cost_so_far.replace('.', '\\.')} USDC for `, 'm'));
    const endedList = gpunex(home, ['rentals', 'list']);
    assert.match(endedList.out, new RegExp(`^${rental.id} +ended .* Stopped by you$`, 'm'));

    // A rental that never started ends at once when stopped.
    const early = JSON.parse(gpunex(home, ['rent', '--machine', machine.machineId, '--image', 'busybox', '--json']).out);
    const earlyStop = gpunex(home, ['rentals', 'stop', early.id, '--json']);
    assert.equal(earlyStop.code, 0, earlyStop.err);
    assert.equal(JSON.parse(earlyStop.out).state, 'ended');

    // One whose image cannot be pulled: the engine's words are shown, which the customer acts on.
    const bad = JSON.parse(gpunex(home, ['rent', '--machine', machine.machineId, '--image', 'busybox', '--json']).out);
    await machine.event(bad.id, 'ended', { reason: 'start_failed', error: 'pull access denied for busybox' });
    const badText = gpunex(home, ['rentals', 'show', bad.id]);
    assert.equal(badText.code, 0, badText.err);
    assert.match(badText.out, /^Why: +Could not start \(not charged\)$/m);
    assert.match(badText.out, /^Error: +pull access denied for busybox$/m);

    // The provider's side: the rentals on their machines, as the API lists them, and a stop by them.
    const prov = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
    assert.equal(gpunex(prov, ['--server', server.url, 'login', '--email', 'prov@example.com', '--password-stdin'],
      'correct-horse-battery\n').code, 0);
    const theirs = gpunex(prov, ['machines', 'rentals', '--json']);
    assert.equal(theirs.code, 0, theirs.err);
    assert.deepEqual(JSON.parse(theirs.out), (await provider.client.request('GET', '/v1/provider/rentals')).json);
    const theirTable = gpunex(prov, ['machines', 'rentals']);
    assert.match(theirTable.out, /^ID +STATE +GPUS +MACHINE +EARNS USDC\/H +EARNED +RUNNING SINCE +ENDED$/m);
    assert.match(theirTable.out, new RegExp(`^${rental.id} +ended +1 × L40S +${machine.machineId} .* customer_stopped$`, 'm'));
    const running = JSON.parse(gpunex(home, ['rent', '--machine', machine.machineId, '--image', 'busybox', '--json']).out);
    await machine.event(running.id, 'running');
    assert.equal(gpunex(home, ['machines', 'stop-rental', running.id]).code, 1, 'a customer is no provider');
    const byThem = gpunex(prov, ['machines', 'stop-rental', running.id]);
    assert.equal(byThem.code, 0, byThem.err);
    assert.match(byThem.out, new RegExp(`^Rental ${running.id} is stopping: .*stopped by the provider`));
    await machine.event(running.id, 'ended');
    assert.match(gpunex(prov, ['machines', 'rentals', '--state', 'ended']).out,
      new RegExp(`^${running.id} +ended .* provider_stopped \\(your side: counts against reliability\\)$`, 'm'));
    assert.equal(JSON.parse(gpunex(home, ['rentals', 'show', running.id, '--json']).out).end_reason, 'provider_stopped');
  } finally {
    if (machine) await machine.stop();
    await server.stop();
  }
});
