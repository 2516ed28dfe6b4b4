// An approved provider with an API key, through the real onboarding API:
// sign up, apply, submit, approve by a reviewer. For tests and benchmarks
// that need a provider's key (agent, benchmarks).
import { Client } from './server.mjs';

let reviewers = 0;

// { reveal: false } leaves the approval key unrevealed (key undefined; keyId names it). { confirmEmail: true }
// opens the signup's confirmation link from the mail drop, so the provider's mail is sent (a test that reads
// it runs the server with a short --mail-poll-interval-ms).
export async function approvedProvider(server, email, { gpus, reveal = true, confirmEmail = false } = {}) {
  const provider = new Client(server.url);
  await provider.signupAndLogin(email);
  if (confirmEmail) await server.confirmEmail(provider, email);
  const app = {
    full_name: 'Bench Provider', email, company: 'Bench Ltd',
    gpus: gpus || [{ model: 'L40S', count: 2, system_ram_gb: 256, download_gbps: 10, upload_gbps: 10,
      availability: '24/7', location: { city: 'Dublin', country: 'IE', region: 'eu-west' } }],
    ups: true, commitment_months: 12,
  };
  const created = await provider.request('POST', '/v1/applications', { body: app });
  if (created.status !== 201) throw new Error(`application: ${created.status} ${created.body}`);
  const sub = await provider.request('POST', `/v1/applications/${created.json.id}/submit`);
  if (sub.status !== 200) throw new Error(`submit: ${sub.status} ${sub.body}`);
  const reviewerEmail = `reviewer${++reviewers}.${process.pid}@example.com`;
  server.createUser(reviewerEmail, 'operator-password-1', 'reviewer');
  const reviewer = new Client(server.url);
  await reviewer.login(reviewerEmail, 'operator-password-1');
  const ok = await reviewer.request('POST', `/v1/review/applications/${created.json.id}/decision`,
    { body: { decision: 'approve', tier: 'enterprise', note: 'ok' } });
  if (ok.status !== 200) throw new Error(`approve: ${ok.status} ${ok.body}`);
  if ('api_key' in ok.json) throw new Error('the approval answer shows the reviewer the API key');
  // A fresh login picks up the provider role granted at approval; the applicant reveals the key once.
  await provider.login(email, 'correct-horse-battery');
  const keyId = ok.json.api_key_id;
  if (!reveal) return { client: provider, key: undefined, keyId, applicationId: created.json.id };
  const shown = await provider.request('POST', `/v1/provider/api-keys/${keyId}/reveal`);
  if (shown.status !== 200) throw new Error(`reveal: ${shown.status} ${shown.body}`);
  return { client: provider, key: shown.json.api_key, keyId, applicationId: created.json.id };
}

// The id of a benchmark run the server requested of `machineId`, for a test that posts the agent's
// results itself (the server takes results only for a run it asked for, once: issue 21). The run open
// now if there is one (registering a machine opens one), else one asked for as the provider's re-run
// button does. `client` is signed in as the provider, or carries its API key.
export async function requestedRunId(client, machineId) {
  const r = await client.request('GET', `/v1/provider/machines/${encodeURIComponent(machineId)}/benchmarks`);
  if (r.status !== 200) throw new Error(`benchmark runs: ${r.status} ${r.body}`);
  const open = r.json.runs.find((x) => x.status === 'requested' || x.status === 'delivered');
  if (open) return open.id;
  const asked = await client.request('POST', `/v1/provider/machines/${encodeURIComponent(machineId)}/benchmarks/run`);
  if (asked.status !== 202) throw new Error(`benchmark run request: ${asked.status} ${asked.body}`);
  return asked.json.run_id;
}
