// USDC payouts on Solana (#18), end to end on litesvm behind JSON-RPC (lib/solana_chain.mjs): a
// provider earns from a rental, the clock moves to Monday, the run pays, and the provider's
// associated token account on the SVM holds exactly the payout; the ledger's paid-out sum equals the
// transfers on the chain. A run the hot wallet cannot cover is held and the operator told; a
// keypair file others may read is refused at start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Keypair } from '@solana/web3.js';
import { BACKEND, BIN, TestServer, until } from '../lib/server.mjs';
import { RENTAL_SERVER_ARGS, agentlessMachine, customerWithCredit, earnOnTestClock, midweekStart, storeRows,
  toNextMonday } from '../lib/rentals.mjs';
import { SolanaTestChain, associatedTokenAccount } from '../lib/solana_chain.mjs';
import { gpunex, homeLoggedIn, parseTable } from '../lib/cli.mjs';

const RENT = { image: 'docker.io/library/busybox:1.36', command: ['sleep', '86400'] };
const START = midweekStart();

function keypairFile(keypair, mode) {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'gpunex-hot-')), 'hot.json');
  writeFileSync(file, JSON.stringify([...keypair.secretKey]));
  chmodSync(file, mode);
  return file;
}

// Earns `minutes` of one L40S at 36 USDC/h for the provider, then moves the clock to the next Monday 01:00 UTC.
async function earnThenMonday(server, provider, minutes) {
  await earnOnTestClock(server, provider, minutes, RENT);
  await toNextMonday(server);
}

test(`${BACKEND}: a Monday run pays USDC on Solana; the provider's token account holds exactly the payout`, async () => {
  const hot = Keypair.generate();
  const chain = await new SolanaTestChain({ hotSeed: hot.secretKey.slice(0, 32), usdc: 1_000_000_000n }).start();
  const server = await new TestServer([...RENTAL_SERVER_ARGS, '--test-clock', START, '--enable-test-clock', 'true',
    '--payouts-interval-s', '1', '--payout-min-weekly-micro', '1000000', '--solana-rpc-url', chain.url,
    '--solana-keypair-file', keypairFile(hot, 0o600), '--solana-usdc-mint', chain.mint]).start();
  let provider;
  try {
    provider = await agentlessMachine(server, 'solana-payee@example.com', { gpus: 1, price: '36.00' });
    const wallet = Keypair.generate().publicKey.toBase58();
    const put = await provider.client.request('PUT', '/v1/provider/payout-settings', { body: {
      method: 'solana_usdc', schedule: 'weekly', wallet_address: wallet, password: 'correct-horse-battery' } });
    assert.equal(put.status, 200, put.body);
    await customerWithCredit(server, null);  // the admin client
    await earnThenMonday(server, provider, 10);

    const [paid] = await until('the payout to be paid on chain', async () => {
      const items = (await provider.client.request('GET', '/v1/provider/payouts')).json.items;
      return items.length && items[0].status === 'paid' ? items : null;
    }, 20000);
    assert.equal(paid.amount, '4.800000');
    assert.equal(paid.method, 'solana_usdc');
    assert.equal(paid.solana.confirmation_status, 'finalized');
    assert.match(paid.solana.explorer_url, new RegExp(`/tx/${paid.solana.signature}$`));
    assert.deepEqual(chain.sent, [paid.solana.signature], 'one transaction reached the chain');
    // `gpunex payouts` says where it went and the transaction to look it up by.
    const cli = gpunex(homeLoggedIn(server.url, provider.client.token), ['payouts']);
    assert.equal(cli.code, 0, cli.err);
    const [row] = parseTable(cli.out.slice(cli.out.indexOf('DAY ')));  // WHY is empty: the id falls under it
    assert.deepEqual([row.USDC, row.TO, row.STATUS, row.REFERENCE], ['4.800000', wallet, 'paid',
      `${paid.solana.signature} (finalized)`]);
    assert.ok(cli.out.trimEnd().endsWith(paid.id), cli.out);
    assert.equal(chain.tokenBalance(associatedTokenAccount(wallet, chain.mint)), 4_800_000n);
    assert.equal(chain.tokenBalance(chain.hotTokenAccount), 1_000_000_000n - 4_800_000n);
    const [[out]] = storeRows(server, `SELECT SUM(amount) FROM ledger_entries WHERE account = 'platform:money_out'`);
    assert.equal(Number(out), 4_800_000, 'paid out in the ledger = transferred on the chain');
    assert.equal((await provider.client.request('GET', '/v1/provider/earnings')).json.balance, '0.000000');
    // Later rounds send nothing more.
    await new Promise((r) => setTimeout(r, 2500));
    assert.equal(chain.sent.length, 1);
  } finally {
    if (provider) await provider.agent.stop();
    await server.stop();
    await chain.stop();
  }
});

test(`${BACKEND}: a run the hot wallet cannot cover is held and the operator told; it goes on once topped up`, async () => {
  const hot = Keypair.generate();
  const chain = await new SolanaTestChain({ hotSeed: hot.secretKey.slice(0, 32), usdc: 1_000_000n }).start();
  const server = await new TestServer([...RENTAL_SERVER_ARGS, '--test-clock', START, '--enable-test-clock', 'true',
    '--payouts-interval-s', '1', '--payout-min-weekly-micro', '1000000', '--solana-rpc-url', chain.url,
    '--solana-keypair-file', keypairFile(hot, 0o600), '--solana-usdc-mint', chain.mint]).start();
  let provider;
  try {
    provider = await agentlessMachine(server, 'held-payee@example.com', { gpus: 1, price: '36.00' });
    const wallet = Keypair.generate().publicKey.toBase58();
    await provider.client.request('PUT', '/v1/provider/payout-settings', { body: {
      method: 'solana_usdc', schedule: 'weekly', wallet_address: wallet, password: 'correct-horse-battery' } });
    await customerWithCredit(server, null);
    await earnThenMonday(server, provider, 10);
    const admin = server.adminClient;
    const run = await until('the run to be held', async () => {
      const items = (await admin.request('GET', '/v1/admin/payout-runs')).json.items;
      return items.length && items[0].status === 'held' ? items[0] : null;
    }, 20000);
    assert.match(run.held_reason, /hot wallet holds 1000000 .* needs 4800000/);
    const notes = (await admin.request('GET', '/v1/notifications')).json.items;
    const held = notes.filter((n) => n.kind === 'payout_run_held');
    assert.equal(held.length, 1, JSON.stringify(notes));
    // To the dashboard's Payouts page (#/payouts, where held runs are shown), on this server.
    assert.equal(held[0].link, `${server.url}/#/payouts`);
    assert.deepEqual(chain.sent, []);
    chain.setTokenBalance(chain.hotTokenAccount, hot.publicKey.toBase58(), 100_000_000n);
    await until('the payout to be paid', async () => {
      const items = (await provider.client.request('GET', '/v1/provider/payouts')).json.items;
      return items.length && items[0].status === 'paid' ? items : null;
    }, 20000);
    assert.equal(chain.tokenBalance(associatedTokenAccount(wallet, chain.mint)), 4_800_000n);
    assert.equal((await admin.request('GET', '/v1/admin/payout-runs')).json.items[0].status, 'done', 'every payout of it is final');
  } finally {
    if (provider) await provider.agent.stop();
    await server.stop();
    await chain.stop();
  }
});

test('a hot wallet keypair file that others may read is refused at start', () => {
  const file = keypairFile(Keypair.generate(), 0o644);
  const r = spawnSync(path.join(BIN, 'gpunex-server'), ['--db', 'sqlite::memory:', '--listen', '127.0.0.1:0',
    '--solana-rpc-url', 'http://127.0.0.1:9', '--solana-keypair-file', file], { encoding: 'utf8', timeout: 20000 });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /may be read by others \(mode 644\): chmod 600 it/);
  const none = spawnSync(path.join(BIN, 'gpunex-server'), ['--db', 'sqlite::memory:', '--listen', '127.0.0.1:0',
    '--solana-rpc-url', 'http://127.0.0.1:9'], { encoding: 'utf8', timeout: 20000 });
  assert.notEqual(none.status, 0);
  assert.match(none.stderr, /solana_keypair_file/);
});
