// Rentals in tests: a provider whose simulated machine is benchmarked, listed and priced (so a
// customer can rent it), a customer with credit, and the agent's side of the rentals protocol
// spoken over HTTP (for tests of the server and the dashboard that need no container engine; the
// end-to-end tests run the real agent on Podman instead).
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { approvedProvider } from './provider.mjs';
import { startAgent } from './agent.mjs';
import { machineSequences, messageSequence, postedMachine } from './rental_machine.mjs';
import { BENCH_SERVER_ARGS, Client, until } from './server.mjs';

let customers = 0;

// What a server that rents simulated GPUs needs: the benchmark thresholds a CI machine meets (two
// cores host two GPUs), and a rentals worker that looks often.
export const RENTAL_SERVER_ARGS = [...BENCH_SERVER_ARGS, '--benchmark-cpu-cores-per-gpu', '1', '--rentals-tick-ms', '200'];

// A listed, priced machine. `agentArgs` are more gpunex-agent flags (--docker-host ...).
export async function listedMachine(server, email, { simulate = 'L4:2', model = 'L4', price = '0.50',
  agentArgs = [] } = {}) {
  const count = Number(String(simulate).split(':')[1] || 1);
  const { client, key } = await approvedProvider(server, email, {
    gpus: [{ model, count, system_ram_gb: 256, download_gbps: 10, upload_gbps: 10, availability: '24/7',
      location: { city: 'Dublin', country: 'IE', region: 'eu-west' } }],
  });
  const agent = startAgent(server.url, key, { simulate,
    args: ['--bench-storage-mib', '32', '--bench-net-mib', '8', ...agentArgs] });
  const fail = (e) => { throw new Error(`${e.message}\nagent: ${agent.logs.join('').slice(-4000)}`); };
  const machine = await until('the machine to register', async () => {
    const r = await client.request('GET', '/v1/provider/machines');
    return r.status === 200 && r.json.items.length === 1 && r.json.items[0].status === 'online'
      ? r.json.items[0] : null;
  }).catch(fail);
  await until('its GPUs to be benchmarked and listed', async () => {
    const r = await client.request('GET', `/v1/provider/machines/${machine.id}`);
    const unlisted = r.json.gpus.find((g) => g.perf_score !== null && !g.listed);
    if (unlisted) throw new Error(`a GPU was benchmarked but not listed: ${JSON.stringify(unlisted)}`);
    return r.status === 200 && r.json.gpus.length === count && r.json.gpus.every((g) => g.listed);
  }, 180000).catch(fail);
  const priced = await client.request('PUT', `/v1/provider/prices/${model}`, { body: { usdc_per_gpu_hour: price } });
  if (priced.status !== 200) throw new Error(`price: ${priced.status} ${priced.body}`);
  return { client, key, machine, agent };
}

// A listed, priced machine of `gpus` L40S with no agent at all: the test speaks for the agent
// (postedMachine's heartbeats every second, and AgentVoice's rental events), so no real agent races
// it to answer the rentals. The same shape as listedMachine's answer.
export async function agentlessMachine(server, email, { gpus = 2, price = '0.50' } = {}) {
  const provider = await approvedProvider(server, email, {
    gpus: [{ model: 'L40S', count: gpus, system_ram_gb: 256, download_gbps: 10, upload_gbps: 10,
      availability: '24/7', location: { city: 'Dublin', country: 'IE', region: 'eu-west' } }],
  });
  const posted = await postedMachine(server, provider, { gpus, price, name: email.split('@')[0] });
  return { ...provider, machine: { id: posted.machineId }, agent: { stop: () => posted.stop() } };
}

// A signed-in customer credited `amount` USDC by an operator.
export async function customerWithCredit(server, amount = '100.00') {
  const n = ++customers;
  const email = `customer${n}.${process.pid}@example.com`;
  const customer = new Client(server.url);
  await customer.signupAndLogin(email);
  await adminOf(server);
  if (amount !== null) {
    const r = await server.adminClient.request('POST', '/v1/admin/credits',
      { body: { email, amount, reference: `test credit ${n}` } });
    if (r.status !== 201) throw new Error(`credit: ${r.status} ${r.body}`);
  }
  return customer;
}

// The agent's side of the rentals protocol, spoken by the test with the provider's key.
// Its messages take their seqs from the posted machine's sequence (lib/rental_machine.mjs), as one agent's
// do: `++voice.seq` takes the next one, for a message sent (and replayed) with it.
export class AgentVoice {
  constructor(server, key, machineId) {
    this.agent = new Client(server.url);
    this.agent.token = key;
    this.machineId = machineId;
    this.sequence = machineSequences.get(machineId) ?? messageSequence();
  }

  get seq() { return this.sequence.n; }
  set seq(n) { this.sequence.n = n; }

  async poll(known = '', waitS = 0) {
    return this.agent.request('GET',
      `/v1/agent/rentals?machine_id=${this.machineId}&known=${encodeURIComponent(known)}&wait_s=${waitS}`);
  }

  // A heartbeat carrying GPU events (gpu_lost, gpu_recovered) and no telemetry.
  async heartbeat(events, seq = undefined) {
    return this.sequence.send((n) => this.agent.request('POST', '/v1/agent/heartbeat', {
      body: { protocol_version: 1, machine_id: this.machineId, seq: n, sent_at: new Date().toISOString(), jobs: [],
        telemetry: [], events: events.map((e) => ({ at: new Date().toISOString(), ...e })) },
    }), seq);
  }

  async send(events, seq = undefined) {
    return this.sequence.send((n) => this.agent.request('POST', '/v1/agent/rental-events', {
      body: { protocol_version: 1, machine_id: this.machineId, seq: n,
        events: events.map((e) => ({ at: new Date().toISOString(), ...e })) },
    }), seq);
  }
}

// The Docker Engine API on a unix socket (Podman's service in the tests): { status, json }.
export function dockerApi(dockerHost, method, apiPath, body) {
  const socketPath = dockerHost.replace(/^unix:\/\//, '');
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, path: apiPath, method, headers: { 'Content-Type': 'application/json' } },
      (res) => {
        let text = '';
        res.on('data', (d) => { text += d; });
        res.on('end', () => {
          let json = null;
          try { json = text ? JSON.parse(text) : null; } catch { json = text; }
          resolve({ status: res.statusCode, json });
        });
      });
    req.on('error', reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

// The containers (running or not) that carry a rental's label.
export async function rentalContainers(dockerHost, rentalId) {
  const filters = encodeURIComponent(JSON.stringify({ label: [`io.gpunex.rental=${rentalId}`] }));
  const r = await dockerApi(dockerHost, 'GET', `/v1.41/containers/json?all=true&filters=${filters}`);
  if (r.status !== 200) throw new Error(`containers: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
}

// The container engine the tests use (scripts/podman.sh; make test starts it). On CI a missing
// engine fails the test; elsewhere the test is skipped, saying why.
export function containerEngine(t) {
  const host = process.env.GPUNEX_TEST_DOCKER_HOST;
  if (host) return host;
  if (process.env.CI) throw new Error('GPUNEX_TEST_DOCKER_HOST is not set: make test starts Podman (scripts/podman.sh)');
  t.skip('no container engine: set GPUNEX_TEST_DOCKER_HOST (scripts/podman.sh start DIR prints it)');
  return null;
}

// The rows of a query on the server's store (sqlite3 or psql), each an array of text fields.
export function storeRows(server, statement) {
  const r = server.db.startsWith('sqlite:')
    ? spawnSync('sqlite3', ['-separator', '|', server.db.slice(7), statement], { encoding: 'utf8' })
    : spawnSync('psql', [server.db, '-At', '-F', '|', '-c', statement], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout.trim().split('\n').filter(Boolean).map((l) => l.split('|'));
}

// The server's operator, signed in once as `server.adminClient` (an admin made with `admin create-user`).
export async function adminOf(server) {
  if (!server.adminClient) {
    server.createUser(`root.${process.pid}@example.com`, 'operator-password-1', 'admin');
    server.adminClient = new Client(server.url);
    await server.adminClient.login(`root.${process.pid}@example.com`, 'operator-password-1');
  }
  return server.adminClient;
}

// Moves the server's test clock `seconds` on, as its admin client (adminOf); answers the new time.
export async function moveTestClock(server, seconds) {
  await adminOf(server);
  const r = await server.adminClient.request('POST', '/v1/test/clock', { body: { advance_seconds: seconds } });
  if (r.status !== 200) throw new Error(`test clock: ${r.status} ${r.body}`);
  return r.json.now;
}

// Where a payout test starts the server's test clock: the next Wednesday after today, 12:00 UTC, to
// the second. Its earnings on the test clock (minutes to hours) then fall in one payout week, and
// toNextMonday's jump (4 days 13 hours and what was earned) stays within a login's 7 days, whatever
// day and hour the test runs. Started at the real time instead, a test begun on a Sunday after
// 23:30 UTC earned into Monday, so its next Monday was 7 days on and the provider's login had
// expired when it asked for its payouts.
// A Wednesday whose next Monday TARGET2 closes (Easter Monday, 1 January, Christmas) is passed over for the
// week after: a weekly SEPA payout of that week goes on the Tuesday, not on the Monday the tests expect.
export function midweekStart(now = Date.now()) {
  let wednesday = nextWeekday(now, 3);
  while (target2Closed(nextWeekday(wednesday, 1))) wednesday += 7 * 86400e3;
  return new Date(wednesday + 12 * 3600e3).toISOString().replace('.000Z', 'Z');
}

// Whether TARGET2 is closed on the UTC day of `ms` (core/payout_calendar.cpp's rule): 1 January, Good
// Friday, Easter Monday, 1 May, 25 and 26 December.
export function target2Closed(ms) {
  const d = new Date(ms);
  const y = d.getUTCFullYear();
  const md = `${d.getUTCMonth() + 1}-${d.getUTCDate()}`;
  if (['1-1', '5-1', '12-25', '12-26'].includes(md)) return true;
  const a = y % 19, b = Math.floor(y / 100), c = y % 100, dd = Math.floor(b / 4), e = b % 4;
  const f = Math.floor((b + 8) / 25), g = Math.floor((b - f + 1) / 3), h = (19 * a + b - dd - g + 15) % 30;
  const i = Math.floor(c / 4), k = c % 4, l = (32 + 2 * e + 2 * i - h - k) % 7;
  const m = Math.floor((a + 11 * h + 22 * l) / 451);
  const month = Math.floor((h + l - 7 * m + 114) / 31);
  const day = ((h + l - 7 * m + 114) % 31) + 1;
  const easter = Date.UTC(y, month - 1, day);
  const today = Date.UTC(y, d.getUTCMonth(), d.getUTCDate());
  return today === easter - 2 * 86400e3 || today === easter + 86400e3;
}

// Midnight UTC (ms) of the first `weekday` (0 = Sunday ... 6 = Saturday) after the day of `ms`.
export function nextWeekday(ms, weekday) {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + (((weekday - d.getUTCDay() + 7) % 7) || 7));
}

// The provider earns `minutes` of one GPU of its agentless machine (a customer rents it, the test
// speaks for the agent), on the server's test clock; resolves once the earnings are settled.
export async function earnOnTestClock(server, provider, minutes, rent = { image: 'docker.io/library/busybox:1.36' }) {
  const clock = (seconds) => moveTestClock(server, seconds);
  const voice = new AgentVoice(server, provider.key, provider.machine.id);
  const customer = await customerWithCredit(server, '1000.00');
  const t0 = await clock(0);
  const made = await customer.request('POST', '/v1/rentals', { body: { machine_id: provider.machine.id, ...rent } });
  if (made.status !== 201) throw new Error(`rent: ${made.status} ${made.body}`);
  await voice.send([{ rental_id: made.json.id, type: 'running', at: t0 }]);
  // In steps the machine's heartbeats (every second) keep up with: a machine silent for five minutes
  // of server time is lost, and its rental ended at the last heartbeat.
  for (let left = minutes * 60; left > 0; left -= 200) {
    await clock(Math.min(200, left));
    await new Promise((r) => setTimeout(r, 1300));
  }
  const tEnd = await clock(0);
  await customer.request('POST', `/v1/rentals/${made.json.id}/stop`);
  await voice.send([{ rental_id: made.json.id, type: 'ended', exit_code: 0, at: tEnd }]);
  return until('the rental to be settled', async () => {
    const r = await customer.request('GET', `/v1/rentals/${made.json.id}`);
    if (r.json.state !== 'ended') return null;
    const e = (await provider.client.request('GET', '/v1/provider/earnings')).json;
    return Number(e.balance) > 0 ? r.json : null;
  }, 30000);
}

// Moves the server's test clock to the next Monday, 01:00 UTC (after that day's payout cut-off).
export async function toNextMonday(server) {
  const clock = (seconds) => moveTestClock(server, seconds);
  const now = Date.parse(await clock(0));
  const monday = nextWeekday(now, 1);
  await clock(Math.ceil((monday + 3600e3 - now) / 1000));
  return new Date(monday).toISOString().slice(0, 10);
}
