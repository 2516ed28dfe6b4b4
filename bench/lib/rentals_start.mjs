// bench/rentals.sh's start latency: a TestServer with a listed machine whose real gpunex-agent runs
// containers on the Podman service at DOCKER_HOST; STARTS rentals, one after another, each timed from
// POST /v1/rentals to the rental showing "running" (polled every 10 ms), then stopped. Beside it,
// Podman's own create + start of the same image through the same Docker API. Prints one JSON object.
// Usage: node rentals_start.mjs STARTS IMAGE DOCKER_HOST
import { TestServer } from '../../tests/js/lib/server.mjs';
import { RENTAL_SERVER_ARGS, customerWithCredit, dockerApi, listedMachine } from '../../tests/js/lib/rentals.mjs';

const [startsArg, image, dockerHost] = process.argv.slice(2);
const STARTS = Number(startsArg);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const docker = (method, path, body) => dockerApi(dockerHost, method, path, body);

const pct = (v, p) => {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

// Podman's own create + start, the same image and command.
const podman = [];
for (let i = 0; i < STARTS; i++) {
  const t = performance.now();
  const c = await docker('POST', `/v1.41/containers/create?name=bench-${process.pid}-${i}`,
    { Image: image, Cmd: ['sleep', '3600'] });
  if (c.status !== 201) throw new Error(`create: ${c.status} ${JSON.stringify(c.json)}`);
  const s = await docker('POST', `/v1.41/containers/${c.json.Id}/start`);
  if (s.status !== 204) throw new Error(`start: ${s.status}`);
  podman.push(performance.now() - t);
  await docker('DELETE', `/v1.41/containers/${c.json.Id}?force=true`);
}

const server = await new TestServer(RENTAL_SERVER_ARGS).start();
const provider = await listedMachine(server, 'start-bench@example.com',
  { simulate: 'L4:1', agentArgs: ['--docker-host', dockerHost] });
const customer = await customerWithCredit(server, '1000.00');
const gpunex = [];
try {
  for (let i = 0; i < STARTS; i++) {
    const t = performance.now();
    const r = await customer.request('POST', '/v1/rentals', { body: { machine_id: provider.machine.id, image,
      command: ['sleep', '3600'] } });
    if (r.status !== 201) throw new Error(`rent: ${r.status} ${r.body}`);
    for (;;) {
      const g = await customer.request('GET', `/v1/rentals/${r.json.id}`);
      if (g.json.state === 'running') break;
      if (g.json.state === 'ended') throw new Error(`ended: ${g.body}\n${provider.agent.logs.join('').slice(-3000)}`);
      await sleep(10);
    }
    gpunex.push(performance.now() - t);
    await customer.request('POST', `/v1/rentals/${r.json.id}/stop`);
    for (;;) {
      const g = await customer.request('GET', `/v1/rentals/${r.json.id}`);
      if (g.json.state === 'ended') break;
      await sleep(50);
    }
  }
} finally {
  await provider.agent.stop();
  await server.stop();
}
console.log(JSON.stringify({ starts: STARTS, gpunex_p50_ms: pct(gpunex, 50), gpunex_p95_ms: pct(gpunex, 95),
  podman_p50_ms: pct(podman, 50), podman_p95_ms: pct(podman, 95) }));
