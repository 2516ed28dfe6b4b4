// A machine's Performance tab (#/machines/ID/performance, machines.js): its reliability score
// (DESIGN §4) from GET /v1/provider/machines/ID/reliability: the score (or "new" with the prior),
// the three parts with what went into each, a 30-day chart with a point per day, the events that
// moved it in plain words with what to do, and how long until it recovers.
// The CSP forbids inline styles, so every size is an SVG attribute.
'use strict';

(() => {
  const SVG_NS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs = {}, ...children) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined && v !== false) e.setAttribute(k, String(v));
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === '') continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  const pct = (v, digits = 1) => `${(v * 100).toFixed(digits)}%`;
  const score1 = (v) => Number(v).toFixed(1);
  const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;
  const dayLabel = (d) => new Date(`${d}T00:00:00Z`).toLocaleDateString('en-GB', { day: 'numeric', month: 'short', timeZone: 'UTC' });

  function headline(r) {
    if (r.is_new) {
      return el('div', { class: 'rel-headline' },
        el('p', { class: 'rel-score', id: 'performance-score', 'data-score': r.score }, score1(r.score),
          el('span', { class: 'badge prior' }, 'new')),
        el('p', {}, `No whole day of history yet: the marketplace uses the prior ${score1(r.prior)} until the machine's ` +
          'first whole UTC day inside its schedule has passed.'));
    }
    const low = r.score < r.alert_below;
    return el('div', { class: 'rel-headline' },
      el('p', { class: `rel-score${low ? ' low' : ''}`, id: 'performance-score', 'data-score': r.score }, score1(r.score),
        el('span', { class: 'muted rel-of' }, ' / 100')),
      el('p', { class: 'muted' }, `Reliability over the last ${r.window.days} days (${dayLabel(r.window.from)} – ` +
        `${dayLabel(r.window.to)}), each day weighing half as much every ${r.window.half_life_days} days. ` +
        'It ranks your offers in the marketplace and decides which machines the scheduler picks.'),
      low ? el('p', { class: 'callout danger', role: 'status' }, `Below ${r.alert_below}: customers filtering on reliability may not see this machine.`) : '');
  }

  function parts(r) {
    const u = r.parts.uptime; const j = r.parts.job_completion; const s = r.parts.stability;
    const card = (key, name, part, lines) => el('section', { class: 'card rel-part', 'data-part': key },
      el('h3', {}, name, el('span', { class: 'muted rel-weight' }, ` · weight ${Math.round(part.weight * 100)}%`)),
      el('p', { class: 'rel-part-value', 'data-value': part.value }, pct(part.value)),
      lines.map((t) => el('p', { class: 'muted small' }, t)));
    return el('div', { class: 'rel-parts' },
      card('uptime', 'Uptime against the schedule', u, [
        `${u.present_minutes} of ${u.counted_minutes} scheduled minutes with a heartbeat.`,
        u.excused_minutes ? `${u.excused_minutes} minutes of maintenance declared a day ahead did not count.` : '',
        'Minutes outside your schedule never count.'].filter(Boolean)),
      card('job_completion', 'Job completion', j, [
        j.jobs === 0 ? 'No rental ended in the window.' :
          `${plural(j.jobs, 'rental', 'rentals')} ended, ${j.provider_side} on your side (GPU or host failure, agent lost, stopped by you).`,
        `Starts from ${j.prior_jobs} pseudo-rentals at ${pct(j.prior_rate, 0)}, so one rental does not swing it.`]),
      card('stability', 'Benchmark stability', s, [
        s.is_prior ? `No benchmark run in the window: ${pct(s.prior, 0)} until one runs.` :
          `${plural(s.runs, 'benchmark run', 'benchmark runs')} against each GPU's first run, lowered by thermal or power throttling.`]));
  }

  // The score at the end of each day, one point per day; new days (the prior) hollow.
  function chart(r) {
    const hist = r.history;
    const W = narrowScreen() ? 360 : 720; const H = 220; const L = 40; const R = 14; const T = 14; const B = 30;
    const lowest = Math.min(r.alert_below, ...hist.map((h) => h.score));
    const floor = Math.max(0, Math.floor((lowest - 5) / 10) * 10);
    const n = Math.max(hist.length, 2);
    const x = (i) => L + (i / (n - 1)) * (W - L - R);
    const y = (v) => T + (1 - (Math.min(100, Math.max(floor, v)) - floor) / (100 - floor)) * (H - T - B);
    const label = `Reliability score at the end of each of the last ${hist.length} days`;
    const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', height: H, role: 'img', 'aria-label': label,
      class: 'rel-chart', preserveAspectRatio: 'none' }, svg('title', {}, label));
    for (let v = floor; v <= 100; v += floor >= 80 ? 5 : 10) {
      g.append(svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), class: 'rel-grid' }),
        svg('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'rel-axis' }, String(v)));
    }
    g.append(svg('line', { x1: L, x2: W - R, y1: y(r.alert_below), y2: y(r.alert_below), class: 'rel-alert' },
      svg('title', {}, `Alert level ${r.alert_below}`)));
    const every = Math.ceil(hist.length / (W < 720 ? 4 : 8));
    hist.forEach((h, i) => {
      if (i % every === 0 || i === hist.length - 1) {
        g.append(svg('text', { x: x(i), y: H - 10, 'text-anchor': i === 0 ? 'start' : i === hist.length - 1 ? 'end' : 'middle',
          class: 'rel-axis' }, dayLabel(h.day)));
      }
    });
    if (hist.length > 1) {
      g.append(svg('path', { class: 'rel-line', d: hist.map((h, i) => `${i ? 'L' : 'M'}${x(i).toFixed(1)},${y(h.score).toFixed(1)}`).join(' ') }));
    }
    hist.forEach((h, i) => {
      g.append(svg('circle', { cx: x(i).toFixed(1), cy: y(h.score).toFixed(1), r: 3.5,
        class: `rel-point${h.is_new ? ' new' : ''}${h.partial ? ' partial' : ''}`, 'data-day': h.day, 'data-score': h.score },
      svg('title', {}, `${dayLabel(h.day)}: ${score1(h.score)}${h.is_new ? ' (new: the prior)' : ''}` +
        `${h.partial ? ' (today, so far)' : ''}; uptime that day ${pct(h.day_uptime)} of ${h.counted_minutes} scheduled minutes`)));
    });
    return el('figure', { class: 'rel-chart-figure' }, g,
      el('figcaption', { class: 'muted small' }, 'Score at the end of each day; the dashed line is the alert level.'));
  }

  function events(r) {
    if (r.events.length === 0) {
      return el('p', { class: 'muted', id: 'performance-events' }, 'Nothing lowered the score in the last ' +
        `${r.window.days} days.`);
    }
    return scrollBox(el('table', { class: 'table rel-events', id: 'performance-events' },
      el('caption', {}, 'What moved the score, newest first'),
      el('thead', {}, el('tr', {}, ['When', 'What happened', 'Cost now', 'What to do'].map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, r.events.map((e) => el('tr', { 'data-kind': e.kind },
        el('td', {}, fmtTime(e.at)),
        el('td', { class: 'rel-event-text' }, e.text),
        el('td', { class: 'rel-points' }, `−${e.points.toFixed(2)}`),
        el('td', { class: 'small' }, e.what_to_do))))));
  }

  function recovery(r) {
    const rec = r.recovery;
    const text = rec.days === 0
      ? 'Nothing in the window costs a point any more: the score is as high as the last 30 days allow.'
      : `If nothing else goes wrong, the score recovers in ${plural(rec.days, 'day', 'days')} (by ${dayLabel(rec.by)}): ` +
        `what happened costs ${rec.points_lost.toFixed(1)} points now, and every good day weighs more than the old ones.`;
    return el('p', { class: 'rel-recovery', id: 'performance-recovery', 'data-days': rec.days }, text);
  }

  // The Performance tab's body for a machine (the machine's JSON from GET /v1/provider/machines/ID).
  window.machinePerformance = async function machinePerformance(machine) {
    const r = await api('GET', `/v1/provider/machines/${encodeURIComponent(machine.id)}/reliability`);
    if (!r.ok) {
      const e = r.data && r.data.error;
      return el('p', { role: 'alert' }, e ? e.message : 'Could not load the reliability of this machine.');
    }
    const data = r.data;
    return el('section', { class: 'rel', 'aria-label': 'Reliability', 'data-machine-id': machine.id },
      headline(data), data.is_new ? '' : recovery(data), parts(data),
      el('h2', {}, 'Last 30 days'), chart(data),
      el('h2', {}, 'What moved it'), events(data));
  };
})();
