// /v1/bench/net/*: the network benchmark endpoints, for provider API keys only, bounded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

import { TestServer, Client, BACKEND, BIN } from '../lib/server.mjs';
import { approvedProvider } from '../lib/provider.mjs';

test(`${BACKEND}: bench net endpoints need a provider key and are bounded`, async () => {
  const server = await new TestServer().start();
  try {
    const anon = new Client(server.url);
    assert.equal((await anon.request('GET', '/v1/bench/net/ping')).status, 401);
    const customer = new Client(server.url);
    await customer.signupAndLogin('cust@example.com');
    assert.equal((await customer.request('GET', '/v1/bench/net/ping')).status, 403);

    const { key } = await approvedProvider(server, 'prov@example.com');
    const auth = { Authorization: `Bearer ${key}` };
    const ping = await anon.request('GET', '/v1/bench/net/ping', { headers: auth });
    assert.equal(ping.status, 200, ping.body);
    const dl = await fetch(`${server.url}/v1/bench/net/download?bytes=1048576`, { headers: auth });
    assert.equal(dl.status, 200);
    assert.equal((await dl.arrayBuffer()).byteLength, 1048576);
    for (const bad of ['0', '-1', 'lots', String(16 * 1024 * 1024 + 1)]) {
      const r = await anon.request('GET', `/v1/bench/net/download?bytes=${bad}`, { headers: auth });
      assert.equal(r.status, 400, bad);
      assert.equal(r.json.error.field, 'bytes');
    }
    const up = await anon.request('POST', '/v1/bench/net/upload', { headers: auth, raw: 'x'.repeat(300000) });
    assert.equal(up.status, 200, up.body);
    assert.equal(up.json.bytes, 300000);
    // Uploads are counted as they stream in, not kept: up to 16 MiB, over the 1 MiB body limit of other routes.
    const big = await anon.request('POST', '/v1/bench/net/upload', { headers: auth, raw: 'x'.repeat(16 << 20) });
    assert.equal(big.status, 200, big.body);
    assert.equal(big.json.bytes, 16 << 20);
    const tooBig = await anon.request('POST', '/v1/bench/net/upload', { headers: auth, raw: 'x'.repeat((16 << 20) + 1) });
    assert.equal(tooBig.status, 413);
    assert.equal((await anon.request('POST', '/v1/bench/net/upload', { raw: 'x'.repeat(2 << 20) })).status, 401);
    // A caller the upload route refuses is answered from the header, before any of the 16 MiB is sent.
    const refused = await uploadHeaderOnly(server.url, {});
    assert.equal(refused.status, 401, refused.text);
    const badKey = await uploadHeaderOnly(server.url, { Authorization: `Bearer gpx_${'A'.repeat(43)}` });
    assert.equal(badKey.status, 401, badKey.text);
    assert.equal(JSON.parse(badKey.text.split('\r\n\r\n')[1]).error.code, 'invalid_api_key');
    const otherRoute = await anon.request('POST', '/v1/auth/login', { raw: 'x'.repeat(2 << 20) });
    assert.equal(otherRoute.status, 413);

    // The agent's network benchmarks, end to end against this server.
    const out = execFileSync(path.join(BIN, 'gpunex-agent'), ['bench', '--only', 'network', '--json',
      '--server', server.url], { env: { ...process.env, GPUNEX_API_KEY: key }, encoding: 'utf8' });
    const res = JSON.parse(out).report.machine;
    assert.deepEqual(res.map((r) => r.key),
      ['network.latency_p50', 'network.latency_p99', 'network.download', 'network.upload']);
    for (const r of res) assert.equal(r.status, 'ok', JSON.stringify(r));
    assert.ok(res[2].median > 10, `download ${res[2].median} Mbit/s`);
  } finally {
    await server.stop();
  }
});

// Sends only the header of a 16 MiB upload and reads what comes back before the server closes the
// connection; fails if the server waits for the body instead.
async function uploadHeaderOnly(url, headers) {
  const { hostname, port } = new URL(url);
  const sock = net.connect(Number(port), hostname);
  sock.setEncoding('utf8');
  let text = '';
  sock.on('data', (d) => { text += d; });
  const head = ['POST /v1/bench/net/upload HTTP/1.1', `Host: ${hostname}`, `Content-Length: ${16 << 20}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  sock.write(`${head.join('\r\n')}\r\n\r\n`);
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => { sock.destroy(); reject(new Error(`no answer before the body: ${text}`)); }, 5000);
    sock.on('close', () => { clearTimeout(timer); resolve(); });
    sock.on('error', (e) => { clearTimeout(timer); reject(e); });
  });
  return { status: Number(text.split(' ')[1]), text };
}
