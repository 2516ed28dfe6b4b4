// Runs every tests/scenarios/*.scn file against a fresh server on the backend
// named by GPUNEX_TEST_DB (sqlite or postgres).
import { test } from 'node:test';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { ROOT, BACKEND, TestServer } from '../lib/server.mjs';
import { runScenario } from '../lib/scenario.mjs';

const dir = path.join(ROOT, 'tests', 'scenarios');
for (const name of readdirSync(dir).filter((f) => f.endsWith('.scn')).sort()) {
  test(`${BACKEND}: ${name}`, async () => {
    const server = await new TestServer().start();
    try {
      await runScenario(path.join(dir, name), server);
    } finally {
      await server.stop();
    }
  });
}
