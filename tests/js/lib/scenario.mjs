// Runs API scenarios written as data (tests/scenarios/*.scn), in the spirit of
// DuckDB's .test files. A scenario is a list of steps separated by blank lines:
//
//   # comment
//   signup alice alice@example.com          -> creates and logs in a customer "alice"
//   operator rita rita@example.com reviewer -> an account made by `gpunex-server admin create-user`
//   [alice] POST /v1/things                 -> a request, optionally as a named user
//   Idempotency-Key: k1                     -> request headers (optional)
//   {"name": "x"}                           -> JSON body (one line), or `raw TEXT` sent as is,
//                                              or `repeat N BYTE` for a body of N copies of BYTE
//   => 400                                  -> expected status
//   {"error": {"field": "name"}}            -> expected JSON, matched as a subset ("*" = any value,
//                                              "<absent>" = the key must not be there)
//   capture id = json.path                  -> keeps a value for ${id} in later steps
//   let app = {"a": 1}                      -> keeps a JSON value for ${app} in later steps (one line)
//   from app                                -> as a request body: the value of `let app`, optionally
//   from app unset x.y[0].z set {"a.b": 2}     with one path removed and paths set (JSON values)
//
// Times the server compares with its own clock are never written as dates: ${now}, ${now-5m},
// ${now+1d} (units s, m, h, d, w) render the runner's clock, moved by that much, as RFC 3339
// UTC to the second (2027-01-08T10:00:00Z). The runner and the server share the machine's
// clock, so a scenario passes on any day and under faketime.
//
// Every answer is also held to the server's /v1/openapi.json (lib/contract.mjs): a status the
// operation does not document, or a JSON body its schema refuses, fails the step.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Client } from './server.mjs';
import { Contract, ContractError } from './contract.mjs';

export function parseScenario(text, file) {
  const steps = [];
  const blocks = text.split(/\n\s*\n/);
  for (const block of blocks) {
    const lines = block.split('\n').map((l) => l.trimEnd()).filter((l) => l && !l.trimStart().startsWith('#'));
    if (!lines.length) continue;
    const first = lines[0];
    let m;
    if ((m = first.match(/^signup (\w+) (\S+)$/))) {
      steps.push({ kind: 'signup', name: m[1], email: m[2] });
      continue;
    }
    if ((m = first.match(/^operator (\w+) (\S+) (admin|reviewer|customer)$/))) {
      steps.push({ kind: 'operator', name: m[1], email: m[2], role: m[3] });
      continue;
    }
    if ((m = first.match(/^let (\w+) = (.*)$/))) {
      steps.push({ kind: 'let', name: m[1], json: m[2] });
      continue;
    }
    m = first.match(/^(?:\[(\w+)\] )?(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) (\S+)$/);
    if (!m) throw new Error(`${file}: cannot read step starting "${first}"`);
    const step = { kind: 'request', as: m[1], method: m[2], path: m[3], headers: {}, captures: [] };
    let i = 1;
    for (; i < lines.length && !lines[i].startsWith('=>'); i++) {
      const line = lines[i];
      let hm;
      if ((hm = line.match(/^([A-Za-z][A-Za-z0-9-]*): (.*)$/)) && !line.startsWith('{')) step.headers[hm[1]] = hm[2];
      else if (line.startsWith('raw ')) step.raw = line.slice(4);
      else if ((hm = line.match(/^from (\w+)(?: unset ([\w.[\]]+))?(?: set (.*))?$/))) {
        step.from = { name: hm[1], unset: hm[2], set: hm[3] };
      }
      else if ((hm = line.match(/^repeat (\d+) (.)$/))) step.raw = hm[2].repeat(Number(hm[1]));
      else step.body = line;
    }
    if (i >= lines.length) throw new Error(`${file}: request "${first}" has no "=> STATUS" line`);
    step.status = Number(lines[i].slice(2).trim());
    for (i++; i < lines.length; i++) {
      const line = lines[i];
      let cm;
      if ((cm = line.match(/^capture (\w+) = ([\w.[\]]+)$/))) step.captures.push({ name: cm[1], path: cm[2] });
      else if ((cm = line.match(/^header ([A-Za-z0-9-]+): (.*)$/))) (step.expectHeaders ||= {})[cm[1]] = cm[2];
      else step.expect = line;
    }
    steps.push(step);
  }
  return steps;
}

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

// ${now}, ${now+1d}, ${now-90s}: the current time moved by an offset, as RFC 3339 UTC seconds.
export function relativeTime(expr, nowMs = Date.now()) {
  const m = expr.match(/^now(?:([+-])(\d+)([smhdw]))?$/);
  if (!m) return null;
  const offset = m[1] ? (m[1] === '-' ? -1 : 1) * Number(m[2]) * UNIT_MS[m[3]] : 0;
  return new Date(Math.floor((nowMs + offset) / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function substitute(text, vars) {
  text = text.replace(/\$\{(now(?:[+-]\d+[smhdw])?)\}/g, (_, expr) => relativeTime(expr));
  return text.replace(/\$\{(\w+)\}/g, (_, k) => {
    if (!(k in vars)) throw new Error(`unknown variable \${${k}}`);
    return typeof vars[k] === 'object' ? JSON.stringify(vars[k]) : String(vars[k]);
  });
}

function pathKeys(path) {
  return path.split(/\.|\[(\d+)\]/).filter((k) => k !== undefined && k !== '');
}

// A copy of `base` with the value at `unset` removed and each "path": value of `set` written.
function derive(base, unset, set) {
  const out = structuredClone(base);
  const walk = (path, fn) => {
    const keys = pathKeys(path);
    const parent = keys.slice(0, -1).reduce((o, k) => o[k], out);
    fn(parent, keys[keys.length - 1]);
  };
  if (unset) walk(unset, (p, k) => (Array.isArray(p) ? p.splice(Number(k), 1) : delete p[k]));
  for (const [path, v] of Object.entries(set || {})) walk(path, (p, k) => { p[k] = v; });
  return out;
}

function pick(obj, path) {
  return path.split(/\.|\[(\d+)\]/).filter(Boolean).reduce((o, k) => (o == null ? undefined : o[k]), obj);
}

// Expected JSON matches as a subset: every key in `expected` must be in `actual` with a matching value.
export function assertSubset(actual, expected, where = '$') {
  if (expected === '*') {
    assert.ok(actual !== undefined && actual !== null, `${where}: expected a value`);
    return;
  }
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${where}: expected an array, got ${JSON.stringify(actual)}`);
    assert.equal(actual.length, expected.length, `${where}: array length`);
    expected.forEach((e, i) => assertSubset(actual[i], e, `${where}[${i}]`));
    return;
  }
  if (expected && typeof expected === 'object') {
    assert.ok(actual && typeof actual === 'object', `${where}: expected an object, got ${JSON.stringify(actual)}`);
    for (const [k, v] of Object.entries(expected)) {
      if (v === '<absent>') assert.ok(!(k in actual), `${where}.${k}: expected no such key, got ${JSON.stringify(actual[k])}`);
      else assertSubset(actual[k], v, `${where}.${k}`);
    }
    return;
  }
  assert.deepEqual(actual, expected, `${where}`);
}

export async function runScenario(file, server) {
  const steps = parseScenario(readFileSync(file, 'utf8'), file);
  const users = {};
  const vars = {};
  const contract = await Contract.fetch(server.url);
  const anon = new Client(server.url, { contract });
  for (const [n, step] of steps.entries()) {
    if (step.kind === 'signup') {
      const c = new Client(server.url, { contract });
      await c.signupAndLogin(step.email);
      users[step.name] = c;
      continue;
    }
    if (step.kind === 'let') {
      vars[step.name] = JSON.parse(substitute(step.json, vars));
      continue;
    }
    if (step.kind === 'operator') {
      server.createUser(step.email, 'operator-password-1', step.role);
      const c = new Client(server.url, { contract });
      await c.login(step.email, 'operator-password-1');
      users[step.name] = c;
      continue;
    }
    const client = step.as ? users[step.as] : anon;
    if (!client) throw new Error(`${file}: step ${n + 1} uses unknown user ${step.as}`);
    const headers = Object.fromEntries(Object.entries(step.headers).map(([k, v]) => [k, substitute(v, vars)]));
    const opts = { headers };
    if (step.from) {
      if (!(step.from.name in vars)) throw new Error(`${file}: step ${n + 1} uses unknown value ${step.from.name}`);
      const set = step.from.set ? JSON.parse(substitute(step.from.set, vars)) : undefined;
      opts.body = derive(vars[step.from.name], step.from.unset, set);
    } else if (step.raw !== undefined) opts.raw = substitute(step.raw, vars);
    else if (step.body !== undefined) opts.body = JSON.parse(substitute(step.body, vars));
    const label = `${file} step ${n + 1} (${step.method} ${step.path})`;
    let res;
    try {
      res = await client.request(step.method, substitute(step.path, vars), opts);
    } catch (e) {
      if (e instanceof ContractError) e.message = `${label}: ${e.message}`;
      throw e;
    }
    assert.equal(res.status, step.status, `${label}: status ${res.status}, body ${res.body}`);
    if (step.expect) {
      assert.ok(res.json !== null, `${label}: response is not JSON: ${res.body}`);
      assertSubset(res.json, JSON.parse(substitute(step.expect, vars)), label);
    }
    for (const [h, v] of Object.entries(step.expectHeaders || {})) {
      assert.equal(res.headers.get(h), v, `${label}: header ${h}`);
    }
    for (const c of step.captures) {
      const v = pick(res.json, c.path);
      assert.ok(v !== undefined, `${label}: nothing at ${c.path} to capture`);
      vars[c.name] = v;
    }
  }
}
