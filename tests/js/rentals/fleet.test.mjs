// The operator's fleet view: every provider's machines (GET /v1/admin/machines, `gpunex fleet`, the
// dashboard's Fleet page), each agreeing with what its provider sees, with the GPUs listed and rented and
// the whole fleet's counts; paged by its key, filtered by status, and for admins only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer } from '../lib/server.mjs';
import { RENTAL_SERVER_ARGS, adminOf, agentlessMachine, customerWithCredit } from '../lib/rentals.mjs';
import { gpunex, homeLoggedIn, parseTable } from '../lib/cli.mjs';
import { launchBrowser, screenshotter } from '../lib/browser.mjs';

const RENT = { image: 'docker.io/library/busybox:1.36', command: ['sleep', '3600'] };

test(`${BACKEND}: the fleet view lists every provider's machines, agreeing with each provider's own`, async () => {
  const server = await new TestServer(RENTAL_SERVER_ARGS).start();
  const providers = [];
  let browser;
  try {
    providers.push(await agentlessMachine(server, 'fleet-a@example.com', { gpus: 2 }));
    providers.push(await agentlessMachine(server, 'fleet-b@example.com', { gpus: 1 }));
    const ann = await customerWithCredit(server, '100.00');
    const rented = await ann.request('POST', '/v1/rentals', { body: { machine_id: providers[0].machine.id, ...RENT } });
    assert.equal(rented.status, 201, rented.body);
    const admin = await adminOf(server);

    const all = await admin.request('GET', '/v1/admin/machines');
    assert.equal(all.status, 200, all.body);
    assert.deepEqual(all.json.summary, { machines: 2, online: 2, offline: 0, gpus: 3, gpus_listed: 3, gpus_rented: 1 });
    assert.deepEqual(all.json.items.map((m) => m.id), providers.map((p) => p.machine.id).sort());
    for (const p of providers) {
      const own = (await p.client.request('GET', `/v1/provider/machines/${p.machine.id}`)).json;
      const seen = all.json.items.find((m) => m.id === p.machine.id);
      assert.equal(seen.provider_email, p === providers[0] ? 'fleet-a@example.com' : 'fleet-b@example.com');
      assert.equal(seen.hostname, own.hostname);
      assert.equal(seen.status, own.status);
      assert.equal(seen.simulated, own.simulated);
      const present = own.gpus.filter((g) => g.present);
      assert.equal(seen.gpu_count, present.length);
      assert.equal(seen.gpus_listed, present.filter((g) => g.listed).length);
      assert.deepEqual(seen.gpus, [{ model: 'L40S', count: present.length }]);
      assert.equal(seen.gpus_rented, p === providers[0] ? 1 : 0);
    }

    // Paged by its key; a status filter narrows the items, not the fleet's counts.
    const first = await admin.request('GET', '/v1/admin/machines?limit=1');
    assert.equal(first.json.items.length, 1);
    assert.equal(first.json.items[0].id, all.json.items[0].id);
    const second = await admin.request('GET', `/v1/admin/machines?limit=1&cursor=${first.json.next_cursor}`);
    assert.deepEqual(second.json.items.map((m) => m.id), [all.json.items[1].id]);
    assert.equal(second.json.next_cursor, null);
    const offline = await admin.request('GET', '/v1/admin/machines?status=offline');
    assert.deepEqual(offline.json.items, []);
    assert.equal(offline.json.summary.machines, 2);
    assert.equal((await admin.request('GET', '/v1/admin/machines?status=online')).json.items.length, 2);
    const bad = await admin.request('GET', '/v1/admin/machines?status=busy');
    assert.equal(bad.status, 400, bad.body);
    assert.equal(bad.json.error.field, 'status');
    assert.equal((await ann.request('GET', '/v1/admin/machines')).status, 403, 'customers do not see the fleet');
    assert.equal((await providers[0].client.request('GET', '/v1/admin/machines')).status, 403, 'nor do providers');

    // `gpunex fleet` says the same.
    const home = homeLoggedIn(server.url, admin.token);
    const cli = gpunex(home, ['fleet']);
    assert.equal(cli.code, 0, cli.err);
    const [counts, ...table] = cli.out.split('\n');
    assert.equal(counts, '2 machines: 2 online, 0 offline; 3 GPUs: 3 listed, 1 rented');
    const rows = parseTable(table.join('\n'));
    assert.deepEqual(rows.map((r) => [r.MACHINE, r.PROVIDER, r.GPUS, r.LISTED, r.RENTED]),
      all.json.items.map((m) => [m.id, m.provider_email, `${m.gpu_count} × L40S`, `${m.gpus_listed}/${m.gpu_count}`,
        String(m.gpus_rented)]));
    assert.match(gpunex(home, ['fleet', '--status', 'offline']).out, /\nno machines offline\n$/);
    assert.equal(gpunex(homeLoggedIn(server.url, ann.token), ['fleet']).code, 1);

    // The dashboard's Fleet page: its counts and rows are the API's.
    const shot = screenshotter(`fleet-${BACKEND}`);
    browser = await launchBrowser(shot);
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${server.url}/#/login`);
    await page.getByLabel('E-mail').fill(`root.${process.pid}@example.com`);
    await page.getByLabel('Password').fill('operator-password-1');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Roles' }).waitFor();
    await page.getByRole('link', { name: 'Fleet' }).click();
    await page.getByRole('heading', { name: 'Fleet' }).waitFor();
    assert.match(await page.locator('#fleet-summary').textContent(),
      /^2 machines: 2 online, 0 offline\. 3 GPUs: 3 listed, 1 rented\. Updated \d\d:\d\d:\d\d UTC\.$/);
    const shown = await page.getByRole('table', { name: 'Fleet' }).locator('tbody tr').evaluateAll((trs) => trs.map((tr) =>
      [tr.dataset.machine, tr.querySelector('[data-col="provider"]').textContent, tr.querySelector('[data-col="listed"]').textContent,
        tr.querySelector('[data-col="rented"]').textContent]));
    assert.deepEqual(shown, all.json.items.map((m) => [m.id, m.provider_email, `${m.gpus_listed}/${m.gpu_count}`,
      String(m.gpus_rented)]));
    await shot(page, 'fleet');
    await page.getByRole('link', { name: 'Offline', exact: true }).click();
    await page.getByText('No offline machines.').waitFor();
    assert.deepEqual(errors, []);
  } finally {
    await browser?.close();
    for (const p of providers) await p.agent.stop();
    await server.stop();
  }
});
