// Backups (#20): a backup taken while the server serves writes is one consistent snapshot, and a fresh
// server on its restore has the accounts, the machine and the money. SQLite: `gpunex-server admin
// backup` / `admin restore` (SQLite's online backup API); PostgreSQL: the README's pg_dump -Fc /
// pg_restore, and the admin commands refuse, naming pg_dump.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, statSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BACKEND, BIN, TestServer, Client } from '../lib/server.mjs';
import { agentlessMachine, customerWithCredit } from '../lib/rentals.mjs';

const SERVER = path.join(BIN, 'gpunex-server');

// Runs a command without blocking the event loop, so the test's writers keep writing meanwhile.
function run(cmd, args) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    p.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

function sqlValue(db, statement) {
  if (db.startsWith('sqlite:')) return execFileSync('sqlite3', [db.slice(7), statement]).toString().trim();
  return execFileSync('psql', [db, '-At', '-c', statement]).toString().trim();
}

// A fresh database the backup is restored into, and how: SQLite through `admin restore`, PostgreSQL
// through pg_restore into a new database.
async function restore(backupFile, dir) {
  if (BACKEND === 'sqlite') {
    const db = `sqlite:${path.join(dir, 'restored', 'gpunex.db')}`;
    const r = await run(SERVER, ['admin', 'restore', '--db', db, '--from', backupFile]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^restored .* \(\d+ bytes, schema version \d+, integrity ok, mode 0600\)\n$/);
    return db;
  }
  const u = new URL(process.env.GPUNEX_TEST_PG_URL);
  const name = `t_${process.pid}_restored`;
  execFileSync('psql', [u.toString(), '-q', '-c', `CREATE DATABASE ${name}`]);
  u.pathname = `/${name}`;
  const r = await run('pg_restore', ['--no-owner', '--exit-on-error', '-d', u.toString(), backupFile]);
  assert.equal(r.status, 0, r.stderr);
  return u.toString();
}

test(`${BACKEND}: a backup taken under writes restores into a server with the same users, machine and money`,
  { timeout: 180000 }, async () => {
    const server = await new TestServer().start();
    const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-backup-'));
    let restored = null;
    let agent = null;
    try {
      const provider = await agentlessMachine(server, `provider.${process.pid}@example.com`, { gpus: 2 });
      agent = provider.agent;
      const customer = await customerWithCredit(server, '10.00');
      const me = (await customer.request('GET', '/v1/me')).json;

      // Writers while the backup runs: credits, one ledger transaction each (the machine's heartbeats
      // go on too, every second). What was acknowledged before the backup started must be in it.
      let stop = false;
      let acknowledged = 0;
      let credits = 0;
      const writer = (async () => {
        while (!stop) {
          const n = ++credits;
          const r = await server.adminClient.request('POST', '/v1/admin/credits',
            { body: { email: me.email, amount: '0.01', reference: `backup load ${n}` } });
          assert.equal(r.status, 201, r.body);
          acknowledged = Math.max(acknowledged, n);
        }
      })();
      while (acknowledged < 20) await new Promise((r) => setTimeout(r, 10));
      const before = acknowledged;

      const backupFile = path.join(dir, BACKEND === 'sqlite' ? 'gpunex-backup.db' : 'gpunex.dump');
      const backup = BACKEND === 'sqlite'
        ? await run(SERVER, ['admin', 'backup', '--db', server.db, '--to', backupFile])
        : await run('sh', ['-c', 'umask 077 && exec pg_dump -Fc -f "$1" "$2"', 'sh', backupFile, server.db]);
      const during = acknowledged;
      stop = true;
      await writer;
      assert.equal(backup.status, 0, backup.stderr);
      if (BACKEND === 'sqlite') {
        assert.match(backup.stdout, /^backed up .* \(\d+ bytes, \d+ pages, schema version \d+, integrity ok, mode 0600\)\n$/);
        // No temporary file is left beside it.
        assert.deepEqual(readdirSync(dir), ['gpunex-backup.db']);
      }
      assert.equal(statSync(backupFile).mode & 0o777, 0o600, 'the backup holds secrets: its owner reads it only');
      assert.ok(during > before, 'credits were acknowledged while the backup ran');

      // Never over an existing file, and on PostgreSQL the command points at pg_dump.
      const again = await run(SERVER, ['admin', 'backup', '--db', server.db, '--to', backupFile]);
      assert.equal(again.status, 1);
      assert.match(again.stderr, BACKEND === 'sqlite' ? /exists; a backup never overwrites a file/ : /use pg_dump|with pg_dump/);
      if (BACKEND === 'sqlite') {
        // A folder that is not there is named, not the temporary file the copy would have been written to.
        const nowhere = await run(SERVER, ['admin', 'backup', '--db', server.db, '--to', path.join(dir, 'missing', 'b.db')]);
        assert.equal(nowhere.status, 1);
        assert.equal(nowhere.stderr, `error: store: no folder ${path.join(dir, 'missing')} for the backup ` +
          `${path.join(dir, 'missing', 'b.db')} (make it first)\n`);
      }

      const db = await restore(backupFile, dir);
      if (db.startsWith('sqlite:')) {
        assert.equal(sqlValue(db, 'PRAGMA integrity_check'), 'ok');
        assert.equal(statSync(db.slice(7)).mode & 0o777, 0o600);
      }
      // One snapshot: every ledger transaction in it is whole (the entries of each sum to zero), and
      // it holds every credit acknowledged before it started, in order, with none missing.
      assert.equal(sqlValue(db, 'SELECT COUNT(*) FROM (SELECT tx_id FROM ledger_entries ' +
        'GROUP BY tx_id HAVING SUM(amount) <> 0) AS t'), '0');
      const refs = sqlValue(db, "SELECT reference FROM ledger_transactions WHERE reference LIKE 'backup load %'")
        .split('\n').filter(Boolean).map((s) => Number(s.replace('backup load ', ''))).sort((a, b) => a - b);
      assert.ok(refs.length >= before, `${refs.length} credits in the backup, ${before} acknowledged before it`);
      assert.deepEqual(refs, [...Array(refs.length).keys()].map((i) => i + 1), 'no credit is missing before the last');

      // Without the server's secret, which the README says to keep beside the backups, a server on the
      // restored database is refused (approval keys sealed under it could not be revealed); with it, it serves.
      const keyless = spawnSync(SERVER, ['--db', db, '--data-dir', mkdtempSync(path.join(dir, 'keyless-')),
        '--listen', '127.0.0.1:0'], { encoding: 'utf8', timeout: 30000 });
      assert.equal(keyless.status, 1, keyless.stdout);
      assert.match(keyless.stderr, /this database's servers use another server_secret/);
      restored = new TestServer();
      restored.dir = path.join(dir, 'server');
      restored.db = db;
      mkdirSync(restored.dir);
      copyFileSync(path.join(server.dir, 'server.key'), path.join(restored.dir, 'server.key'));
      await restored.start();
      // The accounts: the customer logs in with its password; the provider sees its machine.
      const again2 = new Client(restored.url);
      await again2.login(me.email, 'correct-horse-battery');
      const balance = (await again2.request('GET', '/v1/billing/balance')).json;
      const expected = 10 + refs.length * 0.01;
      assert.equal(balance.balance, expected.toFixed(6));
      const history = (await again2.request('GET', `/v1/billing/history?limit=200`)).json;
      const sum = history.items.reduce((s, i) => s + Math.round(Number(i.amount) * 1e6), 0);
      assert.equal(sum, Math.round(expected * 1e6), 'the history adds up to the balance');
      const owner = new Client(restored.url);
      owner.token = provider.key;
      const machines = await owner.request('GET', '/v1/provider/machines');
      assert.equal(machines.status, 200, machines.body);
      assert.deepEqual(machines.json.items.map((m) => m.id), [provider.machine.id]);
      assert.equal(machines.json.items[0].gpus.length, 2);

      if (BACKEND === 'sqlite') {
        // Restoring over a database a server has open is refused, and changes nothing.
        const over = await run(SERVER, ['admin', 'restore', '--db', db, '--from', backupFile, '--replace']);
        assert.equal(over.status, 1);
        assert.match(over.stderr, /open in another process/);
        const plain = await run(SERVER, ['admin', 'restore', '--db', db, '--from', backupFile]);
        assert.equal(plain.status, 1);
        assert.match(plain.stderr, /exists; restore into a new path, or stop the server and pass --replace/);
        assert.equal((await again2.request('GET', '/v1/billing/balance')).json.balance, expected.toFixed(6));
        // Stopped, it may be replaced: the old database is kept beside it.
        await restored.stop();
        const replaced = await run(SERVER, ['admin', 'restore', '--db', db, '--from', backupFile, '--replace']);
        assert.equal(replaced.status, 0, replaced.stderr);
        const kept = replaced.stdout.match(/kept as (\S+)\n/)[1];
        assert.ok(existsSync(kept));
        assert.equal(sqlValue(db, 'PRAGMA integrity_check'), 'ok');
      } else {
        const refused = await run(SERVER, ['admin', 'restore', '--db', server.db, '--from', backupFile]);
        assert.equal(refused.status, 1);
        assert.match(refused.stderr, /pg_restore/);
      }
    } finally {
      await agent?.stop();
      await restored?.stop();
      await server.stop();
    }
  });
