// SIGTERM through the real signal path: a response in flight is sent whole, new connections are
// refused at once, and the process exits 0 once the response is out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { BACKEND, TestServer, until } from '../lib/server.mjs';
import { approvedProvider } from '../lib/provider.mjs';
import { AgentVoice, RENTAL_SERVER_ARGS, agentlessMachine } from '../lib/rentals.mjs';

// Resolves with the error code of one connection attempt ('connected' when it was accepted).
function tryConnect(port) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.on('connect', () => { s.destroy(); resolve('connected'); });
    s.on('error', (e) => resolve(e.code));
  });
}

test(`${BACKEND}: SIGTERM finishes a slow download, refuses new connections and exits 0`, async () => {
  const server = await new TestServer(['--shutdown-grace', '30']).start();
  try {
    const { key } = await approvedProvider(server, 'drain@example.com');
    const size = 16 << 20;  // the largest download: more than the socket buffers hold
    const target = `/v1/bench/net/download?bytes=${size}`;
    const whole = Buffer.from(await (await fetch(server.url + target,
      { headers: { Authorization: `Bearer ${key}` } })).arrayBuffer());
    assert.equal(whole.length, size);

    // The same download, read slowly: the client stops reading after the first bytes.
    const sock = net.connect(server.port, '127.0.0.1');
    const chunks = [];
    let paused = false;
    sock.on('data', (d) => {
      chunks.push(d);
      if (!paused) {
        paused = true;
        sock.pause();
      }
    });
    const ended = new Promise((resolve, reject) => { sock.on('end', resolve); sock.on('error', reject); });
    sock.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    await until('the first bytes of the download', () => paused, 10000, 20);
    await sleep(300);

    server.proc.kill('SIGTERM');
    // (An attempt caught in the listen backlog as the socket closes is reset instead.)
    await until('new connections to be refused', async () => (await tryConnect(server.port)) === 'ECONNREFUSED',
      5000, 50);
    // The server waits for the download (grace is 30 s) rather than exiting.
    await sleep(1500);
    assert.equal(server.proc.exitCode, null, 'the server exited with a response in flight');

    // Its header went out before SIGTERM (keep-alive); the server closes the connection after the body.
    sock.resume();
    await ended;
    const reply = Buffer.concat(chunks);
    const headEnd = reply.indexOf('\r\n\r\n');
    const head = reply.subarray(0, headEnd).toString();
    assert.match(head, /^HTTP\/1\.1 200 /);
    assert.match(head, new RegExp(`\r\nContent-Length: ${size}(\r\n|$)`, 'i'));
    assert.ok(reply.subarray(headEnd + 4).equals(whole), 'the download arrived whole');
    const exit = await Promise.race([server.exited, sleep(10000, 'still running', { ref: false })]);
    assert.deepEqual(exit, { code: 0, signal: null });
  } finally {
    await server.stop();
  }
});

test(`${BACKEND}: SIGTERM answers an agent's parked rentals poll at once instead of waiting out the grace`, async () => {
  // An agent's rentals long poll waits up to 25 s for a change; a rolling restart must not wait with it.
  const server = await new TestServer([...RENTAL_SERVER_ARGS, '--shutdown-grace', '20']).start();
  let provider;
  try {
    provider = await agentlessMachine(server, 'parked@example.com');
    const voice = new AgentVoice(server, provider.key, provider.machine.id);
    const first = await voice.poll();
    assert.equal(first.status, 200, first.body);
    const parked = voice.poll(first.json.version, 25);
    await sleep(700);  // parked: the machine's rentals do not change
    const t0 = Date.now();
    server.proc.kill('SIGTERM');
    const answered = await parked;
    assert.equal(answered.status, 200, answered.body);
    assert.deepEqual(answered.json.rentals, []);
    const exit = await Promise.race([server.exited, sleep(15000, 'still running', { ref: false })]);
    assert.deepEqual(exit, { code: 0, signal: null });
    assert.ok(Date.now() - t0 < 5000, `exited ${Date.now() - t0} ms after SIGTERM (the grace is 20 s)`);
  } finally {
    if (provider?.agent) await provider.agent.stop();  // its heartbeats
    await server.stop();
  }
});
