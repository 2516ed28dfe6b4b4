// gpunex-server's configuration: --help lists every key with its default, a bad value
// (or TLS file) exits naming the key, TOML < environment < flags, and operator accounts
// from the shell.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { BACKEND, BIN, ROOT, TestServer, Client, until } from '../lib/server.mjs';

const server = (args, env = {}) => spawnSync(path.join(BIN, 'gpunex-server'), args,
  { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 20000 });

// --help's key lines: `  name = default  (GPUNEX_NAME, --name)`, the default as a TOML value.
function helpDefaults() {
  const r = server(['--help']);
  assert.equal(r.status, 0);
  const keys = new Map();
  for (const m of r.stdout.matchAll(/^ {2}([a-z0-9_]+) = (.*) {2}\((GPUNEX_[A-Z0-9_]+), (--[a-z0-9-]+)\)$/gm)) {
    keys.set(m[1], { value: m[2], env: m[3], flag: m[4] });
  }
  return { text: r.stdout, keys };
}

test('--help documents every configuration key with its default', () => {
  const { text, keys } = helpDefaults();
  assert.ok(text.includes('--config'));
  // An admin command's help is its own options and where its store comes from, not the server's keys.
  for (const args of [['admin', '--help'], ['admin', 'bootstrap', '--help'], ['admin', 'credit', '--help']]) {
    const sub = server(args);
    assert.equal(sub.status, 0, sub.stderr);
    assert.doesNotMatch(sub.stdout, /GPUNEX_LISTEN/, args.join(' '));
    assert.match(sub.stdout, /The store: --db URL, else GPUNEX_DB, else the db of --config FILE/, args.join(' '));
  }
  for (const [name, { env, flag }] of keys) {
    assert.equal(env, `GPUNEX_${name.toUpperCase()}`);
    assert.equal(flag, `--${name.replaceAll('_', '-')}`);
    assert.ok(text.includes(`${flag} `), `--help has no option ${flag}`);
  }
  const expected = { listen: '"127.0.0.1:8080"', db: '"sqlite:var/gpunex.db"', heartbeat_interval: '15',
    body_limit_bytes: '1048576', tls_cert: '""', tls_key: '""', access_log: 'true', shutdown_grace: '10',
    rank_enterprise_boost: '1.15', benchmark_net_up_pct: '50' };
  for (const [name, value] of Object.entries(expected)) assert.equal(keys.get(name)?.value, value, name);
  // Every key of the README's example is documented.
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const example = readme.match(/```toml\n([\s\S]*?)```/)[1];
  for (const m of example.matchAll(/^([a-z_]+) =/gm)) assert.ok(keys.has(m[1]), `--help lacks ${m[1]}`);
  // Every option the binary takes is a documented key (the flags CLI11 lists before the key table).
  const options = new Set([...text.matchAll(/^ {2}(--[a-z0-9-]+) /gm)].map((m) => m[1]));
  options.delete('--help');
  options.delete('--version');
  options.delete('--config');
  assert.deepEqual([...options].sort(), [...keys.values()].map((k) => k.flag).sort());
});

test('--help shows each numeric key as a whole or decimal number with its range, and refuses a value outside it', () => {
  const { text, keys } = helpDefaults();
  // CLI11's option lines: `  --flag TYPE  help`, the help on the next line when the two are long.
  const typeOf = (flag) => text.match(new RegExp(`^ {2}${flag} (.+?)(?: {2,}|$)`, 'm'))?.[1];
  assert.equal(typeOf('--heartbeat-interval'), 'INT in [1 - 3600]');
  assert.equal(typeOf('--body-limit-bytes'), 'INT in [1024 - 1073741824]');
  assert.equal(typeOf('--rank-enterprise-boost'), 'DECIMAL in [0.1 - 10]');
  assert.equal(typeOf('--benchmark-storage-read-min-mbs'), 'DECIMAL in [0 - 1000000]');
  assert.equal(typeOf('--price-recommendation-min-listings'), 'INT in [1 - 1000]');
  assert.equal(typeOf('--access-log'), 'BOOL');
  assert.equal(typeOf('--listen'), 'TEXT');
  // Every key whose default is a number shows a numeric type and a range; a whole-number default
  // with a decimal point would be a DECIMAL key.
  let numeric = 0;
  for (const [name, { value, flag }] of keys) {
    if (!/^-?[0-9]/.test(value)) continue;
    numeric += 1;
    assert.match(typeOf(flag) ?? '', /^(INT|DECIMAL) in \[-?[0-9.]+ - -?[0-9.]+\]$/, name);
  }
  assert.ok(numeric > 30, `${numeric} numeric keys`);

  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-cfg-'));
  const db = ['--db', `sqlite:${dir}/x.db`];
  let r = server(['--heartbeat-interval', '0', ...db]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /command line: --heartbeat-interval \(heartbeat_interval\) must be between 1 and 3600/);
  r = server(['--rank-enterprise-boost', '20', ...db]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /command line: --rank-enterprise-boost \(rank_enterprise_boost\) must be a number from 0\.1 to 10, got '20'/);
  r = server(db, { GPUNEX_PRICE_RECOMMENDATION_MIN_LISTINGS: '2.5' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /environment: GPUNEX_PRICE_RECOMMENDATION_MIN_LISTINGS \(price_recommendation_min_listings\) must be a whole number, got '2\.5'/);
});

test(`${BACKEND}: a TOML file of every default, decimals included, starts the server`, async () => {
  const { keys } = helpDefaults();
  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-cfg-'));
  const file = path.join(dir, 'defaults.toml');
  // Decimal keys take TOML floats (1.2) and integers (3) alike.
  const values = new Map([...keys].map(([name, { value }]) => [name, value]));
  values.set('rank_enterprise_boost', '1.2');
  values.set('benchmark_cpu_cores_per_gpu', '3');
  writeFileSync(file, [...values].map(([k, v]) => `${k} = ${v}\n`).join(''));
  const s = await new TestServer(['--config', file]).start();
  try {
    assert.equal((await new Client(s.url).request('GET', '/healthz')).status, 200);
  } finally {
    await s.stop();
  }
  writeFileSync(file, 'rank_enterprise_boost = 12.5\n');
  let r = server(['--config', file]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /defaults\.toml: rank_enterprise_boost must be a number from 0\.1 to 10, got '12\.5'/);
  writeFileSync(file, 'heartbeat_interval = 1.5\n');
  r = server(['--config', file]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /heartbeat_interval must be a whole number, got '1\.5'/);
});

test('bad TLS files stop the server with a message naming the key and the file', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-cfg-'));
  const db = `sqlite:${dir}/x.db`;
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  let r = server(['--db', db, '--tls-cert', cert, '--tls-key', key]);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `error: tls_cert '${cert}': cannot read: No such file or directory\n`);
  r = server(['--db', db, '--tls-cert', cert]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /tls_cert and tls_key must be given together/);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-days', '1', '-subj', '/CN=localhost', '-keyout', key, '-out', cert], { stdio: 'pipe' });
  r = server(['--db', db, '--tls-cert', cert, '--tls-key', `${key}.missing`]);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `error: tls_key '${key}.missing': cannot read: No such file or directory\n`);
  writeFileSync(path.join(dir, 'junk.pem'), 'not a certificate\n');
  r = server(['--db', db, '--tls-cert', path.join(dir, 'junk.pem'), '--tls-key', key]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /tls_cert '.*junk\.pem': not a PEM certificate/);
  r = server(['--db', db, '--tls-cert', cert, '--tls-key', cert]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /tls_key '.*cert\.pem': not a PEM private key/);
});

// SIGHUP reads a renewed TLS certificate (certbot's deploy hook): connections made after it get the new
// one; a broken renewal is logged and the certificate before kept; the server never stops for it. Without
// TLS, SIGHUP changes nothing and says so (it used to end the server without draining).
test('SIGHUP reloads the TLS certificate, keeps the old one when the new files are bad, and never stops the server', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-hup-'));
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  const makeCert = (cn) => execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt',
    'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', `/CN=${cn}`, '-keyout', key, '-out', cert],
  { stdio: 'pipe' });
  makeCert('first.example');
  const start = (args) => {
    const portFile = path.join(dir, `port-${args.length}`);
    const proc = spawn(path.join(BIN, 'gpunex-server'), ['--db', `sqlite:${dir}/x-${args.length}.db`, '--data-dir', dir,
      '--listen', '127.0.0.1:0', '--port-file', portFile, '--log-level', 'info', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const logs = [];
    proc.stdout.on('data', (d) => logs.push(String(d)));
    proc.stderr.on('data', (d) => logs.push(String(d)));
    const exited = new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
    return { proc, logs, exited, port: async () => Number(await until('the port file', () => {
      try { return readFileSync(portFile, 'utf8').trim() || null; } catch { return null; }
    }, 20000, 50)) };
  };
  const subject = (port) => new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const cn = s.getPeerCertificate().subject.CN;
      s.end();
      resolve(cn);
    });
    s.once('error', reject);
  });
  const logged = (srv, msg, n = 1) => until(`"${msg}" logged ${n} time(s)`,
    () => srv.logs.join('').split('\n').filter((l) => l.includes(`"msg":"${msg}"`)).length >= n || null, 10000, 50);

  const secure = start(['--tls-cert', cert, '--tls-key', key]);
  try {
    const port = await secure.port();
    assert.equal(await subject(port), 'first.example');
    makeCert('renewed.example');
    secure.proc.kill('SIGHUP');
    await logged(secure, 'SIGHUP: TLS certificate reloaded');
    assert.equal(await subject(port), 'renewed.example');
    // A renewal that went wrong (the key of another certificate): logged, the renewed one kept.
    const renewedKey = readFileSync(key);
    execFileSync('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', key],
      { stdio: 'pipe' });
    secure.proc.kill('SIGHUP');
    await logged(secure, 'SIGHUP: the TLS certificate was not reloaded: the one before is kept');
    assert.match(secure.logs.join(''), /is not the private key of tls_cert/);
    assert.equal(await subject(port), 'renewed.example');
    assert.equal(secure.proc.exitCode, null, 'still serving');
    writeFileSync(key, renewedKey);
  } finally {
    secure.proc.kill('SIGTERM');
  }
  assert.equal(await secure.exited, 0);

  const plain = start([]);
  try {
    const port = await plain.port();
    plain.proc.kill('SIGHUP');
    await logged(plain, 'SIGHUP: nothing to reload');
    assert.equal((await new Client(`http://127.0.0.1:${port}`).request('GET', '/healthz')).status, 200);
  } finally {
    plain.proc.kill('SIGTERM');
  }
  assert.equal(await plain.exited, 0, 'SIGTERM after SIGHUP: a clean stop');
});

test('an invalid value stops the server with a message naming the key', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-cfg-'));
  let r = server(['--heartbeat-interval', 'soon', '--db', `sqlite:${dir}/x.db`]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--heartbeat-interval \(heartbeat_interval\) must be a whole number/);
  r = server(['--db', `sqlite:${dir}/x.db`], { GPUNEX_LISTEN: 'no-port' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /environment: GPUNEX_LISTEN \(listen\) must be HOST:PORT/);
  const file = path.join(dir, 'bad.toml');
  writeFileSync(file, 'body_limit_bytes = "big"\n');
  r = server(['--config', file]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /bad\.toml: body_limit_bytes must be a whole number/);
  writeFileSync(file, 'colour = "blue"\n');
  r = server(['--config', file]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unknown configuration key 'colour'/);
  // Files and folders that are not there are named as such.
  r = server(['--config', path.join(dir, 'missing.toml')]);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `error: config file ${path.join(dir, 'missing.toml')}: cannot read: No such file or directory\n`);
  r = server(['--db', `sqlite:${dir}/x.db`, '--web-dir', path.join(dir, 'no-web')]);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `error: web_dir '${path.join(dir, 'no-web')}': no index.html there (the dashboard's folder is web/ in the source tree)\n`);
  writeFileSync(path.join(dir, 'a-file'), '');
  r = server(['--db', `sqlite:${dir}/x.db`, '--data-dir', path.join(dir, 'a-file', 'data')]);
  assert.equal(r.status, 1);
  assert.match(r.stderr, new RegExp(`^error: data_dir '${path.join(dir, 'a-file', 'data')}': cannot make it: `));
});

test(`${BACKEND}: TOML < environment < flags`, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-cfg-'));
  const file = path.join(dir, 'gpunex.toml');
  // The file asks for a tiny body limit; the environment raises it; the flag (TestServer's --listen) wins for listen.
  writeFileSync(file, 'body_limit_bytes = 2048\nlisten = "127.0.0.1:1"\n');
  const s = await new TestServer(['--config', file], { GPUNEX_BODY_LIMIT_BYTES: '4096' }).start();
  try {
    const c = new Client(s.url);
    const small = await c.request('POST', '/v1/auth/signup', { raw: 'x'.repeat(3000) });
    assert.equal(small.status, 400);
    const big = await c.request('POST', '/v1/auth/signup', { raw: 'x'.repeat(5000) });
    assert.equal(big.status, 413);
  } finally {
    await s.stop();
  }
});

test(`${BACKEND}: admin create-user makes a reviewer who can log in`, async () => {
  const s = await new TestServer().start();
  try {
    s.createUser('rita@example.com', 'reviewer-password-1', 'reviewer', 'Rita Reviewer');
    const c = new Client(s.url);
    const login = await c.login('rita@example.com', 'reviewer-password-1');
    assert.deepEqual(login.user.roles, ['customer', 'reviewer']);
    const dup = spawnSync(path.join(BIN, 'gpunex-server'), ['admin', 'create-user', '--db', s.db, '--email',
      'rita@example.com', '--role', 'reviewer', '--password-stdin'], { input: 'reviewer-password-1\n', encoding: 'utf8' });
    assert.equal(dup.status, 1);
    assert.match(dup.stderr, /already exists/);
    const short = spawnSync(path.join(BIN, 'gpunex-server'), ['admin', 'create-user', '--db', s.db, '--email',
      'x@example.com', '--role', 'admin', '--password-stdin'], { input: 'short\n', encoding: 'utf8' });
    assert.equal(short.status, 1);
    assert.match(short.stderr, /Password must be at least 10 characters/);
  } finally {
    await s.stop();
  }
});

test(`${BACKEND}: serving every interface without public_url warns that the links it hands out say 127.0.0.1`, async () => {
  // The agent install script, mail links and approval instructions would send providers to 127.0.0.1.
  const dir = mkdtempSync(path.join(tmpdir(), 'gpunex-public-url-'));
  const run = (extra) => spawnSync(path.join(BIN, 'gpunex-server'), ['--db', 'sqlite::memory:', '--data-dir', dir,
    '--listen', '0.0.0.0:0', ...extra], { encoding: 'utf8', timeout: 4000, killSignal: 'SIGTERM' });
  const lines = (r) => r.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const bare = lines(run([]));
  const warned = bare.find((l) => l.msg === 'public_url is not set');
  assert.ok(warned, JSON.stringify(bare));
  assert.equal(warned.level, 'warn');
  assert.match(warned.links, /^http:\/\/127\.0\.0\.1:[1-9]\d*$/, 'the port it serves on');
  assert.match(warned.fix, /^set public_url to the address providers and customers reach this server at/);
  assert.ok(bare.some((l) => l.msg === 'listening'), 'it serves all the same');
  const set = lines(run(['--public-url', 'https://gpunex.example.com']));
  assert.ok(set.some((l) => l.msg === 'listening'), JSON.stringify(set));
  assert.ok(!set.some((l) => l.msg === 'public_url is not set'));
});

test(`${BACKEND}: every program prints one release version with --version, the server its schema and protocol too`, () => {
  const version = (bin) => {
    const r = spawnSync(path.join(BIN, bin), ['--version'], { encoding: 'utf8', timeout: 10000 });
    assert.equal(r.status, 0, `${bin}: ${r.stderr}`);
    return r.stdout.split('\n')[0];
  };
  const server = version('gpunex-server').match(/^gpunex-server (\d+\.\d+\.\d+) \(store schema version (\d+), agent protocol version (\d+)\)$/);
  assert.ok(server, version('gpunex-server'));
  assert.equal(version('gpunex'), `gpunex ${server[1]}`);
  assert.equal(version('gpunex-agent'), `gpunex-agent ${server[1]}`);
  // The schema it names is the one /readyz expects (health.test.mjs reads it there).
  assert.ok(Number(server[2]) >= 29);
});

test(`${BACKEND}: the running server says its versions: in its "listening" log line and as gpunex_build_info`, async () => {
  const r = spawnSync(path.join(BIN, 'gpunex-server'), ['--version'], { encoding: 'utf8', timeout: 10000 });
  const [, release, schema, protocol] = r.stdout.match(/^gpunex-server (\S+) \(store schema version (\d+), agent protocol version (\d+)\)/);
  const s = await new TestServer(['--log-level', 'info']).start();
  try {
    const listening = s.logs.join('').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
      .find((l) => l.msg === 'listening');
    assert.ok(listening, s.logs.join(''));
    assert.deepEqual([listening.version, listening.schema_version, listening.protocol_version],
      [release, Number(schema), Number(protocol)]);
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    assert.ok(metrics.includes(`\ngpunex_build_info{version="${release}",schema_version="${schema}",` +
      `protocol_version="${protocol}"} 1\n`), metrics.slice(0, 600));
  } finally {
    await s.stop();
  }
});
