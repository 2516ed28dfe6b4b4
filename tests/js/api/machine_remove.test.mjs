// A provider removes a machine they no longer run (an old host, the former self of a reinstalled agent):
// only once it is offline and no rental is live on it; it leaves their list (API, CLI), the fleet and
// reliability, its history kept (its page still answers, saying when it was removed); its agent heard
// again brings it back. Another provider's machine is not found.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { gpunex } from '../lib/cli.mjs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { approvedProvider } from '../lib/provider.mjs';
import { postedMachine } from '../lib/rental_machine.mjs';
import { adminOf, customerWithCredit } from '../lib/rentals.mjs';

test(`${BACKEND}: a provider removes an offline machine with no live rental; its agent heard again brings it back`, async () => {
  const server = await new TestServer(['--heartbeat-interval', '1', '--offline-after-missed', '3']).start();
  let machine;
  try {
    const provider = await approvedProvider(server, 'remover@example.com');
    machine = await postedMachine(server, provider, { gpus: 1, price: '0.50', name: 'old-rig' });
    const id = machine.machineId;
    const mine = async () => (await provider.client.request('GET', '/v1/provider/machines')).json.items.map((m) => m.id);
    const remove = () => provider.client.request('DELETE', `/v1/provider/machines/${id}`);

    const online = await remove();
    assert.equal(online.status, 409, online.body);
    assert.equal(online.json.error.code, 'machine_online');
    assert.match(online.json.error.message, /still heard from: stop it first/);
    const other = await approvedProvider(server, 'other-remover@example.com');
    assert.equal((await other.client.request('DELETE', `/v1/provider/machines/${id}`)).status, 404);

    // A rental live on it: not while it runs, even offline.
    const ann = await customerWithCredit(server);
    const rental = await ann.request('POST', '/v1/rentals', { body: { machine_id: id, image: 'docker.io/library/busybox:1.36' } });
    assert.equal(rental.status, 201, rental.body);
    await machine.event(rental.json.id, 'running');
    await machine.stop();
    await until('the machine to go offline', async () => {
      const r = await provider.client.request('GET', `/v1/provider/machines/${id}`);
      return r.json.status === 'offline';
    }, 15000);
    const busy = await remove();
    assert.equal(busy.status, 409, busy.body);
    assert.deepEqual([busy.json.error.code, busy.json.error.message],
      ['machine_has_rentals', '1 rental is still live on old-rig: it can be removed once they have ended']);
    await machine.event(rental.json.id, 'ended');

    const home = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
    assert.equal(gpunex(home, ['--server', server.url, 'login', '--email', 'remover@example.com', '--password-stdin'],
      'correct-horse-battery\n').code, 0);
    const removed = gpunex(home, ['machines', 'remove', id]);
    assert.equal(removed.code, 0, removed.err);
    assert.equal(removed.out, `removed ${id} (its rentals and earnings stay in your history)\n`);
    assert.deepEqual(await mine(), []);
    assert.match(gpunex(home, ['machines', 'list']).out, /^no machines yet/);
    const page = (await provider.client.request('GET', `/v1/provider/machines/${id}`)).json;
    assert.ok(page.removed_at, JSON.stringify(page));
    assert.ok(page.events.some((e) => e.kind === 'removed'));
    assert.equal((await remove()).status, 404, 'removed already');
    // Not in the fleet, nor its counts; its rental stays in the provider's history.
    const admin = await adminOf(server);
    const fleet = (await admin.request('GET', '/v1/admin/machines')).json;
    assert.ok(!fleet.items.some((m) => m.id === id));
    assert.equal(fleet.summary.machines, 0);
    assert.equal(fleet.summary.gpus, 0);
    assert.ok((await provider.client.request('GET', '/v1/provider/rentals')).json.items.some((r) => r.id === rental.json.id));
    const reliability = (await provider.client.request('GET', '/v1/provider/reliability')).json;
    assert.ok(!JSON.stringify(reliability.machines ?? []).includes(id), JSON.stringify(reliability));

    // Its agent heard again: back in the list, online.
    await machine.beat();
    assert.deepEqual(await mine(), [id]);
    const back = (await provider.client.request('GET', `/v1/provider/machines/${id}`)).json;
    assert.deepEqual([back.status, back.removed_at], ['online', null]);
  } finally {
    if (machine) await machine.stop();
    await server.stop();
  }
});
