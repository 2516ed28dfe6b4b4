// A provider's Earnings tab (#/earnings, issue #18), over GET /v1/provider/earnings: this period's
// total (earned and not paid out yet), today, the last 7 and 30 days, a chart of the days (uPlot,
// served by the server from web/package-lock.json), per-GPU and per-model tables, the pending
// payout, CSV export, and the payout history. A date range (#/earnings?from=YYYY-MM-DD&to=YYYY-MM-DD,
// both days included) applies to the chart and the tables; without one the server's default (the
// last 30 days up to now, by the server's clock) is shown.
'use strict';

(() => {
  const DAY_MS = 86400000;
  const usdc = (s) => `${s} USDC`;
  const dayOf = (ms) => new Date(ms).toISOString().slice(0, 10);
  const METHODS = { solana_usdc: 'USDC on Solana', sepa: 'SEPA bank transfer' };

  // The range in the URL: {from, to} as days (to included), or null for the server's default.
  function rangeInUrl() {
    const q = new URLSearchParams(location.hash.split('?')[1] || '');
    const from = q.get('from');
    const to = q.get('to');
    return from || to ? { from: from || '', to: to || '' } : null;
  }

  // The API's query for a range: its `to` is exclusive, so the day after the last one shown.
  function apiRange(range) {
    if (!range) return '';
    const q = new URLSearchParams();
    if (range.from) q.set('from', range.from);
    if (range.to) {
      const end = Date.parse(`${range.to}T00:00:00Z`);
      q.set('to', Number.isNaN(end) ? range.to : dayOf(end + DAY_MS));
    }
    return `&${q}`;
  }

  function summary(e) {
    const card = (id, label, amount, note) => el('section', { class: 'card earn-figure', id, 'aria-label': label },
      el('h2', {}, label), el('p', { class: 'big', 'data-amount': amount }, usdc(amount)),
      note ? el('p', { class: 'muted small' }, note) : '');
    return el('div', { class: 'earn-figures' },
      card('earnings-period', e.pending_payout.schedule === 'monthly' ? 'This month' : 'This week', e.this_period.amount,
        `Since ${fmtTime(e.this_period.from)}, with what running rentals have earned so far.`),
      card('earnings-unpaid', 'Not paid out yet', e.balance, 'Settled since your first earning, or your last payout.'),
      card('earnings-today', 'Today', e.today, 'UTC day, with what running rentals have earned so far.'),
      card('earnings-7d', 'Last 7 days', e.last_7_days),
      card('earnings-30d', 'Last 30 days', e.last_30_days));
  }

  function pendingPayout(p) {
    const method = p.method ? METHODS[p.method] || p.method : null;
    const status = !p.method ? 'Nothing is paid until you choose a payout method.'
      : p.held_reason ? p.held_reason
      : p.above_minimum ? `Above the ${usdc(p.minimum)} minimum: it is paid on ${fmtDate(p.next_date)}.`
      : `Below the ${usdc(p.minimum)} minimum of a ${p.schedule} payout: it waits for a later payout.`;
    return el('section', { class: 'card', id: 'earnings-pending', 'aria-labelledby': 'earnings-pending-h',
      'data-next-date': p.next_date, 'data-amount': p.amount, 'data-method': p.method || '',
      'data-above-minimum': String(p.above_minimum) },
    el('h2', { id: 'earnings-pending-h' }, 'Pending payout'),
    el('dl', { class: 'facts' },
      el('dt', {}, 'Next payout'), el('dd', { id: 'earnings-next-date' }, `${fmtDate(p.next_date)} (${p.schedule})`),
      el('dt', {}, 'Amount so far'), el('dd', { id: 'earnings-pending-amount' }, usdc(p.amount)),
      el('dt', {}, 'Method'), el('dd', { id: 'earnings-method' }, method
        || ['Not chosen yet: ', el('a', { href: '#/earnings', onclick: (ev) => { ev.preventDefault();
          document.getElementById('payout-method').scrollIntoView(); } }, 'set a payout method'), ' to be paid']),
      el('dt', {}, 'Minimum'), el('dd', { id: 'earnings-minimum-status', class: p.above_minimum && p.method && !p.held_reason ? '' : 'warning' }, status)));
  }

  // Daily bars over the range, one x per day (a day without earnings is null: no bar).
  function chart(e, width) {
    const first = Date.parse(`${e.from.slice(0, 10)}T00:00:00Z`);
    const last = Date.parse(`${dayOf(Date.parse(e.to) - 1)}T00:00:00Z`);
    const byDay = new Map(e.groups.map((g) => [g.key, g]));
    const xs = [];
    const ys = [];
    for (let t = first; t <= last; t += DAY_MS) {
      xs.push(t / 1000);
      const g = byDay.get(dayOf(t));
      ys.push(g ? Number(g.total) : null);
    }
    const box = el('div', { class: 'earn-chart', id: 'earnings-chart', role: 'img',
      'aria-label': `USDC earned each day from ${dayOf(first)} to ${dayOf(last)}; the table below lists the same days` });
    if (typeof uPlot !== 'function') {
      box.append(el('p', { class: 'error' }, 'The chart library did not load.'));
      return box;
    }
    const opts = {
      width,
      height: 260,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      // Half a day either side, so the first and last days' bars are whole.
      scales: { x: { time: true, range: () => [first / 1000 - 43200, last / 1000 + 43200] }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.15 : 1] } },
      series: [
        { label: 'Day', value: (u, ts) => (ts === null ? '—' : dayOf(ts * 1000)) },
        { label: 'Earned (USDC)', stroke: '#0e9384', fill: 'rgba(14, 147, 132, 0.55)', width: 1,
          paths: uPlot.paths.bars({ size: [0.7, 60] }), points: { show: false },
          value: (u, v) => (v === null || v === undefined ? '—' : v.toFixed(6)) },
      ],
      axes: [{}, { size: 70, values: (u, vals) => vals.map((v) => v.toFixed(2)) }],
      cursor: { points: { show: false }, drag: { x: false, y: false } },
    };
    box.uplot = new uPlot(opts, [xs, ys], box);
    // Made before the page is in the document: once it is, the chart learns where it is on the
    // screen, so the cursor (and the legend's values) follow the mouse.
    setTimeout(() => box.uplot.syncRect(), 0);
    return box;
  }

  // Where payouts go (GET/PUT /v1/provider/payout-settings): the method in force, a change waiting out
  // its cooling-off period, and the form that changes it, confirmed with the account password.
  function payoutMethod(s) {
    const describe = (c) => `${c.schedule === 'monthly' ? 'Monthly' : 'Weekly'} to ${c.destination_text} `
      + `(${METHODS[c.method] || c.method})`;
    const form = el('form', { class: 'card', id: 'payout-method-form', novalidate: true, 'aria-label': 'Change payout method' },
      el('div', { class: 'field' }, el('label', { for: 'f-method' }, 'Method'),
        el('select', { id: 'f-method', name: 'method', 'aria-describedby': 'f-method-error' },
          Object.entries(METHODS).map(([v, t]) => el('option', { value: v }, t))),
        el('div', { id: 'f-method-error', class: 'field-error', role: 'alert' })),
      el('div', { 'data-method': 'solana_usdc' },
        field('wallet_address', 'Solana wallet address', 'text', { autocomplete: 'off', spellcheck: 'false' })),
      el('div', { 'data-method': 'sepa', hidden: true },
        field('account_holder', 'Account holder', 'text', { autocomplete: 'name' }),
        field('iban', 'IBAN', 'text', { autocomplete: 'off', spellcheck: 'false' }),
        field('bic', 'BIC (optional)', 'text', { autocomplete: 'off' })),
      el('div', { class: 'field' }, el('label', { for: 'f-schedule' }, 'How often'),
        el('select', { id: 'f-schedule', name: 'schedule', 'aria-describedby': 'f-schedule-error' },
          el('option', { value: 'weekly' }, 'Weekly (Mondays)'), el('option', { value: 'monthly' }, 'Monthly')),
        el('div', { id: 'f-schedule-error', class: 'field-error', role: 'alert' })),
      field('password', 'Your password (to confirm)', 'password', { autocomplete: 'current-password' }),
      el('div', { class: 'form-error', role: 'alert' }),
      el('button', { type: 'submit' }, 'Save payout method'));
    const inForce = s.pending || s.current;
    if (inForce) {
      form.elements.method.value = inForce.method;
      form.elements.schedule.value = inForce.schedule;
    }
    const showMethod = () => form.querySelectorAll('[data-method]').forEach((d) => {
      d.hidden = d.dataset.method !== form.elements.method.value;
    });
    form.elements.method.addEventListener('change', showMethod);
    showMethod();
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const f = form.elements;
      const body = { method: f.method.value, schedule: f.schedule.value, password: f.password.value };
      if (body.method === 'solana_usdc') body.wallet_address = f.wallet_address.value.trim();
      else {
        body.account_holder = f.account_holder.value.trim();
        body.iban = f.iban.value;
        if (f.bic.value.trim()) body.bic = f.bic.value.trim();
      }
      const r = await api('PUT', '/v1/provider/payout-settings', body);
      if (!r.ok) return showError(form, r.data && r.data.error);
      state.flash = r.data.pending ? `Payout method saved: it takes effect on ${fmtTime(r.data.pending.effective_at)}.`
        : 'Payout method saved.';
      route();
    });
    return el('section', { id: 'payout-method', 'aria-labelledby': 'payout-method-h' },
      el('h2', { id: 'payout-method-h' }, 'Payout method'),
      el('p', { id: 'payout-method-current' }, s.current ? describe(s.current) : 'None yet: choose where your payouts go.'),
      s.pending ? el('p', { id: 'payout-method-pending', class: 'warning' },
        `From ${fmtTime(s.pending.effective_at)}: ${describe(s.pending)}. A new destination waits this long, `
        + 'so that nobody who took over your session can redirect your money at once.') : '',
      form);
  }

  function groupTable(id, caption, firstColumns, e, cells, empty) {
    if (e.groups.length === 0) return el('p', { class: 'empty', id }, empty);
    return scrollBox(el('table', { class: 'table', id, 'aria-label': caption },
      el('thead', {}, el('tr', {}, [...firstColumns, 'Settled', 'Not settled yet', 'Total (USDC)']
        .map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, e.groups.map((g) => el('tr', { 'data-key': g.key },
        cells(g).map((c, i) => (i === 0 ? el('th', { scope: 'row' }, c) : el('td', {}, c))),
        el('td', { class: 'num' }, g.settled), el('td', { class: 'num' }, g.unsettled),
        el('td', { class: 'num' }, g.total))))));
  }

  function rangeForm(e, range, error) {
    const input = (name, label, value) => el('div', { class: 'field' },
      el('label', { for: `earnings-${name}` }, label),
      el('input', { id: `earnings-${name}`, name, type: 'date', value, 'aria-describedby': `earnings-${name}-error` }),
      el('div', { id: `earnings-${name}-error`, class: 'field-error', role: 'alert' }));
    const from = range ? range.from : e ? e.from.slice(0, 10) : '';
    const to = range ? range.to : e ? dayOf(Date.parse(e.to) - 1) : '';
    const form = el('form', { class: 'earn-range', 'aria-label': 'Date range', novalidate: true },
      input('from', 'From', from), input('to', 'To (included)', to),
      el('button', { type: 'submit' }, 'Show'),
      el('a', { href: '#/earnings', class: 'button ghost' }, 'Last 30 days'),
      el('div', { class: 'form-error', role: 'alert' }));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const q = new URLSearchParams({ from: form.elements.from.value, to: form.elements.to.value });
      location.hash = `#/earnings?${q}`;
    });
    if (error) {
      const f = error.field === 'to' ? 'to' : error.field === 'from' ? 'from' : null;
      if (f) {
        form.elements[f].setAttribute('aria-invalid', 'true');
        form.querySelector(`#earnings-${f}-error`).textContent = error.message;
      } else {
        form.querySelector('.form-error').textContent = error.message;
      }
    }
    return form;
  }

  function csvLinks(range) {
    const link = (by, text) => el('a', { href: `/v1/provider/earnings?group_by=${by}${apiRange(range)}&format=csv`,
      download: '', class: 'button ghost', id: `earnings-csv-${by}` }, text);
    return el('p', { class: 'actions earn-csv' }, 'Export CSV: ', link('day', 'by day'), link('gpu', 'by GPU'),
      link('model', 'by model'));
  }

  // Payout history: filled by the payouts page (window.earningsPayoutHistory, an async function
  // answering the section's nodes) once payout runs exist; until then it says there are none.
  async function payoutHistory() {
    const section = el('section', { id: 'payout-history', 'aria-labelledby': 'payout-history-h' },
      el('h2', { id: 'payout-history-h' }, 'Payout history'));
    if (typeof window.earningsPayoutHistory === 'function') {
      section.append(...await window.earningsPayoutHistory());
    } else {
      section.append(el('p', { class: 'empty' }, 'No payouts yet.'));
    }
    return section;
  }

  pages.earnings = async function earnings() {
    document.title = 'Earnings · GPUnex';
    if (!state.user) { location.hash = '#/login'; return []; }
    if (!state.user.roles.includes('provider')) {
      return [el('h1', {}, 'Earnings'), el('p', {}, 'Earnings are for providers: apply to provide GPUs on the Roles page.')];
    }
    const range = rangeInUrl();
    const q = apiRange(range);
    const [day, gpu, model, machines, settings] = await Promise.all([
      api('GET', `/v1/provider/earnings?group_by=day${q}`), api('GET', `/v1/provider/earnings?group_by=gpu${q}`),
      api('GET', `/v1/provider/earnings?group_by=model${q}`), apiList('/v1/provider/machines'),
      api('GET', '/v1/provider/payout-settings')]);
    if (!day.ok) {
      const err = day.data && day.data.error;
      if (err && (err.field === 'from' || err.field === 'to')) {
        return [el('h1', {}, 'Earnings'), rangeForm(null, range, err)];
      }
      return [el('h1', {}, 'Earnings'), el('p', { class: 'error' }, 'Your earnings could not be loaded; try again.')];
    }
    const e = day.data;
    // Each GPU's model and machine, from the machines list (a GPU no longer there shows only its id).
    const gpus = new Map();
    if (machines.ok) {
      for (const m of machines.data.items) for (const g of m.gpus || []) gpus.set(g.uuid, { model: g.model, machine: m.id });
    }
    // The chart fills <main>'s width, less its box's padding and border (18 px).
    const main = document.getElementById('main');
    const style = getComputedStyle(main);
    const inner = main.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const width = Math.max(280, Math.min(1100, Math.floor(inner) - 18));
    const lastDay = dayOf(Date.parse(e.to) - 1);
    return [
      el('h1', {}, 'Earnings'),
      summary(e),
      pendingPayout(e.pending_payout),
      settings.ok ? payoutMethod(settings.data) : el('p', { class: 'error' }, 'Your payout method could not be loaded.'),
      el('h2', {}, `From ${fmtDate(e.from)} to ${fmtDate(`${lastDay}T00:00:00Z`)}`),
      rangeForm(e, range, null),
      el('p', { class: 'muted', id: 'earnings-range-total', 'data-total': e.total },
        `${usdc(e.total)} in this range: ${usdc(e.settled)} settled, ${usdc(e.unsettled)} not settled yet ` +
        '(running rentals, settled when they end or at the next settlement).'),
      el('figure', { class: 'earn-figure-chart' }, chart(e, width),
        el('figcaption', { class: 'muted small' }, 'USDC earned each UTC day; hover a bar for its amount.')),
      csvLinks(range),
      el('h2', {}, 'Per day'),
      groupTable('earnings-days', 'Earnings per day', ['Day'], e, (g) => [g.key], 'No earnings in this range.'),
      el('h2', {}, 'Per GPU'),
      gpu.ok ? groupTable('earnings-gpus', 'Earnings per GPU', ['GPU', 'Model', 'Machine'], gpu.data,
        (g) => [g.key, (gpus.get(g.key) || {}).model || '—', (gpus.get(g.key) || {}).machine || '—'],
        'No earnings in this range.') : el('p', { class: 'error' }, 'Could not load the GPUs.'),
      el('h2', {}, 'Per model'),
      model.ok ? groupTable('earnings-models', 'Earnings per model', ['Model'], model.data, (g) => [g.key],
        'No earnings in this range.') : el('p', { class: 'error' }, 'Could not load the models.'),
      await payoutHistory(),
    ];
  };
})();
