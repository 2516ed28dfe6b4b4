// The scenario language itself: relative times render the clock moved by an offset.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { relativeTime } from '../lib/scenario.mjs';

const at = Date.parse('2031-02-28T23:59:59.750Z');

test('${now} is the clock as RFC 3339 UTC seconds', () => {
  assert.equal(relativeTime('now', at), '2031-02-28T23:59:59Z');
});

test('offsets in seconds, minutes, hours, days and weeks, both ways', () => {
  assert.equal(relativeTime('now+1s', at), '2031-03-01T00:00:00Z');
  assert.equal(relativeTime('now-5m', at), '2031-02-28T23:54:59Z');
  assert.equal(relativeTime('now+2h', at), '2031-03-01T01:59:59Z');
  assert.equal(relativeTime('now+1d', at), '2031-03-01T23:59:59Z');
  assert.equal(relativeTime('now-1w', at), '2031-02-21T23:59:59Z');
});

test('the default clock is the real one', () => {
  const rendered = Date.parse(relativeTime('now-1d'));
  assert.ok(Math.abs(Date.now() - 86_400_000 - rendered) < 2000, relativeTime('now-1d'));
});

test('anything else is not a relative time', () => {
  assert.equal(relativeTime('now+1y', at), null);
  assert.equal(relativeTime('nowish', at), null);
});
