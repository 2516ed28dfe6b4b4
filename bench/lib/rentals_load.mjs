// bench/rentals.sh's load: CUSTOMERS customers, each credited by an operator, rent one GPU at a time
// by filters (POST /v1/rentals) as fast as the server answers, all at once, until RENTALS are placed
// or no GPU is free. Prints one JSON object: rentals placed, seconds, rentals per second, latency
// percentiles, and the answers other than 201 by code.
// Usage: node rentals_load.mjs URL ADMIN_EMAIL ADMIN_PASSWORD CUSTOMERS RENTALS MODEL
const [url, adminEmail, adminPassword, customersArg, rentalsArg, model] = process.argv.slice(2);
const CUSTOMERS = Number(customersArg);
const RENTALS = Number(rentalsArg);

async function call(method, path, { token, body } = {}) {
  const headers = { 'Content-Type': 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(url + path, { method, headers, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, json, text };
}

async function login(email, password) {
  const r = await call('POST', '/v1/auth/login', { body: { email, password } });
  if (r.status !== 200) throw new Error(`login ${email}: ${r.status} ${r.text}`);
  return r.json.token;
}

const admin = await login(adminEmail, adminPassword);
const tokens = [];
for (let i = 0; i < CUSTOMERS; i++) {
  const email = `bench-customer-${i}@example.com`;
  const s = await call('POST', '/v1/auth/signup',
    { body: { email, password: 'correct-horse-battery', full_name: `Customer ${i}` } });
  if (s.status !== 201) throw new Error(`signup: ${s.status} ${s.text}`);
  const c = await call('POST', '/v1/admin/credits',
    { token: admin, body: { email, amount: '1000000.00', reference: `bench-${i}` } });
  if (c.status !== 201) throw new Error(`credit: ${c.status} ${c.text}`);
  tokens.push(await login(email, 'correct-horse-battery'));
}

let placed = 0;
let full = false;
const refused = {};
const latencies = [];
const t0 = performance.now();
await Promise.all(tokens.map(async (token) => {
  while (!full && placed < RENTALS) {
    const a = performance.now();
    const r = await call('POST', '/v1/rentals', { token, body: { filters: { model }, gpu_count: 1,
      image: 'docker.io/library/busybox:1.36' } });
    latencies.push(performance.now() - a);
    if (r.status === 201) {
      placed++;
    } else {
      const code = r.json?.error?.code || String(r.status);
      refused[code] = (refused[code] || 0) + 1;
      if (code === 'no_gpus_available') full = true;
      else if (r.status >= 500) throw new Error(`${r.status} ${r.text}`);
    }
  }
}));
const seconds = (performance.now() - t0) / 1000;
latencies.sort((x, y) => x - y);
const pct = (p) => latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)];
console.log(JSON.stringify({ placed, seconds, per_second: placed / seconds, p50_ms: pct(50), p95_ms: pct(95),
  refused }));
