// The platform's own outage is nobody's fault (the provider guide penalises downtime "on the provider's
// side"): with every server stopped for six minutes, the agents keep their containers running and
// retry, and once a server is back no rental is lost, no machine is marked offline before its agent
// could return, and the minutes nobody was listening are excused in reliability. On the server's test
// clock: the server is started again six minutes later by its clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { AgentVoice, RENTAL_SERVER_ARGS, agentlessMachine, customerWithCredit, midweekStart, moveTestClock, storeRows }
  from '../lib/rentals.mjs';

const RENT = { image: 'docker.io/library/busybox:1.36', command: ['sleep', '86400'] };

test(`${BACKEND}: six minutes of platform outage lose no rental, mark no machine offline, cost no reliability`, async () => {
  const start = Date.parse(midweekStart());
  const args = (at) => [...RENTAL_SERVER_ARGS, '--test-clock', new Date(at).toISOString(), '--enable-test-clock', 'true'];
  const server = new TestServer(args(start));
  server.keepPort = true;  // the machine's heartbeats (every second, lib/rental_machine.mjs) find it again
  await server.start();
  let provider;
  try {
    provider = await agentlessMachine(server, 'outage@example.com', { gpus: 1 });
    const machine = provider.machine.id;
    const voice = new AgentVoice(server, provider.key, machine);
    const ann = await customerWithCredit(server, '100.00');
    const made = await ann.request('POST', '/v1/rentals', { body: { machine_id: machine, ...RENT } });
    assert.equal(made.status, 201, made.body);
    const t0 = await moveTestClock(server, 0);
    await voice.send([{ rental_id: made.json.id, type: 'running', at: t0 }]);
    // The machines sweep has watched the fleet at t0 (it runs every few seconds).
    await until('the sweep to have watched', () => storeRows(server,
      "SELECT value FROM server_facts WHERE name = 'fleet_watched_until'").length === 1 || null, 15000, 100);

    await server.stop();
    server.extraArgs = args(start + 6 * 60_000);
    await server.start();

    // The outage is recorded, until the agents are back (they retry at most a minute apart).
    const [[from, to]] = await until('the outage recorded', () => {
      const rows = storeRows(server, 'SELECT started_at, ended_at FROM platform_outages');
      return rows.length ? rows : null;
    }, 15000, 100);
    assert.equal(Number(from), start);
    assert.equal(Number(to), start + 7 * 60_000);
    await until('the server to have judged the fleet again', () => storeRows(server,
      `SELECT value FROM server_facts WHERE name = 'fleet_watched_until' AND value = '${start + 6 * 60_000}'`).length
      === 1 || null, 15000, 100);
    await new Promise((r) => setTimeout(r, 1500));  // rentals rounds (every 200 ms) have looked too

    const rental = (await ann.request('GET', `/v1/rentals/${made.json.id}`)).json;
    assert.equal(rental.state, 'running', `the rental goes on: ${JSON.stringify(rental)}`);
    assert.equal(rental.machine_online, true);
    const mine = (await provider.client.request('GET', `/v1/provider/machines/${machine}`)).json;
    assert.equal(mine.status, 'online', JSON.stringify(mine));
    assert.equal(storeRows(server, `SELECT COUNT(*) FROM machine_events WHERE machine_id = '${machine}' AND kind = 'offline'`)[0][0],
      '0', 'no offline event');

    const rel = (await provider.client.request('GET', `/v1/provider/machines/${machine}/reliability`)).json;
    // The six minutes judged so far (the seventh, the agents' return, has not ended on the clock yet).
    assert.equal(rel.parts.uptime.excused_minutes, 6, JSON.stringify(rel.parts.uptime));
    assert.deepEqual(rel.events.filter((e) => e.kind === 'offline'), [], JSON.stringify(rel.events));
  } finally {
    if (provider) await provider.agent.stop();
    await server.stop();
  }
});
