// The review queue: oldest first submission first, whatever order the drafts were
// started in; an application sent back for more information keeps its place when
// resubmitted; age and overdue count from the latest submission (the date its
// applicant was promised), and an application past 3 business days is overdue.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { BACKEND, TestServer, Client } from '../lib/server.mjs';

function sql(server, statement) {
  if (server.db.startsWith('sqlite:')) execFileSync('sqlite3', [server.db.slice(7), statement]);
  else execFileSync('psql', [server.db, '-q', '-c', statement]);
}

function application(name, email) {
  return {
    full_name: name, email, gpus: [{ model: 'L4', count: 1, system_ram_gb: 64, download_gbps: 1, upload_gbps: 1,
      availability: '24/7', location: { city: 'Vienna', country: 'AT', region: 'eu-central' } }],
    ups: false, commitment_months: 3,
  };
}

const DAY_MS = 86400000;

test(`${BACKEND}: review queue order, resubmission keeps its place, age and overdue`, async () => {
  const server = await new TestServer().start();
  try {
    server.createUser('rita@example.com', 'operator-password-1', 'reviewer');
    const rita = new Client(server.url);
    await rita.login('rita@example.com', 'operator-password-1');

    // Drafts started C, B, A; submitted A, B, C.
    const who = {};
    for (const n of ['c', 'b', 'a']) {
      const c = new Client(server.url);
      await c.signupAndLogin(`${n}@example.com`, 'correct-horse-battery', n.toUpperCase());
      const r = await c.request('POST', '/v1/applications', { body: application(n.toUpperCase(), `${n}@example.com`) });
      assert.equal(r.status, 201, r.body);
      who[n] = { client: c, id: r.json.id };
    }
    const submitted = {};
    for (const n of ['a', 'b', 'c']) {
      const r = await who[n].client.request('POST', `/v1/applications/${who[n].id}/submit`);
      assert.equal(r.status, 200, r.body);
      submitted[n] = r.json.submitted_at;
      await sleep(20);
    }
    const queue = async () => {
      const q = await rita.request('GET', '/v1/review/applications?status=submitted');
      assert.equal(q.status, 200, q.body);
      return q.json.items;
    };
    const ids = (items) => items.map((i) => i.id);
    const order = [who.a.id, who.b.id, who.c.id];
    const first = await queue();
    assert.deepEqual(ids(first), order);
    const start = Date.now();
    for (const item of first) {
      assert.equal(item.first_submitted_at, item.submitted_at);
      assert.equal(item.overdue, false);
      assert.equal(item.age_business_days, 0);
      assert.ok(item.age_ms >= 0 && item.age_ms < 60000, `age_ms ${item.age_ms}`);
      assert.ok(Date.parse(item.expected_review_by) >= Date.parse(item.submitted_at) + 3 * DAY_MS);
    }

    // A is sent back, answers and resubmits: it is still first in line.
    const ask = await rita.request('POST', `/v1/review/applications/${who.a.id}/decision`,
      { body: { decision: 'needs_info', note: 'Which city is the L4 in?' } });
    assert.equal(ask.status, 200, ask.body);
    assert.deepEqual(ids(await queue()), [who.b.id, who.c.id]);
    const needsInfo = await rita.request('GET', '/v1/review/applications?status=needs_info');
    assert.deepEqual(ids(needsInfo.json.items), [who.a.id]);
    await sleep(20);
    const again = await who.a.client.request('POST', `/v1/applications/${who.a.id}/submit`);
    assert.equal(again.status, 200, again.body);
    const after = await queue();
    assert.deepEqual(ids(after), order, 'a resubmission keeps the place of its first submission');
    const a = after[0];
    assert.equal(a.first_submitted_at, submitted.a);
    assert.equal(a.submitted_at, again.json.submitted_at);
    assert.ok(Date.parse(a.submitted_at) > Date.parse(submitted.c), 'resubmitted after C was submitted');
    assert.equal(a.expected_review_by, again.json.expected_review_by, 'the promise counts from the resubmission');

    // The reviewer was told of each submission, newest first, with a link to its page in the queue; an
    // applicant is told nothing of the others'.
    const told = (await rita.request('GET', '/v1/notifications?limit=100')).json.items
      .filter((n) => n.kind === 'application_to_review');
    assert.deepEqual(told.map((n) => n.title), ['Application resubmitted by A', 'New provider application from C',
      'New provider application from B', 'New provider application from A']);
    assert.equal(told[0].link, `${server.url}/#/review/${who.a.id}`);
    assert.match(told[0].body, new RegExp(`^Application ${who.a.id} \\(GPUs: .+\\) is waiting for review\\.$`));
    const byA = (await who.a.client.request('GET', '/v1/notifications?limit=100')).json.items;
    assert.ok(!byA.some((n) => n.kind === 'application_to_review'), JSON.stringify(byA));

    // B has waited ten days: overdue, and the age in business days says by how much.
    sql(server, `UPDATE applications SET submitted_at = submitted_at - ${10 * DAY_MS} WHERE id = '${who.b.id}'`);
    const late = await queue();
    assert.deepEqual(ids(late), order, 'the order follows the first submission');
    const b = late.find((i) => i.id === who.b.id);
    assert.equal(b.overdue, true);
    assert.ok(b.age_business_days >= 6 && b.age_business_days <= 8, `age_business_days ${b.age_business_days}`);
    assert.ok(b.age_ms >= 10 * DAY_MS && b.age_ms < 10 * DAY_MS + (Date.now() - start) + 60000, `age_ms ${b.age_ms}`);
    assert.ok(Date.parse(b.expected_review_by) < Date.now());
    for (const i of late.filter((x) => x.id !== who.b.id)) assert.equal(i.overdue, false);
  } finally {
    await server.stop();
  }
});
