// The API contract as the tests hold the server to it (#20): the server's own /v1/openapi.json,
// fetched once, its response schemas compiled with ajv (JSON Schema 2020-12, the OpenAPI 3.1 dialect).
// check() finds the operation a request reached and fails when the answer's status is not one the
// operation documents, or its JSON body does not match that status's schema. Operations that document
// no success status ("2XX" only) have their error answers checked, their success bodies not. A JSON
// request body the server accepted (2xx) must match the operation's requestBody schema too: the
// schemas are described by the server's own validators, and every scenario's bodies prove they agree.
import Ajv2020 from 'ajv/dist/2020.js';

const DOC_ID = 'gpunex-openapi.json';

const escapePointer = (s) => s.replace(/~/g, '~0').replace(/\//g, '~1');

export class ContractError extends Error {}

export class Contract {
  constructor(doc) {
    this.doc = doc;
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    // The whole document is one schema resource, so a response schema's "#/components/schemas/X"
    // resolves inside it, as in the document.
    this.ajv.addSchema(doc, DOC_ID);
    this.validators = new Map();
    this.routes = [];
    for (const [template, item] of Object.entries(doc.paths)) {
      const names = [];
      const re = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&')
        .replace(/\{([^}]+)\}/g, (_, n) => { names.push(n); return '([^/]+)'; })}$`);
      this.routes.push({ template, item, re, params: names.length });
    }
    // A literal path before a templated one that also matches it.
    this.routes.sort((a, b) => a.params - b.params);
  }

  // The document of the server at `baseUrl`.
  static async fetch(baseUrl) {
    const res = await fetch(`${baseUrl}/v1/openapi.json`);
    if (res.status !== 200) throw new Error(`GET /v1/openapi.json: ${res.status}`);
    return new Contract(await res.json());
  }

  // The same, fetched once per address (a server started with a test
  // clock documents one route more).
  static async load(baseUrl) {
    if (!Contract.cache.has(baseUrl)) {
      const loading = Contract.fetch(baseUrl);
      Contract.cache.set(baseUrl, loading);
      loading.catch(() => Contract.cache.delete(baseUrl));
    }
    return Contract.cache.get(baseUrl);
  }

  static cache = new Map();

  // The documented operation for `method` and a request path (query ignored), or null.
  operation(method, pathAndQuery) {
    const p = pathAndQuery.split('?')[0];
    for (const r of this.routes) {
      if (!r.re.test(p)) continue;
      const op = r.item[method.toLowerCase()];
      if (op) return { template: r.template, method: method.toLowerCase(), op };
    }
    return null;
  }

  validator(pointer) {
    if (!this.validators.has(pointer)) this.validators.set(pointer, this.ajv.compile({ $ref: `${DOC_ID}#${pointer}` }));
    return this.validators.get(pointer);
  }

  // The problems of one answer, [] when it keeps the contract. `mediaType`: the answer's
  // Content-Type without parameters (JSON when not given).
  problems(method, pathAndQuery, status, json, mediaType = 'application/json') {
    if (method === 'HEAD' || method === 'OPTIONS') return [];
    const found = this.operation(method, pathAndQuery);
    const errorPointer = '/components/schemas/Error';
    if (!found) {
      // An undocumented path: the router's "no such endpoint", an Error like every other; or the
      // dashboard's files, which are not part of the API. An API path answered is a gap in the document.
      if (status >= 400) return this.match(errorPointer, json, `${status} of an undocumented path`);
      return pathAndQuery.startsWith('/v1/') ? [`${method} ${pathAndQuery}: ${status} from a path the document does not have`] : [];
    }
    const { template, op } = found;
    const responses = op.responses ?? {};
    const key = [String(status), `${String(status)[0]}XX`, 'default'].find((k) => k in responses);
    const where = `${method} ${template} ${status}`;
    if (!key) return [`${where}: status not documented (documented: ${Object.keys(responses).join(', ')})`];
    let response = responses[key];
    let pointer = `/paths/${escapePointer(template)}/${found.method}/responses/${escapePointer(key)}`;
    if (response.$ref) {
      pointer = response.$ref.slice(1);
      response = pointer.split('/').slice(1).reduce((o, k) => o[k.replace(/~1/g, '/').replace(/~0/g, '~')], this.doc);
    }
    if (!response.content) return [];  // a body that is not JSON (the installer, the metrics)
    if (mediaType !== 'application/json') {
      return mediaType in response.content ? [] : [`${where}: Content-Type ${mediaType} not documented`];
    }
    if (!response.content['application/json']) return [`${where}: a JSON answer where the document has none`];
    return this.match(`${pointer}/content/application~1json/schema`, json, where);
  }

  match(pointer, json, where) {
    if (json === null || json === undefined) return [`${where}: the answer is not JSON`];
    const validate = this.validator(pointer);
    if (validate(json)) return [];
    return validate.errors.slice(0, 8).map((e) => `${where}: ${e.instancePath || '(body)'} ${e.message}` +
      (e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ''));
  }

  // The problems of a JSON request body the server answered `status` to: [] unless it was accepted
  // (2xx) and its operation's requestBody schema refuses it.
  requestProblems(method, pathAndQuery, status, body) {
    if (body === undefined || status < 200 || status > 299) return [];
    const found = this.operation(method, pathAndQuery);
    if (!found?.op.requestBody?.content?.['application/json']) return [];
    const pointer = `/paths/${escapePointer(found.template)}/${found.method}/requestBody/content/application~1json/schema`;
    return this.match(pointer, body, `${method} ${found.template} request body (answered ${status})`);
  }

  // Throws a ContractError naming every problem of the answer (and of the body it accepted).
  check(method, pathAndQuery, res, body) {
    const type = (res.headers?.get?.('content-type') ?? 'application/json').split(';')[0].trim();
    const problems = [...this.problems(method, pathAndQuery, res.status, res.json, type),
      ...this.requestProblems(method, pathAndQuery, res.status, body)];
    if (problems.length) {
      throw new ContractError(`answer breaks /v1/openapi.json:\n  ${problems.join('\n  ')}\n  body: ${res.body?.slice(0, 600)}`);
    }
  }
}
