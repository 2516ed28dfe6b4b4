// Renting GPUs through the API (#16), with the agent's side of the rentals protocol spoken by the
// test over HTTP with the provider's key (the end-to-end test runs the real agent on Podman): the
// scheduler, the price lock, the balance check, bad input naming the field, the long poll that
// brings a start to the agent within a second, the events that move a rental, and the settlement
// that charges exactly the seconds it ran, 80% to the provider and 20% to the platform.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { AgentVoice, RENTAL_SERVER_ARGS, agentlessMachine, customerWithCredit, storeRows } from '../lib/rentals.mjs';
import { gpunex, homeLoggedIn } from '../lib/cli.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Micro-USDC per account from the ledger.
function ledgerByAccount(server) {
  return Object.fromEntries(storeRows(server, 'SELECT account, SUM(amount) FROM ledger_entries GROUP BY account')
    .map(([a, s]) => [a, Number(s)]));
}

const micro = (usdc) => Math.round(Number(usdc) * 1e6);
const RENT = { image: 'docker.io/library/busybox:1.36', command: ['sh', '-c', 'echo hello; sleep 3600'] };

test(`${BACKEND}: customers rent GPUs; the agent hears within a second; usage is settled 80/20 to the second`, async () => {
  const server = await new TestServer(RENTAL_SERVER_ARGS).start();
  let provider;
  try {
    provider = await agentlessMachine(server, 'rent-provider@example.com', { gpus: 2 });
    const { machine } = provider;
    const ann = await customerWithCredit(server, '100.00');
    const bob = await customerWithCredit(server, '100.00');
    const poor = await customerWithCredit(server, '0.10');
    const voice = new AgentVoice(server, provider.key, machine.id);

    const offers = await ann.request('GET', '/v1/marketplace/offers?model=L40S');
    assert.equal(offers.json.items.length, 1, offers.body);
    assert.equal(offers.json.items[0].gpu_count_available, 2);

    // Bad input: a 4xx naming the field, and nothing rented.
    const bad = async (body, field, code = 400) => {
      const r = await ann.request('POST', '/v1/rentals', { body: { machine_id: machine.id, ...RENT, ...body } });
      assert.equal(r.status, code, `${JSON.stringify(body)}: ${r.body}`);
      assert.equal(r.json.error.field, field, r.body);
    };
    await bad({ image: 'Not An/Image::ref' }, 'image');
    await bad({ image: '' }, 'image');
    await bad({ max_hours: -1 }, 'max_hours');
    await bad({ max_hours: 1e9 }, 'max_hours');
    await bad({ env: { 'A=B': 'x' } }, 'env');
    await bad({ env: { 'A\u0000B': 'x' } }, 'env');
    await bad({ ports: [70000] }, 'ports');
    await bad({ ports: [0] }, 'ports');
    await bad({ gpu_count: 0 }, 'gpu_count');
    await bad({ command: 'echo' }, 'command');
    await bad({ ssh_public_key: 'not a key' }, 'ssh_public_key');
    const keyError = await ann.request('POST', '/v1/rentals', { body: { machine_id: machine.id, ...RENT,
      ssh_public_key: 'not a key' } });
    assert.match(keyError.json.error.message, /^SSH public key must be/);
    await bad({ filters: { model: 'L40S' } }, 'filters');
    await bad({ gpu_count: 3 }, 'machine_id', 409);
    await bad({ env: { NVIDIA_VISIBLE_DEVICES: 'all' } }, 'env');  // the platform hands in exactly the GPUs
    await bad({ image: 'UPPER/case:tag' }, 'image');  // no engine takes an upper-case repository
    // A provider does not rent its own GPUs (it would pay itself and pad its job completion): by the
    // machine, a 409 saying so; by filters, its own machines are not among the candidates.
    const own = await provider.client.request('POST', '/v1/rentals', { body: { machine_id: machine.id, ...RENT } });
    assert.equal(own.status, 409, own.body);
    assert.equal(own.json.error.code, 'own_machine');
    assert.equal(own.json.error.field, 'machine_id');
    const ownByFilters = await provider.client.request('POST', '/v1/rentals', { body: { filters: { model: 'L40S' }, ...RENT } });
    assert.equal(ownByFilters.status, 409, ownByFilters.body);
    assert.equal(ownByFilters.json.error.code, 'no_gpus_available');
    // A model that names nothing is named where it was written; a machine that does not exist is a 404,
    // not "no free GPUs".
    const noModel = await ann.request('POST', '/v1/rentals', { body: { model: 'NOPE', ...RENT } });
    assert.equal(noModel.status, 400, noModel.body);
    assert.deepEqual([noModel.json.error.code, noModel.json.error.field], ['unknown_model', 'model']);
    const noModelInFilters = await ann.request('POST', '/v1/rentals', { body: { filters: { model: 'NOPE' }, ...RENT } });
    assert.deepEqual([noModelInFilters.json.error.code, noModelInFilters.json.error.field], ['unknown_model', 'filters.model']);
    const noMachine = await ann.request('POST', '/v1/rentals', { body: { machine_id: 'mch_nope', ...RENT } });
    assert.equal(noMachine.status, 404, noMachine.body);
    assert.deepEqual([noMachine.json.error.code, noMachine.json.error.field], ['unknown_machine', 'machine_id']);
    const nothing = await ann.request('POST', '/v1/rentals', { body: RENT });
    assert.equal(nothing.status, 400);
    assert.equal(nothing.json.error.field, 'machine_id');
    // Filters without a model would rent any GPU at any price (a script whose model came out empty).
    for (const filters of [{}, { region: 'eu-west' }]) {
      const anyGpu = await ann.request('POST', '/v1/rentals', { body: { filters, ...RENT } });
      assert.equal(anyGpu.status, 400, anyGpu.body);
      assert.deepEqual([anyGpu.json.error.code, anyGpu.json.error.field], ['missing_field', 'filters.model']);
    }
    // A model the machine does not offer is a wrong request (naming what it offers), not a busy machine.
    const otherModel = await ann.request('POST', '/v1/rentals', { body: { machine_id: machine.id, model: 'H100', ...RENT } });
    assert.equal(otherModel.status, 400, otherModel.body);
    assert.deepEqual([otherModel.json.error.code, otherModel.json.error.field], ['model_not_offered', 'model']);
    assert.match(otherModel.json.error.message, new RegExp(`^machine ${machine.id} has L40S, not "H100"`));
    assert.deepEqual((await ann.request('GET', '/v1/rentals')).json.items, []);

    // Too little credit for the first hour: 402 naming the amount needed.
    const refused = await poor.request('POST', '/v1/rentals', { body: { machine_id: machine.id, ...RENT } });
    assert.equal(refused.status, 402, refused.body);
    assert.equal(refused.json.error.code, 'insufficient_balance');
    assert.match(refused.json.error.message, /0\.500000 USDC is needed/);

    // The agent's long poll is waiting when the rental is made: it hears within a second.
    const first = await voice.poll();
    assert.equal(first.status, 200, first.body);
    assert.deepEqual(first.json.rentals, []);
    const t0 = Date.now();
    const waiting = voice.poll(first.json.version, 20).then((r) => ({ r, ms: Date.now() - t0 }));
    await sleep(300);
    const key = { 'Idempotency-Key': `rent-${process.pid}-1` };
    const made = await ann.request('POST', '/v1/rentals', { headers: key, body: {
      machine_id: machine.id, ...RENT, env: { GREETING: 'hi' }, ports: [8080, 22], max_hours: 2,
      ssh_public_key: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIexample ann@laptop' } });
    const madeAt = Date.now();
    assert.equal(made.status, 201, made.body);
    const rental = made.json;
    assert.equal(rental.state, 'requested');
    assert.equal(rental.gpus.length, 1);
    assert.equal(rental.usdc_per_gpu_hour, '0.500000');
    assert.deepEqual(rental.env_names, ['GREETING', 'PUBLIC_KEY']);
    // Until the agent binds them, the asked ports show without a host port or an address.
    assert.deepEqual(rental.ports, [{ container_port: 8080, host_port: null, address: null },
      { container_port: 22, host_port: null, address: null }]);
    assert.equal(rental.ssh, null);
    // The answer reads its machine as every later read does: online, at its host.
    assert.equal(rental.machine_online, true);
    assert.equal(rental.host, '127.0.0.1');
    const heard = await waiting;
    assert.ok(heard.ms - (madeAt - t0) < 1000, `the agent heard after ${heard.ms - (madeAt - t0)} ms`);
    assert.equal(heard.r.json.rentals.length, 1, heard.r.body);
    const assigned = heard.r.json.rentals[0];
    assert.equal(assigned.id, rental.id);
    assert.deepEqual(assigned.gpu_uuids, rental.gpus);
    assert.equal(assigned.spec.image, RENT.image);
    assert.deepEqual(assigned.spec.command, RENT.command);
    assert.deepEqual(assigned.spec.env, { GREETING: 'hi' });
    assert.deepEqual(assigned.spec.ports, [8080, 22]);
    assert.match(assigned.spec.ssh_public_key, /^ssh-ed25519 /);

    // A retried request with the same Idempotency-Key rents nothing more.
    const retried = await ann.request('POST', '/v1/rentals', { headers: key, body: {
      machine_id: machine.id, ...RENT, env: { GREETING: 'hi' }, ports: [8080, 22], max_hours: 2,
      ssh_public_key: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIexample ann@laptop' } });
    assert.equal(retried.json.id, rental.id);
    assert.equal((await ann.request('GET', '/v1/rentals')).json.items.length, 1);

    // The offer now has one free GPU; a price change does not touch the running rental.
    await until('the offer to show one free GPU', async () => {
      const r = await bob.request('GET', '/v1/marketplace/offers?model=L40S');
      return r.json.items.length === 1 && r.json.items[0].gpu_count_available === 1;
    }, 10000);
    assert.equal((await provider.client.request('PUT', '/v1/provider/prices/L40S',
      { body: { usdc_per_gpu_hour: '2.00' } })).status, 200);
    assert.equal((await ann.request('GET', `/v1/rentals/${rental.id}`)).json.usdc_per_gpu_hour, '0.500000');

    // Another customer rents the other GPU by filters, at the new price; a third finds none free.
    const bobs = await bob.request('POST', '/v1/rentals', { body: { filters: { model: 'l40s', region: 'eu-west' },
      ...RENT } });
    assert.equal(bobs.status, 201, bobs.body);
    assert.equal(bobs.json.usdc_per_gpu_hour, '2.000000');
    assert.notDeepEqual(bobs.json.gpus, rental.gpus);
    const none = await bob.request('POST', '/v1/rentals', { body: { filters: { model: 'L40S' }, ...RENT } });
    assert.equal(none.status, 409, none.body);
    assert.equal(none.json.error.code, 'no_gpus_available');

    // Nobody reaches another customer's rental.
    assert.equal((await bob.request('GET', `/v1/rentals/${rental.id}`)).status, 404);
    assert.equal((await bob.request('POST', `/v1/rentals/${rental.id}/stop`)).status, 404);
    assert.equal((await bob.request('GET', `/v1/rentals/${rental.id}/logs`)).status, 404);

    // The agent's events move the rentals: Bob's image cannot be pulled (not charged)...
    assert.equal((await voice.send([{ rental_id: bobs.json.id, type: 'starting' }])).status, 200);
    const failed = await voice.send([{ rental_id: bobs.json.id, type: 'ended', reason: 'start_failed',
      error: 'pull access denied' }]);
    assert.equal(failed.status, 200, failed.body);
    const bobEnded = (await bob.request('GET', `/v1/rentals/${bobs.json.id}`)).json;
    assert.equal(bobEnded.state, 'ended');
    // Its logs say it ended (it will write nothing more), and so does the CLI: not "no output yet".
    const bobLogs = (await bob.request('GET', `/v1/rentals/${bobs.json.id}/logs`)).json;
    assert.deepEqual([bobLogs.state, bobLogs.logs], ['ended', '']);
    const bobCli = gpunex(homeLoggedIn(server.url, bob.token), ['rentals', 'logs', bobs.json.id]);
    assert.equal(bobCli.code, 0, bobCli.err);
    assert.equal(bobCli.err, `no output from ${bobs.json.id}: it ended without writing any\n`);
    assert.equal(bobEnded.end_reason, 'start_failed');
    assert.equal(bobEnded.error, 'pull access denied');
    assert.equal(bobEnded.cost_so_far, '0.000000');
    // Bob is told, since he did not end it himself.
    const bobTold = (await bob.request('GET', '/v1/notifications')).json.items;
    assert.deepEqual(bobTold.map((n) => [n.kind, n.title, n.body]), [['rental_ended',
      `Rental ${bobs.json.id} ended: Could not start (not charged)`, '1 × L40S. It was not charged.']]);
    assert.equal((await bob.request('GET', '/v1/billing/balance')).json.balance, '100.000000');

    // ... and Ann's runs, shows its output, and stops when she asks.
    await voice.send([{ rental_id: rental.id, type: 'starting' }]);
    assert.equal((await ann.request('GET', `/v1/rentals/${rental.id}`)).json.state, 'starting');
    const running = await voice.send([{ rental_id: rental.id, type: 'running',
      ports: [{ container_port: 8080, host_port: 40001 }, { container_port: 22, host_port: 40002 }] }]);
    assert.equal(running.json.applied, 1);
    const shown = (await ann.request('GET', `/v1/rentals/${rental.id}`)).json;
    assert.equal(shown.state, 'running');
    // Where to connect: the machine's host (the address its agent registered from: this test's loopback)
    // and each bound port's address; port 22 with a key given is the ssh command.
    assert.equal(shown.host, '127.0.0.1');
    assert.deepEqual(shown.ports, [{ container_port: 8080, host_port: 40001, address: '127.0.0.1:40001' },
      { container_port: 22, host_port: 40002, address: '127.0.0.1:40002' }]);
    assert.equal(shown.ssh, 'ssh -p 40002 root@127.0.0.1');
    assert.equal(shown.machine_online, true);
    await voice.send([{ rental_id: rental.id, type: 'logs', logs: 'hello\n' }]);
    assert.equal((await ann.request('GET', `/v1/rentals/${rental.id}/logs`)).json.logs, 'hello\n');
    await sleep(2500);
    const live = (await ann.request('GET', `/v1/rentals/${rental.id}`)).json;
    assert.ok(micro(live.cost_so_far) > 0, live.cost_so_far);
    const balance = (await ann.request('GET', '/v1/billing/balance')).json;
    assert.equal(balance.spend_per_hour, '0.500000');
    assert.equal(micro(balance.available), micro(balance.balance) - micro(balance.unsettled));
    assert.ok(micro(balance.unsettled) > 0, 'the running rental has used some since it started');
    assert.equal(balance.minutes_left, Math.floor(micro(balance.available) * 60 / 500000));
    assert.equal(balance.hours_left, Math.floor(balance.minutes_left / 60));
    // `gpunex balance` leads with what can be spent now, not the balance before this run is settled.
    const cli = gpunex(homeLoggedIn(server.url, ann.token), ['balance']);
    assert.equal(cli.code, 0, cli.err);
    const said = cli.out.match(/^available: (\d+\.\d{6}) USDC \(balance (\d+\.\d{6}), less (\d+\.\d{6}) used by running rentals since their last settlement\); about (\d+) hours left at 0\.500000 USDC\/hour\n/);
    assert.ok(said, cli.out);
    assert.equal(micro(said[1]), micro(said[2]) - micro(said[3]));
    assert.ok(micro(said[1]) <= micro(balance.available), 'time only lowers what is available');
    assert.equal(Number(said[4]), Math.floor(micro(said[1]) / 500000));

    // The list agrees with the detail page.
    const listed = (await ann.request('GET', '/v1/rentals')).json.items.find((r) => r.id === rental.id);
    for (const k of ['state', 'gpus', 'usdc_per_gpu_hour', 'running_since', 'ports', 'image', 'host', 'ssh',
      'machine_online']) {
      assert.deepEqual(listed[k], live[k], k);
    }
    // Both lists filter by state (several: comma-separated); a state that is none, or a parameter the list
    // does not take, is a 400 naming it, not every rental as if filtered.
    const ids = async (who, q) => {
      const r = await who.request('GET', q);
      assert.equal(r.status, 200, r.body);
      return r.json.items.map((x) => x.id).sort();
    };
    assert.deepEqual(await ids(ann, '/v1/rentals?state=running'), [rental.id]);
    assert.deepEqual(await ids(ann, '/v1/rentals?state=ended'), []);
    assert.deepEqual(await ids(bob, '/v1/rentals?state=ended&limit=5'), [bobs.json.id]);
    assert.deepEqual(await ids(provider.client, '/v1/provider/rentals?state=running'), [rental.id]);
    assert.deepEqual(await ids(provider.client, '/v1/provider/rentals?state=ended'), [bobs.json.id]);
    assert.deepEqual(await ids(provider.client, '/v1/provider/rentals?state=requested,running,ended'),
      [rental.id, bobs.json.id].sort());
    assert.deepEqual(await ids(provider.client, '/v1/provider/rentals?state=running,%20ended'),
      [rental.id, bobs.json.id].sort(), 'spaces after the commas');
    const paused = await ann.request('GET', '/v1/rentals?state=running,paused');
    assert.equal(paused.status, 400, paused.body);
    assert.equal(paused.json.error.field, 'state');
    assert.match(paused.json.error.message, /paused/);
    const unknown = await ann.request('GET', '/v1/rentals?status=running');
    assert.equal(unknown.status, 400, unknown.body);
    assert.deepEqual([unknown.json.error.code, unknown.json.error.field], ['unknown_field', 'status']);
    assert.equal(unknown.json.error.message,
      'unknown query parameter "status": /v1/rentals takes state, limit, cursor');
    // One given twice would be read as its last value alone (running,ended read as ended): refused.
    const twice = await ann.request('GET', '/v1/rentals?state=running&state=ended');
    assert.equal(twice.status, 400, twice.body);
    assert.deepEqual([twice.json.error.code, twice.json.error.field], ['repeated_parameter', 'state']);

    // The stop takes no body: a field it would not read is refused, not taken as if it had been (a force flag).
    const forced = await ann.request('POST', `/v1/rentals/${rental.id}/stop`, { body: { force: true } });
    assert.equal(forced.status, 400, forced.body);
    assert.deepEqual([forced.json.error.code, forced.json.error.field], ['unknown_field', 'force']);
    assert.equal((await ann.request('GET', `/v1/rentals/${rental.id}`)).json.state, 'running', 'not stopped');
    const stopping = await ann.request('POST', `/v1/rentals/${rental.id}/stop`, { body: {} });
    assert.equal(stopping.status, 200, stopping.body);
    assert.equal(stopping.json.state, 'stopping');
    const told = await voice.poll();
    assert.equal(told.json.rentals.find((r) => r.id === rental.id).state, 'stopping');
    const endedSeq = ++voice.seq;
    await voice.send([{ rental_id: rental.id, type: 'ended', exit_code: 143 }], endedSeq);
    const ended = (await ann.request('GET', `/v1/rentals/${rental.id}`)).json;
    assert.equal(ended.state, 'ended');
    assert.equal(ended.end_reason, 'customer_stopped');
    assert.equal(ended.end_text, 'Stopped by you');
    // Its ports are closed, and the machine may give them to another rental: no address, no ssh command.
    assert.deepEqual(ended.ports, [{ container_port: 8080, host_port: 40001, address: null },
      { container_port: 22, host_port: 40002, address: null }]);
    assert.equal(ended.ssh, null);
    assert.deepEqual((await ann.request('GET', '/v1/notifications')).json.items.filter((n) => n.kind === 'rental_ended'),
      [], 'she stopped it herself: nothing to tell');

    // Charged for the seconds it ran, no more: rounding once, on the whole.
    const ranMs = Date.parse(ended.ended_at) - Date.parse(ended.running_since);
    const charged = Math.floor((500000 * ranMs) / 3600000);
    assert.equal(micro(ended.cost_so_far), charged);
    assert.equal(ended.settled, ended.cost_so_far);
    const ledger = ledgerByAccount(server);
    assert.equal(Object.values(ledger).reduce((a, b) => a + b, 0), 0, JSON.stringify(ledger));
    const providerAccount = Object.keys(ledger).find((a) => a.startsWith('provider:'));
    assert.equal(ledger[providerAccount], Math.floor(charged * 0.8));
    assert.equal(ledger['platform:commission'], charged - Math.floor(charged * 0.8));
    assert.equal(micro((await ann.request('GET', '/v1/billing/balance')).json.balance), 100e6 - charged);
    const history = (await ann.request('GET', '/v1/billing/history')).json.items;
    assert.equal(history[0].kind, 'settlement');
    assert.equal(history[0].reference, rental.id);
    assert.equal(micro(history[0].amount), -charged);

    // A replayed event changes nothing and charges nothing twice.
    const replay = await voice.send([{ rental_id: rental.id, type: 'ended', exit_code: 143 }], endedSeq);
    assert.equal(replay.json.duplicate, true);
    assert.deepEqual(ledgerByAccount(server), ledger);

    // The provider sees the rentals on their machines, never who rents, and can stop one.
    const again = await ann.request('POST', '/v1/rentals', { body: { machine_id: machine.id, ...RENT } });
    assert.equal(again.status, 201, again.body);
    await voice.send([{ rental_id: again.json.id, type: 'running' }]);
    const mine = (await provider.client.request('GET', '/v1/provider/rentals')).json.items;
    const seen = mine.find((r) => r.id === again.json.id);
    assert.equal(seen.state, 'running');
    assert.equal(seen.earnings_per_hour, '1.600000');  // 2.00 × 80%
    for (const r of mine) assert.ok(!('customer_id' in r) && !JSON.stringify(r).includes('@example.com'), JSON.stringify(r));
    assert.equal((await bob.request('POST', `/v1/provider/rentals/${again.json.id}/stop`)).status, 403);
    const byProvider = await provider.client.request('POST', `/v1/provider/rentals/${again.json.id}/stop`);
    assert.equal(byProvider.status, 200, byProvider.body);
    // The agent takes its time to stop the container: those seconds are not the customer's to pay.
    await new Promise((r) => setTimeout(r, 1500));
    await voice.send([{ rental_id: again.json.id, type: 'ended', exit_code: 137 }]);
    const providerEnded = (await ann.request('GET', `/v1/rentals/${again.json.id}`)).json;
    assert.equal(providerEnded.end_reason, 'provider_stopped');
    const billedMs = Date.parse(providerEnded.stop_requested_at) - Date.parse(providerEnded.running_since);
    assert.ok(Date.parse(providerEnded.ended_at) - Date.parse(providerEnded.stop_requested_at) >= 1000,
      JSON.stringify(providerEnded));
    assert.equal(micro(providerEnded.cost_so_far), Math.floor((micro(providerEnded.cost_per_hour) * billedMs) / 3600000),
      JSON.stringify(providerEnded));
    assert.equal(providerEnded.settled, providerEnded.cost_so_far);
    assert.equal((await provider.client.request('GET', '/v1/provider/rentals')).json.items
      .find((r) => r.id === again.json.id).provider_side, true);
    // A rented GPU that stops answering stops its rental: gpu_failure, the provider's side.
    const lostOne = await ann.request('POST', '/v1/rentals', { body: { machine_id: machine.id, ...RENT } });
    assert.equal(lostOne.status, 201, lostOne.body);
    await voice.send([{ rental_id: lostOne.json.id, type: 'running' }]);
    const hb = await voice.heartbeat([{ type: 'gpu_lost', uuid: lostOne.json.gpus[0], message: 'fell off the bus' }]);
    assert.equal(hb.status, 200, hb.body);
    assert.equal((await ann.request('GET', `/v1/rentals/${lostOne.json.id}`)).json.stop_requested, 'gpu_failure');
    await voice.send([{ rental_id: lostOne.json.id, type: 'ended', exit_code: 137 }]);
    const gpuEnded = (await ann.request('GET', `/v1/rentals/${lostOne.json.id}`)).json;
    assert.equal(gpuEnded.end_reason, 'gpu_failure');
    assert.equal(gpuEnded.end_text, 'A GPU failed');
    // One its agent never started ends at once, not charged, and its customer is told (the running one
    // was told when its agent confirmed the end).
    const notStarted = await ann.request('POST', '/v1/rentals', { body: { machine_id: machine.id, ...RENT } });
    assert.equal(notStarted.status, 201, notStarted.body);
    const hb2 = await voice.heartbeat([{ type: 'gpu_lost', uuid: notStarted.json.gpus[0], message: 'fell off again' }]);
    assert.equal(hb2.status, 200, hb2.body);
    const neverRan = (await ann.request('GET', `/v1/rentals/${notStarted.json.id}`)).json;
    assert.deepEqual([neverRan.state, neverRan.end_reason, neverRan.cost_so_far], ['ended', 'gpu_failure', '0.000000']);
    const annTold = (await ann.request('GET', '/v1/notifications?limit=100')).json.items
      .filter((n) => n.kind === 'rental_ended').map((n) => n.title);
    assert.ok(annTold.includes(`Rental ${notStarted.json.id} ended: A GPU failed`), JSON.stringify(annTold));
    assert.ok(annTold.includes(`Rental ${lostOne.json.id} ended: A GPU failed`), JSON.stringify(annTold));

    await until('both GPUs to be offered again', async () => {
      const r = await bob.request('GET', '/v1/marketplace/offers?model=L40S');
      return r.json.items.length === 1 && r.json.items[0].gpu_count_available === 2;
    }, 10000);
  } finally {
    if (provider) await provider.agent.stop();
    await server.stop();
  }
});
