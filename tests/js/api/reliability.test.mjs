// The reliability score over 30 simulated days (issue 17), on the server's settable clock. The test
// posts the agent's heartbeats itself, one in each minute the machine should be up, against a
// schedule in Europe/Berlin that crosses the spring-forward change (29 March 2026); the machine is
// down for two scheduled days, misses a maintenance window declared two days ahead (costs nothing)
// and one declared an hour ahead (counts), and runs a second benchmark 9% slower and thermally
// throttled. Every expected number comes from the small implementation of DESIGN §4 below, written
// here from the formula (minutes from the browser's own time-zone rules, Intl), not from the server's
// C++: each day's score, today's live score, the parts, the recovery time, and the offers' reliability.
import { test } from 'node:test';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, Client, until } from '../lib/server.mjs';
import { approvedProvider, requestedRunId } from '../lib/provider.mjs';

const MIN = 60_000;
const DAY = 86_400_000;
const ZONE = 'Europe/Berlin';
const START = Date.parse('2026-03-09T00:00:00Z');  // a Monday
const DAYS = 30;
const SCHEDULE = {
  timezone: ZONE, always: false,
  windows: [
    { days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat'], start: '12:00', end: '12:30' },
    // Over the skipped hour: 01:30 CET to 03:30 CEST is one hour on 29 March, two hours otherwise.
    { days: ['sun'], start: '01:30', end: '03:30' },
  ],
};
const DOWN_DAYS = [Date.parse('2026-03-17T00:00:00Z'), Date.parse('2026-03-18T00:00:00Z')];
// Declared two days ahead (excused), and an hour ahead (counts): the machine is down in both.
const EARLY = { start: Date.parse('2026-03-12T10:50:00Z'), end: Date.parse('2026-03-12T11:40:00Z'),
  declared: Date.parse('2026-03-10T10:00:00Z') };
const LATE = { start: Date.parse('2026-04-01T09:50:00Z'), end: Date.parse('2026-04-01T10:40:00Z'),
  declared: Date.parse('2026-04-01T09:00:00Z') };
const SLOW_RUN_AT = Date.parse('2026-03-25T13:00:00Z');

// ---- DESIGN §4, independently ----

const wallClock = new Intl.DateTimeFormat('en-GB', { timeZone: ZONE, weekday: 'short', hour: '2-digit',
  minute: '2-digit', hourCycle: 'h23' });
const hhmm = (s) => Number(s.slice(0, 2)) * 60 + Number(s.slice(3, 5));
const scheduledCache = new Map();
// Whether the minute starting at t (UTC ms) is in a window: the wall clock in Berlin, minute by minute.
function scheduled(t) {
  if (scheduledCache.has(t)) return scheduledCache.get(t);
  const p = Object.fromEntries(wallClock.formatToParts(new Date(t)).map((x) => [x.type, x.value]));
  const day = p.weekday.toLowerCase();
  const minute = Number(p.hour) * 60 + Number(p.minute);
  const v = SCHEDULE.windows.some((w) => w.days.includes(day) && minute >= hhmm(w.start) && minute < hhmm(w.end));
  scheduledCache.set(t, v);
  return v;
}
const maintenance = [];  // declared so far: {start, end, declared}
const excused = (t) => maintenance.some((m) => t >= m.start && t < m.end && m.declared <= m.start - 24 * 3600_000);
const counts = (t) => t >= START && scheduled(t) && !excused(t);
const beats = new Set();  // minute starts with a heartbeat
const runs = [];          // {at, stability}

// The score at asOf; endOfDay: the score at the end of asOf's day, the day judged whole.
function model(asOf, { endOfDay = false } = {}) {
  const today = Math.floor(asOf / DAY) * DAY;
  let wp = 0, wc = 0, wr = 0, ws = 0, history = false;
  const perDay = new Map();
  for (let d = START; d <= today; d += DAY) {
    const age = (today - d) / DAY;
    if (age >= 30) continue;
    const w = 0.5 ** (age / 7);
    const end = d === today && !endOfDay ? asOf : d + DAY;
    let counted = 0, present = 0;
    for (let t = d; t + MIN <= end; t += MIN) {
      if (!counts(t)) continue;
      counted++;
      if (beats.has(t)) present++;
    }
    perDay.set(d, { counted, present });
    wc += w * counted;
    wp += w * present;
    for (const r of runs) if (r.at >= d && r.at < end) { wr += w; ws += w * r.stability; }
    if (end === d + DAY && counted > 0) history = true;  // registered at START, a midnight: every day is whole
  }
  const U = wc > 0 ? wp / wc : 1;
  const C = (0 + 5 * 0.95) / (0 + 5);  // no rentals: the prior of 5 pseudo-jobs at 95%
  const S = wr > 0 ? ws / wr : 0.95;
  const formula = 100 * (0.5 * U + 0.3 * C + 0.2 * S);
  return { isNew: !history, score: history ? formula : 90, U, C, S, formula, perDay };
}

// Days until the window's misses cost less than a point, the days ahead perfect.
function recoveryDays(asOf) {
  const today = Math.floor(asOf / DAY) * DAY;
  const formulaWith = (at, clean) => {
    const t = Math.floor(at / DAY) * DAY;
    let wp = 0, wc = 0, wr = 0, ws = 0;
    for (let d = START; d <= t; d += DAY) {
      const age = (t - d) / DAY;
      if (age >= 30) continue;
      const w = 0.5 ** (age / 7);
      const end = d < today ? d + DAY : d === today ? asOf : d + DAY;
      for (let m = d; m + MIN <= end; m += MIN) {
        if (!counts(m)) continue;
        wc += w;
        if (clean || d > today || beats.has(m)) wp += w;
      }
      for (const r of runs) if (r.at >= d && r.at < end) { wr += w; ws += w * (clean ? 1 : r.stability); }
    }
    return 100 * (0.5 * (wc > 0 ? wp / wc : 1) + 0.3 * 0.95 + 0.2 * (wr > 0 ? ws / wr : 0.95));
  };
  for (let k = 0; k <= 30; k++) {
    const at = asOf + k * DAY;
    if (formulaWith(at, true) - formulaWith(at, false) < 1) return k;
  }
  return 30;
}

// ---- the server's side ----

const close = (actual, expected, what, tol = 0.006) =>
  assert.ok(Math.abs(actual - expected) <= tol, `${what}: ${actual}, expected ${expected.toFixed(4)}`);
const dayText = (d) => new Date(d).toISOString().slice(0, 10);

test(`${BACKEND}: reliability over 30 simulated days: DST schedule, two days down, maintenance notice, throttled benchmark`,
  { timeout: 600_000 }, async () => {
    const server = await new TestServer(['--test-clock', new Date(START).toISOString(), '--enable-test-clock', 'true',
      '--reliability-interval-s', '1', '--session-ttl-hours', '8760', '--reliability-alert-below', '90',
      '--mail-poll-interval-ms', '100']).start();
    try {
      server.createUser('root@example.com', 'operator-password-1', 'admin');
      const admin = new Client(server.url);
      await admin.login('root@example.com', 'operator-password-1');
      const setClock = async (t) => {
        const r = await admin.request('POST', '/v1/test/clock', { body: { now: new Date(t).toISOString() } });
        assert.equal(r.status, 200, r.body);
      };
      const provider = await approvedProvider(server, 'rel@example.com', { confirmEmail: true });
      const agent = new Client(server.url);
      agent.token = provider.key;
      const must = async (what, p, status = 200) => {
        const r = await p;
        assert.equal(r.status, status, `${what}: ${r.body}`);
        return r.json;
      };
      const uuid = 'GPU-rel-0';
      const reg = await must('register', agent.request('POST', '/v1/agent/register', { body: {
        protocol_version: 1, agent_version: '0.1.0', machine_fingerprint: `fingerprint-rel-${process.pid}`, simulated: true,
        host: { hostname: 'rel-rig', cpu_model: 'EPYC', cpu_cores: 32, ram_mib: 262144, disk_free_mib: 900000,
          os: 'Debian GNU/Linux 12 (bookworm)', kernel: '6.1.0' },
        gpus: [{ index: 0, uuid, name: 'NVIDIA L40S', model: 'L40S', memory_mib: 46068, driver_version: '550.54.15',
          cuda_version: '12.4', pci_bus_id: '00000000:17:00.0' }],
      } }));
      const machine = reg.machine_id;
      const benchmark = async (factor, telemetry) => must('benchmark', agent.request('POST', '/v1/agent/benchmarks', { body: {
        protocol: 1, machine_id: machine, run_id: await requestedRunId(agent, machine), simulated: true, started_at_ms: 1000, finished_at_ms: 2000,
        gpus: [{ index: 0, uuid, name: 'NVIDIA L40S', ecc_uncorrected: 0, telemetry, results: [
          { key: 'compute.fp16_tensor', status: 'ok', median: 289.64 * factor, samples: [289.64 * factor] },
          { key: 'compute.fp32', status: 'ok', median: 82.44 * factor, samples: [82.44 * factor] },
          { key: 'memory.copy', status: 'ok', median: 760.32 * factor, samples: [760.32 * factor] }] }],
        machine: [] } }));
      await benchmark(1, []);
      runs.push({ at: START, stability: 1 });  // the first run is the GPU's baseline
      const putSchedule = () => must('schedule', provider.client.request('PUT', `/v1/provider/machines/${machine}/schedule`,
        { body: { ...SCHEDULE, maintenance: maintenance.map((m) => ({ category: 'power',
          start: new Date(m.start).toISOString(), end: new Date(m.end).toISOString() })) } }));
      await putSchedule();
      await must('price', provider.client.request('PUT', '/v1/provider/prices/L40S', { body: { usdc_per_gpu_hour: '0.50' } }));

      let seq = 0;
      const heartbeat = (t) => must('heartbeat', agent.request('POST', '/v1/agent/heartbeat', { body: {
        protocol_version: 1, machine_id: machine, seq: ++seq, sent_at: new Date(t).toISOString(), telemetry: [],
        jobs: [] } }));
      const reliability = () => must('reliability', provider.client.request('GET',
        `/v1/provider/machines/${machine}/reliability`));
      const offer = async (query = '') => {
        const r = await must('offers', new Client(server.url).request('GET', `/v1/marketplace/offers?model=L40S${query}`));
        return r.items.find((o) => o.machine_id === machine);
      };

      // What happens besides heartbeats, in time order.
      const actions = [
        { at: EARLY.declared, run: async () => { maintenance.push(EARLY); await putSchedule(); } },
        { at: SLOW_RUN_AT, run: async () => {
          // 9% slower on every figure, and 3 of its 25 samples thermally throttled (hw_thermal_slowdown).
          const telemetry = [...Array(25).keys()].map((i) => ({ at_ms: SLOW_RUN_AT - 60_000 + i * 1000, during: 'compute.fp32',
            clock_event_bits: i < 3 ? 0x40 : 0 }));
          await benchmark(0.91, telemetry);
          runs.push({ at: SLOW_RUN_AT, stability: 0.91 * (1 - 3 / 25) });
        } },
        { at: LATE.declared, run: async () => { maintenance.push(LATE); await putSchedule(); } },
      ];
      const down = (t) => DOWN_DAYS.some((d) => t >= d && t < d + DAY) || (t >= EARLY.start && t < EARLY.end) ||
        (t >= LATE.start && t < LATE.end);

      const live = [];
      let offersChecked = 0;
      for (let d = START; d < START + DAYS * DAY; d += DAY) {
        // This day's heartbeats, 30 s into each scheduled minute it is up, and one at 05:00 UTC, outside
        // the schedule, which counts neither way; the day's other actions in between.
        const minutes = [];
        for (let t = d; t < d + DAY; t += MIN) if (scheduled(t) && !down(t)) minutes.push(t);
        if (!down(d + 5 * 3600_000)) minutes.push(d + 5 * 3600_000);
        const timeline = [...minutes.map((t) => ({ at: t + 30_000, minute: t })),
          ...actions.filter((a) => a.at >= d && a.at < d + DAY)].sort((a, b) => a.at - b.at);
        let upInWindow = 0;
        for (const item of timeline) {
          await setClock(item.at);
          if (item.run) {
            await item.run();
            continue;
          }
          const t = item.minute;
          await heartbeat(item.at);
          beats.add(t);
          if (scheduled(t)) upInWindow++;
          // In the offers once its window is a few minutes up: the first day with the prior, later with its score.
          const checkDay = d === START || d === Date.parse('2026-03-20T00:00:00Z');
          if (checkDay && upInWindow === 6) {
            const expected = model(item.at);
            const o = await until('the worker to publish the score to the offers', async () => {
              const x = await offer();
              return x && x.reliability_is_prior === expected.isNew &&
                Math.abs(x.reliability - Math.round(expected.score * 10) / 10) < 1e-9 ? x : null;
            }, 30000, 200);
            offersChecked++;
            if (expected.isNew) {
              assert.equal(o.reliability, 90, 'a new machine is offered with the prior');
            } else {
              // rank and min_reliability use the real score: a filter just above it hides the offer.
              assert.equal(o.rank_explanation.reliability.source, 'score');
              assert.equal(await offer(`&min_reliability=${o.reliability + 0.5}`), undefined);
              assert.ok(await offer(`&min_reliability=${o.reliability - 0.5}`));
            }
          }
        }
        // The end of the day: the live score (today just begun) and the day's own point in the history.
        await setClock(d + DAY);
        const r = await reliability();
        const now = model(d + DAY);
        const ended = model(d, { endOfDay: true });
        assert.equal(r.is_new, now.isNew, `is_new at the end of ${dayText(d)}`);
        close(r.score, now.score, `score at the end of ${dayText(d)}`);
        const point = r.history.find((h) => h.day === dayText(d));
        assert.ok(point, `a history point for ${dayText(d)}`);
        close(point.score, ended.score, `history score of ${dayText(d)}`);
        assert.equal(point.is_new, ended.isNew, `history is_new of ${dayText(d)}`);
        assert.equal(point.counted_minutes, ended.perDay.get(d).counted, `counted minutes of ${dayText(d)}`);
        assert.equal(point.present_minutes, ended.perDay.get(d).present, `present minutes of ${dayText(d)}`);
        live.push({ day: d, score: r.score, history: point.score });
        if (dayText(d) === '2026-03-18') {
          // Below the alert level (90 here): the provider is told by notification and mail, once.
          assert.ok(r.score < 90);
          const note = await until('the reliability notification', async () => {
            const n = await must('notifications', provider.client.request('GET', '/v1/notifications'));
            return n.items.find((x) => x.kind === 'reliability_low');
          }, 20000, 200);
          assert.match(note.title, new RegExp(`^Reliability of rel-rig \\(${machine}\\) fell to 8\\d\\.\\d$`));
          assert.match(note.body, /^Offline 12:00–12:30 \(30 min\) during scheduled hours: uptime 0\.0% that day\.$/);
          assert.ok(note.link.endsWith(`/#/machines/${machine}/performance`));
          const dir = path.join(server.dir, 'mail');
          const mail = await until('the reliability mail', () => existsSync(dir) && readdirSync(dir)
            .map((f) => readFileSync(path.join(dir, f), 'utf8')).find((t) => /^Subject: GPUnex: Reliability of rel-rig/m.test(t)),
          20000, 100);
          assert.match(mail, /What to do: Keep the machine and its agent running during your scheduled hours/);
          assert.match(mail, /the score recovers in about \d+ days/);
        }
      }

      // The DST day in UTC buckets: Sunday 29 March's window is one hour (00:30-01:30 UTC); after the
      // change Sunday's window starts at 23:30 UTC the Saturday before.
      const final = await reliability();
      const byDay = (s) => final.history.find((h) => h.day === s);
      assert.equal(byDay('2026-03-22').counted_minutes, 120);
      assert.equal(byDay('2026-03-29').counted_minutes, 60);
      assert.equal(byDay('2026-04-04').counted_minutes, 60);
      assert.equal(byDay('2026-04-05').counted_minutes, 90);
      // The early maintenance cost nothing; the late one counted.
      assert.equal(byDay('2026-03-12').excused_minutes, 30);
      assert.equal(byDay('2026-03-12').present_minutes, byDay('2026-03-12').counted_minutes);
      assert.equal(byDay('2026-04-01').excused_minutes, 0);
      assert.equal(byDay('2026-04-01').present_minutes, 0);
      assert.equal(final.history.length, DAYS);
      assert.equal(offersChecked, 2);
      const notes = await must('notifications', provider.client.request('GET', '/v1/notifications'));
      assert.ok(notes.items.filter((x) => x.kind === 'reliability_low').length >= 1);

      // Down two scheduled days: the score drops, then climbs back every day along the formula's curve.
      const at = (s) => live.find((x) => dayText(x.day) === s).history;
      assert.ok(at('2026-03-18') < at('2026-03-16') - 5, 'two days down cost more than 5 points');
      for (let d = Date.parse('2026-03-19T00:00:00Z'); d < Date.parse('2026-03-31T00:00:00Z'); d += DAY) {
        if (d === Date.parse('2026-03-25T00:00:00Z')) continue;  // the throttled benchmark
        assert.ok(at(dayText(d)) > at(dayText(d - DAY)), `recovering on ${dayText(d)}`);
      }

      // The parts and their inputs now, and the recovery time.
      const now = model(START + DAYS * DAY);
      close(final.parts.uptime.value, now.U, 'uptime', 1e-4);
      close(final.parts.job_completion.value, 0.95, 'job completion (the prior)', 1e-9);
      // Figures as a person reads them: 0.95, not 0.9500000000000001.
      assert.equal(final.parts.job_completion.value, 0.95);
      assert.doesNotMatch(JSON.stringify(final), /\d\.\d{7,}/, 'no float noise in the answer');
      close(final.parts.stability.value, now.S, 'stability', 1e-4);
      assert.equal(final.parts.stability.runs, 1, 'the first run left the window; the throttled one is in it');
      assert.equal(final.recovery.days, recoveryDays(START + DAYS * DAY));

      // The events in plain words.
      const texts = final.events.map((e) => e.text);
      assert.ok(texts.some((t) => /^Offline 12:00–12:30 \(30 min\) during scheduled hours, in maintenance declared only 1\.0 h ahead \(24 h notice needed\): uptime 0\.0% that day$/.test(t)),
        texts.join('\n'));
      assert.ok(texts.includes('Benchmark at 91% of baseline, thermally throttled 12% of the run'), texts.join('\n'));
      assert.ok(final.events.every((e) => e.what_to_do.length > 20));
      assert.ok(!final.events.some((e) => e.day === '2026-03-12'), 'maintenance declared ahead is no event');
      // The down days fell out of the window's events only when out of the window (30 days): still here.
      assert.ok(final.events.some((e) => e.day === '2026-03-17' && e.kind === 'offline'));
    } finally {
      await server.stop();
    }
  });
