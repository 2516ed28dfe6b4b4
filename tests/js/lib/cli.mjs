// The gpunex CLI as the tests run it: a HOME of the test's own (its ~/.config/gpunex holds the login),
// `input` on stdin, nothing else of the test's environment but PATH and `env`.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BIN } from './server.mjs';

export function gpunex(home, args, input, env = {}) {
  const r = spawnSync(path.join(BIN, 'gpunex'), args, {
    input, env: { PATH: process.env.PATH, HOME: home, ...env }, encoding: 'utf8',
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

// A HOME whose stored login is `token` for `server` as `email` (what `gpunex login` writes), in a
// folder of its own under the temporary folder.
export function homeLoggedIn(server, token = 'test-token', email = 'cli@example.com') {
  const home = mkdtempSync(path.join(tmpdir(), 'gpunex-home-'));
  mkdirSync(path.join(home, '.config', 'gpunex'), { recursive: true });
  writeFileSync(path.join(home, '.config', 'gpunex', 'credentials.json'), JSON.stringify({ server, token, email }));
  return home;
}

// A table the CLI printed, its rows as objects keyed by its header; columns are two or more spaces apart.
export function parseTable(text) {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const header = lines[0].split(/ {2,}/);
  return lines.slice(1).map((l) => Object.fromEntries(l.trim().split(/ {2,}/).map((v, i) => [header[i], v])));
}
