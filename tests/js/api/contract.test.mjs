// The contract checker the API scenarios use (lib/contract.mjs) catches answers that break
// /v1/openapi.json: real answers pass, the same answers doctored fail, naming what is wrong.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, Client } from '../lib/server.mjs';
import { Contract, ContractError } from '../lib/contract.mjs';

test(`${BACKEND}: the contract checker passes the server's answers and fails doctored ones`, async () => {
  const server = await new TestServer().start();
  try {
    const contract = new Contract((await new Client(server.url).request('GET', '/v1/openapi.json')).json);
    const alice = new Client(server.url, { contract });
    const login = await alice.signupAndLogin(`contract.${process.pid}@example.com`);  // checked on the way
    const me = await alice.request('GET', '/v1/me');
    assert.equal(me.status, 200);
    assert.deepEqual(contract.problems('GET', '/v1/me', 200, me.json), []);
    assert.deepEqual(contract.problems('POST', '/v1/auth/login', 200, login), []);

    // A required member missing, a member of the wrong type, an unknown role.
    const { email, ...noEmail } = me.json;
    assert.match(contract.problems('GET', '/v1/me', 200, noEmail).join('\n'), /must have required property 'email'/);
    assert.match(contract.problems('GET', '/v1/me', 200, { ...me.json, email_verified: 'no' }).join('\n'),
      /\/email_verified must be boolean/);
    assert.match(contract.problems('GET', '/v1/me', 200, { ...me.json, roles: ['root'] }).join('\n'),
      /\/roles\/0 must be equal to one of the allowed values/);
    // A member nested in a shared component ($ref), in a closed object: an unexpected field fails.
    const form = {
      full_name: 'Alice', email, gpus: [{ model: 'L40S', count: 1, system_ram_gb: 64, download_gbps: 1, upload_gbps: 1,
        availability: '24/7', location: { city: 'Berlin', country: 'DE', region: 'eu-central' } }],
      ups: false, commitment_months: 3 };
    const draft = await alice.request('POST', '/v1/applications', { body: form });
    assert.equal(draft.status, 201, draft.body);
    // A body the server accepted is held to the operation's requestBody schema (its validators'):
    // one it could not have accepted fails; one it refused is not the schema's to judge.
    assert.deepEqual(contract.requestProblems('POST', '/v1/applications', 201, form), []);
    assert.match(contract.requestProblems('POST', '/v1/applications', 201, { ...form, surprise: 1 }).join('\n'),
      /request body .*must NOT have additional properties/);
    const noCity = structuredClone(form);
    delete noCity.gpus[0].location.city;
    assert.match(contract.requestProblems('POST', '/v1/applications', 201, noCity).join('\n'),
      /\/gpus\/0\/location must have required property 'city'/);
    assert.deepEqual(contract.requestProblems('POST', '/v1/applications', 400, { ...form, surprise: 1 }), []);
    const doctored = structuredClone(draft.json);
    doctored.history[0].surprise = 1;
    assert.match(contract.problems('POST', '/v1/applications', 201, doctored).join('\n'),
      /\/history\/0 must NOT have additional properties/);
    // A status the operation does not document (201 answered 200), and an error body that is not an Error.
    assert.match(contract.problems('POST', '/v1/applications', 200, draft.json).join('\n'), /status not documented/);
    assert.match(contract.problems('GET', '/v1/me', 404, { message: 'gone' }).join('\n'), /required property 'error'/);
    assert.match(contract.problems('GET', '/v1/me', 200, null).join('\n'), /not JSON/);
    // The client with the contract throws on such an answer: here the server's real 404 is fine...
    const miss = await alice.request('GET', '/v1/applications/no-such-id');
    assert.equal(miss.status, 404);
    // An API path the document lacks: its 404 is an Error, but a 200 from it is a gap in the document.
    const nowhere = await alice.request('GET', '/v1/no-such-thing');
    assert.equal(nowhere.status, 404);
    assert.match(contract.problems('GET', '/v1/no-such-thing', 200, {}).join('\n'), /a path the document does not have/);
    // ...and an operation checked against another's schema is not.
    assert.throws(() => contract.check('GET', '/v1/me', { status: 200, json: draft.json, body: draft.body }),
      (e) => e instanceof ContractError && /required property 'roles'/.test(e.message));
  } finally {
    await server.stop();
  }
});
