// The test harness itself: a test that fails before it stops its server (a browser's close() that throws
// in its `finally`, as CI26's api_docs screenshot did) must not leave the server running, which kept the
// file's node process, and with it the browser folder's ctest entry, waiting for its 600 s timeout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT } from '../lib/server.mjs';

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('a test that fails before stopping its server and agent ends, and stops them', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-harness-'));
  const file = path.join(dir, 'leaves.test.mjs');
  const lib = path.join(ROOT, 'tests', 'js', 'lib');
  writeFileSync(file, `
import { test } from 'node:test';
import { TestServer } from '${lib}/server.mjs';
import { startAgent } from '${lib}/agent.mjs';
test('starts a server and an agent, then fails without stopping them', async () => {
  const server = await new TestServer().start();
  const agent = startAgent(server.url, 'gpunex_sk_not_a_key');
  console.log('SERVER_PID=' + server.proc.pid);
  throw new Error('failed before its finally could stop anything');
});
`);
  const started = Date.now();
  // A test runner of its own (this file's NODE_TEST_CONTEXT would make it refuse to run files).
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, ['--test', file], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  const code = await new Promise((resolve) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); resolve('hung'); }, 60000);
    child.on('exit', (c) => { clearTimeout(timer); resolve(c); });
  });
  assert.notEqual(code, 'hung', `the file did not end within 60 s:\n${out}`);
  assert.equal(code, 1, out);  // its test failed, and says so
  assert.ok(Date.now() - started < 60000);
  assert.match(out, /test harness: gpunex-server \(pid \d+\) was still running after the tests: stopping it/);
  assert.match(out, /test harness: gpunex-agent \(pid \d+\) was still running/);
  const pid = Number(/SERVER_PID=(\d+)/.exec(out)?.[1]);
  assert.ok(pid > 0, out);
  assert.equal(alive(pid), false, `gpunex-server ${pid} still runs`);
});
