// Liveness and readiness: /healthz answers from memory while the process serves; /readyz checks
// the store and its schema and says why it is not ready (503 with the reason); a newer schema (a rolling
// upgrade under way) leaves it ready.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { BACKEND, TestServer, Client, until } from '../lib/server.mjs';

// Runs one SQL statement on the test server's own database, through the backend's own client.
function sql(server, statement) {
  if (BACKEND === 'sqlite') execFileSync('sqlite3', [server.db.replace(/^sqlite:/, ''), statement]);
  else execFileSync('psql', [server.db, '-q', '-c', statement], { stdio: 'pipe' });
}

test(`${BACKEND}: /readyz follows the schema, /healthz only the process`, async () => {
  const server = await new TestServer().start();
  try {
    const c = new Client(server.url);
    const ready = await c.request('GET', '/readyz');
    assert.equal(ready.status, 200, ready.body);
    assert.equal(ready.json.status, 'ready');
    const expected = ready.json.schema_version;
    assert.ok(expected >= 7, ready.body);

    // A newer schema (a newer replica migrated the shared database in a rolling upgrade): migrations only
    // add, so this replica stays ready, and says to upgrade it.
    sql(server, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (${expected + 1}, 'from a newer build', 0)`);
    const newer = await c.request('GET', '/readyz');
    assert.equal(newer.status, 200, newer.body);
    assert.equal(newer.json.status, 'ready');
    assert.equal(newer.json.schema_version, expected + 1);
    assert.match(newer.json.note, new RegExp(`newer than this build's \\(${expected}\\): .*upgrade this one`));
    sql(server, `DELETE FROM schema_migrations WHERE version = ${expected + 1}`);

    // A schema that is not this binary's (a migration missing): not ready, saying which.
    sql(server, `DELETE FROM schema_migrations WHERE version = ${expected}`);
    const behind = await c.request('GET', '/readyz');
    assert.equal(behind.status, 503, behind.body);
    assert.equal(behind.json.status, 'unavailable');
    assert.equal(behind.json.schema_version, expected - 1);
    assert.equal(behind.json.expected_schema_version, expected);
    assert.match(behind.json.reason, new RegExp(`schema version ${expected - 1}, this server needs ${expected}`));

    // The store gone entirely: still alive, not ready.
    sql(server, 'DROP TABLE schema_migrations');
    const gone = await c.request('GET', '/readyz');
    assert.equal(gone.status, 503, gone.body);
    assert.equal(gone.json.reason, 'store unavailable');
    // The store's own words are for the operator's log, not for anyone who asks this public route.
    assert.equal(gone.json.detail, undefined, gone.body);
    assert.doesNotMatch(gone.body, /schema_migrations/);
    await until('the reason in the log', () => server.logs.join('').split('\n')
      .some((l) => l.includes('"msg":"not ready: the store does not answer"') && l.includes('schema_migrations')), 5000);
    const alive = await c.request('GET', '/healthz');
    assert.equal(alive.status, 200, alive.body);
    assert.deepEqual(alive.json, { status: 'ok' });
  } finally {
    await server.stop();
  }
});
