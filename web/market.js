// The market pages of the dashboard; they register into app.js's `pages`.
// #/pricing: a provider's rate per GPU model (with the recommendation and its p25–p75 band),
// each machine's availability schedule (24/7 or weekly windows in an IANA time zone, with a
// weekly grid preview) and maintenance windows. #/market: the public marketplace of offers.
'use strict';

(() => {
  const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];
  const DAY_LABEL = { mon: 'Mon', tue: 'Tue', wed: 'Wed', thu: 'Thu', fri: 'Fri', sat: 'Sat', sun: 'Sun' };
  const CATEGORIES = ['power', 'network', 'disk', 'gpu', 'software', 'other'];
  let seq = 0;
  const uid = (p) => `${p}-${++seq}`;

  // A labelled input with its own error slot; `name` is the API field it stands for.
  function mfield(name, label, type = 'text', extra = {}) {
    const id = uid('mk');
    return el('div', { class: 'field' },
      el('label', { for: id }, label),
      el('input', { id, name, type, 'data-field': name, 'aria-describedby': `${id}-error`, ...extra }),
      el('div', { id: `${id}-error`, class: 'field-error', role: 'alert' }));
  }

  // Shows each invalid field of a server error (error.fields, else error.field) next to the field it
  // names ("windows[0].end", "maintenance[1]", ...), else next to the closest named parent
  // ("windows[0].days[0]" → "windows[0].days"), else under the form; the first gets the focus.
  function fieldError(form, err) {
    form.querySelectorAll('.field-error').forEach((e) => { e.textContent = ''; });
    form.querySelectorAll('[aria-invalid]').forEach((e) => e.removeAttribute('aria-invalid'));
    const general = form.querySelector('.form-error');
    if (general) general.textContent = '';
    if (!err) { if (general) general.textContent = 'Something went wrong; try again.'; return; }
    const parent = (name) => name.replace(/(\.[^.[\]]*|\[\d+\])$/, '');
    const find = (path) => {
      for (let name = path || ''; name; name = parent(name) === name ? '' : parent(name)) {
        const target = form.querySelector(`[data-field="${CSS.escape(name)}"]`);
        if (target) return target;
      }
      return null;
    };
    const fields = Array.isArray(err.fields) && err.fields.length ? err.fields : [{ field: err.field, message: err.message }];
    const elsewhere = [];
    let first = null;
    for (const f of fields) {
      const target = find(f.field);
      if (!target) { elsewhere.push(f.message); continue; }
      target.setAttribute('aria-invalid', 'true');
      first ||= target;
      const slot = target.id && form.querySelector(`#${CSS.escape(target.id)}-error`);
      if (slot) slot.textContent = slot.textContent ? `${slot.textContent} ${f.message}` : f.message;
      else elsewhere.push(f.message);
    }
    if (general) general.textContent = elsewhere.join(' ');
    if (first && first.focus) first.focus();
  }

  // A rate as the API writes it (six decimals), its trailing zeros cut down to cents: 2.50, 0.004. Never
  // rounded: a rate of 0.004 shown as 0.00 would read as free.
  const rate = (s) => String(s).replace(/^(-?\d+\.\d\d\d*?)0*$/, '$1');
  const money = (s) => (s === null || s === undefined ? '—' : `${rate(s)} USDC`);

  // ---------------------------------------------------------------- pricing: rates

  async function priceForm(model, current) {
    const rec = await api('GET', `/v1/provider/price-recommendations?model=${encodeURIComponent(model)}`);
    const input = mfield('usdc_per_gpu_hour', `${model}: USDC per GPU-hour`, 'text',
      { inputmode: 'decimal', value: current ? current.usdc_per_gpu_hour : '', placeholder: rec.ok ? rec.data.recommended : '' });
    // What the provider keeps of each GPU-hour, after the platform's commission.
    const receives = (p) => `; you receive ${p.provider_receives_per_gpu_hour} USDC of it (commission ${p.commission_pct}%)`;
    const status = el('p', { class: 'muted price-status', role: 'status' },
      current ? `Current rate ${money(current.usdc_per_gpu_hour)} since ${fmtTime(current.started_at)}${receives(current)}`
        : 'No rate set: not offered yet.');
    const recNode = rec.ok
      ? el('p', { class: 'recommendation' }, 'Recommended ', el('strong', {}, money(rec.data.recommended)),
        ` (band ${money(rec.data.p25)} – ${money(rec.data.p75)}, ${rec.data.basis} basis, region ${rec.data.region})`,
        ' ', el('button', { type: 'button', class: 'ghost', onclick: () => { form.querySelector('input').value = rate(rec.data.recommended); } }, 'Use'))
      : el('p', { class: 'muted recommendation' },
        rec.data && rec.data.error && rec.data.error.code === 'no_price_basis' ? rec.data.error.message : 'No recommendation available.');
    const form = el('form', { class: 'card price-form', 'aria-label': `Price for ${model}` },
      el('h3', {}, model), input, recNode, status,
      el('div', { class: 'form-error', role: 'alert' }),
      el('button', { type: 'submit' }, `Save ${model} rate`));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const value = form.querySelector('input').value.trim();
      const r = await api('PUT', `/v1/provider/prices/${encodeURIComponent(model)}`, { usdc_per_gpu_hour: value });
      if (!r.ok) { fieldError(form, r.data && r.data.error); return; }
      fieldError(form, null);
      form.querySelector('.form-error').textContent = '';
      status.textContent = `Saved: ${money(r.data.usdc_per_gpu_hour)} per GPU-hour from ${fmtTime(r.data.started_at)}${receives(r.data)}`;
    });
    return form;
  }

  // ---------------------------------------------------------------- pricing: schedules

  // The hours of each local weekday a schedule covers: cells[d][h] (d 0 = Monday).
  function weekGrid(always, windows) {
    const cells = DAYS.map(() => new Array(24).fill(always));
    if (always) return cells;
    const toMin = (s) => { const m = /^(\d{1,2}):(\d{2})$/.exec(s || ''); return m ? Number(m[1]) * 60 + Number(m[2]) : null; };
    for (const w of windows) {
      const s = toMin(w.start); const e = toMin(w.end);
      if (s === null || e === null || s === e) continue;
      for (const day of w.days || []) {
        const d = DAYS.indexOf(day);
        if (d < 0) continue;
        const len = e > s ? e - s : e + 1440 - s;  // a window may cross midnight
        for (let h = 0; h < 24 * 8; h++) {
          const hs = h * 60; const he = hs + 60;
          if (hs < s + len && he > s) cells[(d + Math.floor(h / 24)) % 7][h % 24] = true;
        }
      }
    }
    return cells;
  }

  function gridTable(cells, tz) {
    return el('table', { class: 'week-grid', 'aria-label': `Weekly availability (${tz})` },
      el('thead', {}, el('tr', {}, el('th', {}, ''), [...Array(24).keys()].map((h) => el('th', { scope: 'col' }, String(h).padStart(2, '0'))))),
      el('tbody', {}, DAYS.map((d, i) => el('tr', {}, el('th', { scope: 'row' }, DAY_LABEL[d]),
        cells[i].map((on, h) => el('td', { class: on ? 'on' : 'off', title: `${DAY_LABEL[d]} ${String(h).padStart(2, '0')}:00 ${on ? 'available' : 'off'}`,
          'data-available': on ? 'true' : 'false' }, on ? '■' : ''))))));
  }

  function windowRow(form, w, onChange) {
    const row = el('fieldset', { class: 'window-row' }, el('legend', {}, 'Window'));
    const days = el('div', { class: 'days', 'data-field': '' }, DAYS.map((d) => {
      const id = uid('day');
      return el('span', { class: 'day' }, el('input', { type: 'checkbox', id, value: d, checked: (w.days || []).includes(d) }),
        el('label', { for: id }, DAY_LABEL[d]));
    }));
    row.append(days, mfield('start', 'From', 'time', { value: w.start || '18:00' }), mfield('end', 'Until', 'time', { value: w.end || '08:00' }),
      el('button', { type: 'button', class: 'ghost', onclick: () => { row.remove(); onChange(); } }, 'Remove window'));
    row.addEventListener('change', onChange);
    return row;
  }

  function maintenanceRow(m, onChange) {
    const row = el('fieldset', { class: 'maintenance-row' }, el('legend', {}, 'Maintenance'));
    const catId = uid('cat');
    const kindId = uid('kind');
    const kind = m.recurrence ? (m.recurrence.nth ? 'monthly' : 'weekly') : 'one_off';
    row.append(
      el('div', { class: 'field' }, el('label', { for: catId }, 'Category'),
        el('select', { id: catId, name: 'category' }, CATEGORIES.map((c) => el('option', { value: c, selected: m.category === c }, c)))),
      el('div', { class: 'field' }, el('label', { for: kindId }, 'Kind'),
        el('select', { id: kindId, name: 'kind' },
          el('option', { value: 'one_off', selected: kind === 'one_off' }, 'one-off (UTC)'),
          el('option', { value: 'monthly', selected: kind === 'monthly' }, 'monthly (nth weekday)'),
          el('option', { value: 'weekly', selected: kind === 'weekly' }, 'weekly'))),
      mfield('start', 'Start (2026-03-01T02:00:00Z or 02:00)', 'text', { value: m.start || '' }),
      mfield('end', 'End', 'text', { value: m.end || '' }),
      mfield('nth', 'Nth (monthly: 1–5)', 'number', { value: m.recurrence && m.recurrence.nth ? m.recurrence.nth : '', min: 1, max: 5 }),
      mfield('weekday', 'Weekday(s) (monthly: sun; weekly: sat,sun)', 'text',
        { value: m.recurrence ? (m.recurrence.weekday || (m.recurrence.days || []).join(',')) : '' }),
      mfield('note', 'Note', 'text', { value: m.note || '' }),
      el('button', { type: 'button', class: 'ghost', onclick: () => { row.remove(); onChange(); } }, 'Remove maintenance'));
    return row;
  }

  function renumber(form) {
    form.querySelectorAll('.window-row').forEach((row, i) => {
      row.querySelector('.days').dataset.field = `windows[${i}].days`;
      row.querySelectorAll('.day input').forEach((c, j) => { c.dataset.field = `windows[${i}].days[${j}]`; });
      row.querySelector('[name="start"]').dataset.field = `windows[${i}].start`;
      row.querySelector('[name="end"]').dataset.field = `windows[${i}].end`;
      row.querySelector('legend').textContent = `Window ${i + 1}`;
    });
    form.querySelectorAll('.maintenance-row').forEach((row, i) => {
      for (const n of ['start', 'end', 'nth', 'weekday', 'note']) row.querySelector(`[name="${n}"]`).dataset.field = `maintenance[${i}].${n}`;
      row.querySelector('[name="category"]').dataset.field = `maintenance[${i}].category`;
      row.querySelector('[name="kind"]').dataset.field = `maintenance[${i}].recurrence`;
      row.querySelector('legend').textContent = `Maintenance ${i + 1}`;
      row.querySelector('legend').dataset.field = `maintenance[${i}]`;
      row.querySelector('legend').id = row.querySelector('legend').id || uid('mleg');
    });
  }

  function readSchedule(form) {
    const body = { timezone: form.querySelector('[name="timezone"]').value.trim(), always: form.querySelector('[name="always"]').checked };
    body.windows = body.always ? [] : [...form.querySelectorAll('.window-row')].map((row) => ({
      days: [...row.querySelectorAll('.day input:checked')].map((c) => c.value),
      start: row.querySelector('[name="start"]').value, end: row.querySelector('[name="end"]').value }));
    body.maintenance = [...form.querySelectorAll('.maintenance-row')].map((row) => {
      const v = (n) => row.querySelector(`[name="${n}"]`).value.trim();
      const m = { category: v('category'), start: v('start'), end: v('end') };
      if (v('kind') === 'monthly') m.recurrence = { nth: Number(v('nth')), weekday: v('weekday') };
      if (v('kind') === 'weekly') m.recurrence = { days: v('weekday').split(',').map((s) => s.trim()).filter(Boolean) };
      if (v('note')) m.note = v('note');
      return m;
    });
    return body;
  }

  async function scheduleForm(machine) {
    const r = await api('GET', `/v1/provider/machines/${encodeURIComponent(machine.id)}/schedule`);
    const s = r.ok ? r.data : { timezone: 'UTC', always: true, windows: [], maintenance: [] };
    const name = machine.hostname || machine.id;
    const form = el('form', { class: 'card schedule-form', 'aria-label': `Schedule for ${name}` });
    // The 24-column grid is wider than a phone: it scrolls in its own box (scrollBox's attributes; it is redrawn inside).
    const preview = el('div', { class: 'grid-preview table-scroll', role: 'region', 'aria-label': `Weekly preview for ${name}`, tabindex: '0' });
    const windows = el('div', { class: 'windows' });
    const maint = el('div', { class: 'maintenance' });
    const now = el('p', { class: 'muted schedule-now', role: 'status' });
    const showNow = (d) => {
      now.textContent = d.available_now
        ? `Available now${d.available_until ? ` until ${fmtTime(d.available_until)}` : ''}.`
        : `Not available now${d.next_window_start ? `; next window starts ${fmtTime(d.next_window_start)}` : ''}.`;
    };
    if (r.ok) showNow(s);
    const update = () => {
      renumber(form);
      const b = readSchedule(form);
      windows.hidden = b.always;
      addWin.hidden = b.always;
      preview.replaceChildren(gridTable(weekGrid(b.always, b.windows), b.timezone || 'UTC'));
    };
    const addWin = el('button', { type: 'button', class: 'ghost', onclick: () => { windows.append(windowRow(form, { days: ['mon', 'tue', 'wed', 'thu', 'fri'] }, update)); update(); } }, 'Add window');
    const alwaysId = uid('always');
    form.append(el('h3', {}, `Machine ${name}`), el('p', { class: 'muted' }, machine.id),
      mfield('timezone', 'Time zone (IANA, e.g. Europe/Berlin)', 'text', { value: s.timezone, list: 'tz-list' }),
      el('div', { class: 'field checkbox' }, el('input', { type: 'checkbox', id: alwaysId, name: 'always', 'data-field': 'always', checked: s.always }),
        el('label', { for: alwaysId }, 'Available 24/7')),
      windows, addWin,
      el('h4', {}, 'Weekly preview (local time)'), preview,
      el('h4', {}, 'Maintenance windows'), maint,
      el('button', { type: 'button', class: 'ghost', onclick: () => { maint.append(maintenanceRow({ category: 'power' }, update)); update(); } }, 'Add maintenance window'),
      now,
      el('div', { class: 'form-error', role: 'alert' }),
      el('button', { type: 'submit' }, `Save schedule for ${name}`));
    for (const w of s.windows || []) windows.append(windowRow(form, w, update));
    for (const m of s.maintenance || []) maint.append(maintenanceRow(m, update));
    form.addEventListener('change', update);
    form.addEventListener('input', update);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const res = await api('PUT', `/v1/provider/machines/${encodeURIComponent(machine.id)}/schedule`, readSchedule(form));
      if (!res.ok) { fieldError(form, res.data && res.data.error); return; }
      fieldError(form, null);
      form.querySelector('.form-error').textContent = '';
      showNow(res.data);
      now.textContent = `Schedule saved. ${now.textContent}`;
    });
    update();
    return form;
  }

  pages.pricing = async function pricing() {
    document.title = 'Pricing — GPUnex';
    if (!state.user) { location.hash = '#/login'; return []; }
    if (!hasRole('provider')) return [el('h1', {}, 'Pricing'), el('p', {}, 'Pricing is for approved providers.')];
    const [machines, prices] = await Promise.all([apiList('/v1/provider/machines'), apiList('/v1/provider/prices')]);
    const ms = machines.ok ? machines.data.items : [];
    const current = new Map((prices.ok ? prices.data.items : []).map((p) => [p.model, p]));
    const models = [...new Set([...ms.flatMap((m) => (m.gpus || []).map((g) => g.model)).filter(Boolean), ...current.keys()])].sort();
    const priceForms = await Promise.all(models.map((m) => priceForm(m, current.get(m))));
    const schedForms = await Promise.all(ms.map((m) => scheduleForm(m)));
    const tzs = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
    return [el('h1', {}, 'Pricing'),
      el('section', { 'aria-label': 'Rates' }, el('h2', {}, 'Rates per GPU model'),
        el('p', { class: 'muted' }, 'USDC per GPU-hour; a change applies to new rentals only.'),
        priceForms.length ? el('div', { class: 'price-forms' }, priceForms) : el('p', {}, 'No GPUs yet: connect a machine with the agent.')),
      el('section', { 'aria-label': 'Availability' }, el('h2', {}, 'Availability'),
        el('p', { class: 'muted' }, 'Outside its windows a machine’s GPUs are hidden from the marketplace.'),
        schedForms.length ? schedForms : el('p', {}, 'No machines yet.')),
      el('datalist', { id: 'tz-list' }, tzs.map((t) => el('option', { value: t })))];
  };

  // ---------------------------------------------------------------- marketplace

  function offerCard(o) {
    const ex = o.rank_explanation || {};
    const loc = o.location || {};
    const prior = o.reliability_is_prior || (ex.reliability && ex.reliability.source === 'prior');
    const factor = (k, label, detail) => (ex[k] ? el('li', {}, `${label}: factor ${ex[k].factor}`, detail ? ` (${detail})` : '') : '');
    return el('li', { class: 'card offer', 'data-machine': o.machine_id, 'aria-label': `Offer ${o.model} on ${o.machine_id}` },
      el('div', { class: 'offer-head' },
        el('h2', {}, `${o.gpu_count_available} × ${o.model}`),
        el('span', { class: `badge tier tier-${o.tier}` }, o.tier === 'enterprise' ? 'Enterprise' : 'Community'),
        o.simulated ? el('span', { class: 'badge sim', title: 'Demo mode: simulated GPUs, not real hardware.' }, 'simulated') : '',
        el('span', { class: 'offer-price' }, `${money(o.usdc_per_gpu_hour)}/GPU-h`),
        el('a', { class: 'button rent', href: `#/rent/${encodeURIComponent(o.machine_id)}/${encodeURIComponent(o.model)}`,
          'aria-label': `Rent ${o.model} on ${o.machine_id}` }, 'Rent')),
      el('dl', { class: 'offer-facts' },
        el('dt', {}, 'Performance'), el('dd', { class: 'perf' }, String(o.perf_score)),
        el('dt', {}, 'Reliability'), el('dd', { class: 'reliability' }, `${o.reliability}`, prior ? el('span', { class: 'badge prior', title: 'No history yet: the prior value' }, 'prior') : ''),
        el('dt', {}, 'VRAM'), el('dd', {}, o.vram_gb !== undefined ? `${o.vram_gb} GB` : '—'),
        el('dt', {}, 'Location'), el('dd', {}, [loc.city, loc.country].filter(Boolean).join(', ') + (loc.region ? ` (${loc.region})` : '')),
        el('dt', {}, 'Available until'), el('dd', { class: 'until' }, o.available_until ? fmtTime(o.available_until) : 'no end (24/7)'),
        el('dt', {}, 'Rank'), el('dd', {}, String(o.rank))),
      el('details', { class: 'rank-explanation' }, el('summary', {}, 'Why this rank'),
        el('ul', {},
          factor('reliability', 'Reliability', ex.reliability ? `${ex.reliability.value}, ${ex.reliability.source}` : ''),
          factor('value', 'Value', ex.value ? `${ex.value.perf_per_usdc} perf/USDC vs model median ${ex.value.model_median_perf_per_usdc}` : ''),
          factor('tier', 'Tier', ex.tier ? ex.tier.tier : ''),
          factor('commitment', 'Commitment', ex.commitment ? `${ex.commitment.months} months` : ''),
          el('li', {}, `Rank ${ex.rank !== undefined ? ex.rank : o.rank}`))));
  }

  const FILTERS = [
    ['model', 'Model', 'text', { placeholder: 'H100-SXM' }],
    ['region', 'Region', 'text', { placeholder: 'eu-central' }],
    ['min_vram_gb', 'Min VRAM (GB)', 'number', { min: 0 }],
    ['max_price', 'Max price (USDC/GPU-h)', 'text', { inputmode: 'decimal' }],
    ['min_reliability', 'Min reliability (0–100)', 'number', { min: 0, max: 100 }],
  ];

  pages.market = async function market() {
    document.title = 'Marketplace — GPUnex';
    const results = el('div', { class: 'offers', 'aria-live': 'polite' });
    const tierId = uid('tier');
    const sortId = uid('sort');
    const form = el('form', { class: 'card market-filters', 'aria-label': 'Filters' },
      FILTERS.map(([n, l, t, x]) => mfield(n, l, t, x)),
      el('div', { class: 'field' }, el('label', { for: tierId }, 'Tier'),
        el('select', { id: tierId, name: 'tier', 'data-field': 'tier' }, el('option', { value: '' }, 'any'),
          el('option', { value: 'community' }, 'Community'), el('option', { value: 'enterprise' }, 'Enterprise')),
        el('div', { id: `${tierId}-error`, class: 'field-error', role: 'alert' })),
      el('div', { class: 'field' }, el('label', { for: sortId }, 'Sort by'),
        el('select', { id: sortId, name: 'sort', 'data-field': 'sort' }, el('option', { value: 'rank' }, 'Rank'),
          el('option', { value: 'price' }, 'Price'), el('option', { value: 'perf' }, 'Performance')),
        el('div', { id: `${sortId}-error`, class: 'field-error', role: 'alert' })),
      el('div', { class: 'form-error', role: 'alert' }),
      el('button', { type: 'submit' }, 'Search'));
    const search = async () => {
      const q = new URLSearchParams();
      for (const e of form.querySelectorAll('input, select')) if (e.value.trim()) q.set(e.name, e.value.trim());
      const r = await api('GET', `/v1/marketplace/offers?${q}`);
      if (!r.ok) { fieldError(form, r.data && r.data.error); return; }
      fieldError(form, null);
      form.querySelector('.form-error').textContent = '';
      const items = r.data.items || [];
      results.replaceChildren(el('p', { class: 'muted', id: 'offer-count' }, `${r.data.total ?? items.length} offer${(r.data.total ?? items.length) === 1 ? '' : 's'} available now`),
        items.length ? el('ul', { class: 'offer-list', 'aria-label': 'Offers' }, items.map(offerCard)) : el('p', { class: 'empty' }, 'No offers match.'),
        // A model filter that named no catalog model: say which models exist.
        r.data.known_models ? el('p', { class: 'muted', id: 'known-models' },
          `No GPU model is called "${q.get('model')}". Models: ${r.data.known_models.map((m) => m.id).join(', ')}.`) : '');
    };
    form.addEventListener('submit', (ev) => { ev.preventDefault(); search(); });
    form.querySelector('[name="sort"]').addEventListener('change', search);
    await search();
    return [el('h1', {}, 'Marketplace'), form, results];
  };
})();
