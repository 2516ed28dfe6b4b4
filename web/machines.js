// The machines pages of the dashboard; they register into app.js's `pages`.
// #/machines: every machine of the provider with its GPUs, live figures and a
// 24-hour chart per GPU (15-minute averages), all from the one list request;
// #/machines/ID: one machine (Overview tab) with per-minute charts and events;
// #/machines/ID/benchmarks: its Benchmarks tab (benchmarks.js draws it);
// #/machines/ID/performance: its Performance tab, the reliability score (performance.js draws it).
// The overview pages poll the API while shown, so Online/Offline follow the agent.
'use strict';

const MACHINES_POLL_MS = 5000;
const SVG_NS = 'http://www.w3.org/2000/svg';

function svgEl(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) e.setAttribute(k, String(v));
  for (const c of children.flat()) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function fmtNum(v, unit, digits = 0) {
  return v === null || v === undefined ? '—' : `${Number(v).toFixed(digits)}${unit}`;
}
function fmtVram(mib) {
  return mib ? `${(mib / 1024).toFixed(mib % 1024 ? 1 : 0)} GiB` : '—';
}
function agoText(iso) {
  if (!iso) return 'never';
  const s = Math.max(0, Math.round((Date.now() - new Date(iso).getTime()) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} days ago`;
}

function machineStatusBadge(status) {
  const online = status === 'online';
  return el('span', { class: `badge machine-status ${online ? 'online' : 'offline'}`, 'data-status': status },
    online ? 'Online' : 'Offline');
}

// A 24-hour chart of one GPU's temperature (°C) and utilisation (%), both on a 0–100 scale, from
// averages over `stepMinutes` (1 on the machine page, 15 on the list).
function gpuChart(gpu, series, stepMinutes, nowMs) {
  const W = narrowScreen() ? 360 : 720; const H = 180; const L = 40; const R = 12; const T = 14; const B = 26;
  const from = nowMs - 24 * 3600 * 1000;
  const x = (ms) => L + ((ms - from) / (nowMs - from)) * (W - L - R);
  const y = (v) => T + (1 - Math.min(100, Math.max(0, v)) / 100) * (H - T - B);
  const label = `GPU ${gpu.index} (${gpu.model || gpu.name}): temperature and utilisation over the last 24 hours`;
  const svg = svgEl('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', height: H, role: 'img',
    'aria-label': label, class: 'gpu-chart', preserveAspectRatio: 'none' }, svgEl('title', {}, label));
  for (const v of [0, 50, 100]) {
    svg.append(svgEl('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: '#e4e7ec', 'stroke-width': 1 }),
      svgEl('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#667085' }, String(v)));
  }
  const ticks = W < 720 ? [[24, '−24 h'], [12, '−12 h'], [0, 'now']]
    : [[24, '−24 h'], [18, '−18 h'], [12, '−12 h'], [6, '−6 h'], [0, 'now']];
  for (const [h, txt] of ticks) {
    const xx = x(nowMs - h * 3600 * 1000);
    svg.append(svgEl('line', { x1: xx, x2: xx, y1: T, y2: H - B, stroke: '#f2f4f7', 'stroke-width': 1 }),
      svgEl('text', { x: xx, y: H - 8, 'text-anchor': h === 0 ? 'end' : h === 24 ? 'start' : 'middle',
        'font-size': 11, fill: '#667085' }, txt));
  }
  const lines = [['temperature_c_avg', '#d92d20', 'Temperature (°C)'], ['util_gpu_pct_avg', '#0e7c66', 'Utilisation (%)']];
  for (const [key, color] of lines) {
    // Steps without data break the line, so an outage shows as a gap.
    let d = ''; let prev = null; const dots = [];
    for (const p of series) {
      const at = new Date(p.at).getTime();
      if (p[key] === null || p[key] === undefined || at < from) { prev = null; continue; }
      const joined = prev !== null && at - prev <= 2 * stepMinutes * 60 * 1000;
      d += `${joined ? 'L' : 'M'}${x(at).toFixed(1)},${y(p[key]).toFixed(1)} `;
      if (!joined) dots.push([x(at), y(p[key])]);
      prev = at;
    }
    if (d) svg.append(svgEl('path', { d: d.trim(), fill: 'none', stroke: color, 'stroke-width': 1.5, 'data-series': key }));
    for (const [cx, cy] of dots) svg.append(svgEl('circle', { cx, cy, r: 2, fill: color }));
  }
  const legend = el('ul', { class: 'chart-legend', 'aria-hidden': 'true' },
    lines.map(([, color, name]) => el('li', {}, swatch(color), name)));
  const empty = series.length === 0 ? el('p', { class: 'muted' }, 'No telemetry in the last 24 hours yet.') : '';
  return el('figure', { class: 'gpu-chart-figure' }, svg, legend, empty);
}

function swatch(color) {
  return svgEl('svg', { width: 14, height: 4, viewBox: '0 0 14 4', 'aria-hidden': 'true' },
    svgEl('rect', { width: 14, height: 4, fill: color }));
}

function gpuTable(m) {
  const rows = m.gpus.map((g) => {
    const s = g.latest || {};
    return el('tr', { class: g.present === false ? 'gone' : '' },
      el('th', { scope: 'row' }, `GPU ${g.index}`),
      el('td', {}, g.model || g.name, g.model && g.name !== g.model ? el('div', { class: 'muted small' }, g.name) : ''),
      el('td', {}, fmtVram(g.memory_mib)),
      el('td', {}, g.driver_version || m.driver_version || '—'),
      el('td', {}, g.cuda_version || m.cuda_version || '—'),
      el('td', { 'data-metric': 'temperature' }, fmtNum(s.temperature_c, ' °C')),
      el('td', { 'data-metric': 'power' }, fmtNum(s.power_w, ' W'), s.power_limit_w ? el('span', { class: 'muted' }, ` / ${fmtNum(s.power_limit_w, ' W')}`) : ''),
      el('td', { 'data-metric': 'utilisation' }, fmtNum(s.util_gpu_pct, ' %')),
      el('td', {}, s.error ? el('span', { class: 'badge danger' }, s.error) : g.present === false ? 'removed' : 'ok'));
  });
  return el('table', { class: 'table gpu-table' },
    el('caption', {}, `GPUs of ${m.hostname} (${m.gpus.length})`),
    el('thead', {}, el('tr', {}, ['GPU', 'Model', 'VRAM', 'Driver', 'CUDA', 'Temperature', 'Power', 'Utilisation', 'State']
      .map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, rows));
}

// "Remove machine" on an offline machine, asking first in place; gone from the list once removed (the
// machine's page goes back to the list).
function removeControl(m, detail) {
  const box = el('div', { class: 'remove-machine' });
  const error = el('span', { class: 'form-error', role: 'alert' });
  const idle = () => {
    delete box.dataset.confirming;
    box.replaceChildren(el('button', { type: 'button', class: 'ghost', onclick: ask }, 'Remove machine'));
  };
  const ask = () => {
    box.dataset.confirming = 'true';
    box.replaceChildren(el('span', { class: 'warning' },
      'Remove it from your machines? Its rentals and earnings stay in your history; its agent heard again brings it back.'), ' ',
    el('button', { type: 'button', class: 'danger', onclick: async (ev) => {
      ev.target.disabled = true;
      const r = await api('DELETE', `/v1/provider/machines/${encodeURIComponent(m.id)}`);
      if (!r.ok) {
        error.textContent = r.data && r.data.error ? r.data.error.message : 'It could not be removed; try again.';
        ev.target.disabled = false;
        return;
      }
      delete box.dataset.confirming;
      if (detail) location.hash = '#/machines';
      else box.closest('section.machine').remove();
    } }, 'Yes, remove'), ' ',
    el('button', { type: 'button', class: 'ghost', onclick: idle }, 'Cancel'), ' ', error);
  };
  idle();
  return box;
}

function machineCard(m, { detail = false } = {}) {
  const hid = `machine-${m.id}-h`;
  const nowMs = Date.now();
  // The machine page has the per-minute series; the list has 15-minute averages.
  const telemetry = (g) => (detail ? { step_minutes: 1, points: g.series_24h || [] }
    : g.overview_24h || { step_minutes: 15, points: [] });
  const charts = m.gpus.filter((g) => g.present !== false).map((g) => el('section', { class: 'gpu-chart-section', 'aria-label': `GPU ${g.index} last 24 hours` },
    el('h3', {}, `GPU ${g.index} · ${g.model || g.name} — last 24 hours`,
      detail ? '' : el('span', { class: 'muted small' }, ` (${telemetry(g).step_minutes}-minute averages)`)),
    gpuChart(g, telemetry(g).points, telemetry(g).step_minutes, nowMs)));
  const host = m.host && typeof m.host === 'object' ? m.host : null;
  return el('section', { class: 'card machine', 'aria-labelledby': hid, 'data-machine-id': m.id },
    el('div', { class: 'machine-head' },
      el('h2', { id: hid }, detail ? m.hostname : el('a', { href: `#/machines/${encodeURIComponent(m.id)}` }, m.hostname)),
      machineStatusBadge(m.status),
      m.simulated ? el('span', { class: 'badge sim', title: 'This agent reports simulated GPUs (--simulate); not real hardware.' }, 'Simulated') : ''),
    el('dl', { class: 'facts' },
      el('dt', {}, 'Status'), el('dd', { class: 'machine-status-text' }, m.status === 'online' ? 'Online' : 'Offline'),
      // Whether customers can rent it now, as the marketplace shows it, and if not, why.
      el('dt', {}, 'Marketplace'), el('dd', { class: `offered ${m.offered ? 'yes' : 'no'}` },
        m.offered ? 'Offered to customers' : `Not offered: ${m.not_offered_reason || 'unknown'}`),
      el('dt', {}, 'Last seen'), el('dd', { class: 'last-seen' }, m.last_seen_at ? `${fmtTime(m.last_seen_at)} (${agoText(m.last_seen_at)})` : 'never'),
      el('dt', {}, 'Driver / CUDA'), el('dd', {}, `${m.driver_version || '—'} / ${m.cuda_version || '—'}`),
      el('dt', {}, 'Agent'), el('dd', {}, m.agent_version || '—'),
      host ? [el('dt', {}, 'Host'), el('dd', {}, `${host.cpu_model || ''} · ${host.cpu_cores || '?'} cores · ${fmtVram(host.ram_mib)} RAM · ${host.os || ''}`)] : '',
      el('dt', {}, 'Machine id'), el('dd', {}, el('code', {}, m.id))),
    // The agent said it cannot run a rental (no container engine, no network guard): its GPUs are off the market.
    m.rentals_blocked ? el('p', { class: 'callout rentals-blocked', role: 'status' },
      el('strong', {}, 'Not offered to customers: '), 'the agent cannot run rentals on this machine — ',
      el('span', { class: 'why' }, m.rentals_blocked),
      '. Its GPUs return to the market by themselves once it can; the agent\'s log says more.') : '',
    m.status !== 'online' && !m.removed_at ? removeControl(m, detail) : '',
    m.removed_at ? el('p', { class: 'callout removed', role: 'status' },
      `Removed ${fmtTime(m.removed_at)}: not in your machines, not offered. Its agent heard again brings it back.`) : '',
    scrollBox(gpuTable(m)),
    charts,
    detail && Array.isArray(m.events) && m.events.length ? [el('h3', {}, 'Recent events'),
      scrollBox(el('table', { class: 'table events' }, el('caption', {}, 'Machine events, newest first'),
        el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'When'), el('th', { scope: 'col' }, 'Event'))),
        el('tbody', {}, m.events.slice().sort((a, b) => (a.at < b.at ? 1 : -1)).slice(0, 20)
          .map((e) => el('tr', {}, el('td', {}, fmtTime(e.at)), el('td', {}, e.kind))))))] : '');
}

async function loadMachines(id) {
  if (id) {
    const r = await api('GET', `/v1/provider/machines/${encodeURIComponent(id)}`);
    return r.ok ? { items: [r.data] } : { error: r };
  }
  // One request: the list carries what the cards show, the charts' 15-minute averages included.
  const list = await apiList('/v1/provider/machines');
  return list.ok ? { items: list.data.items } : { error: list };
}

function machinesBody(res, id) {
  if (res.error) {
    const e = res.error.data && res.error.data.error;
    return [el('p', { role: 'alert' }, e ? e.message : 'Could not load your machines.')];
  }
  if (res.items.length === 0) {
    return [el('div', { class: 'callout' }, el('h2', {}, 'No machines yet'),
      el('p', {}, 'Install the agent on a host with NVIDIA GPUs and give it one of your ', el('a', { href: '#/keys' }, 'API keys'), ':'),
      el('pre', {}, el('code', {}, `curl -fsSL ${location.origin}/agent/install.sh | sudo GPUNEX_API_KEY=gpx_... bash`)))];
  }
  const online = res.items.filter((m) => m.status === 'online').length;
  return [id ? '' : el('p', { class: 'muted', role: 'status', id: 'machines-summary' },
    `${res.items.length} machine${res.items.length === 1 ? '' : 's'}, ${online} online. Updated ${clockNow()}.`),
  res.items.map((m) => machineCard(m, { detail: !!id }))];
}

let machinesTimer = null;

const MACHINE_TABS = [['', 'Overview'], ['benchmarks', 'Benchmarks'], ['performance', 'Performance']];

// The tabs of one machine's page; each is its own address, so a link can open any of them.
function machineTabs(id, current) {
  const base = `#/machines/${encodeURIComponent(id)}`;
  return el('nav', { class: 'tabs', 'aria-label': 'Machine' }, MACHINE_TABS.map(([tab, name]) =>
    el('a', { href: tab ? `${base}/${tab}` : base, 'aria-current': tab === current ? 'page' : false }, name)));
}

// #/machines/ID/benchmarks: the machine's benchmark runs, listing state and re-run button.
async function machineBenchmarksTab(id) {
  const r = await api('GET', `/v1/provider/machines/${encodeURIComponent(id)}`);
  if (!r.ok) return notFound(r);
  document.title = `${r.data.hostname} benchmarks — GPUnex`;
  return [el('p', {}, el('a', { href: '#/machines' }, '← All machines')), el('h1', {}, `Machine ${r.data.hostname}`),
    machineTabs(id, 'benchmarks'), await machineBenchmarks(r.data)];
}

// #/machines/ID/performance: the machine's reliability score, its parts, history and what moved it.
async function machinePerformanceTab(id) {
  const r = await api('GET', `/v1/provider/machines/${encodeURIComponent(id)}`);
  if (!r.ok) return notFound(r);
  document.title = `${r.data.hostname} performance — GPUnex`;
  return [el('p', {}, el('a', { href: '#/machines' }, '← All machines')), el('h1', {}, `Machine ${r.data.hostname}`),
    machineTabs(id, 'performance'), await machinePerformance(r.data)];
}

pages.machines = async function machines(id, tab) {
  document.title = id ? 'Machine — GPUnex' : 'Machines — GPUnex';
  if (!state.user) { location.hash = '#/login'; return []; }
  if (!hasRole('provider')) {
    return [el('h1', {}, 'Machines'), el('p', {}, 'Machines are for approved providers. ', el('a', { href: '#/apply' }, 'Apply to Provide GPUs'))];
  }
  if (id && tab === 'benchmarks') return machineBenchmarksTab(id);
  if (id && tab === 'performance') return machinePerformanceTab(id);
  if (id && tab) return notFound({ data: { error: { message: `This machine's page has no "${tab}" tab.` } } });
  const res = await loadMachines(id);
  const body = el('div', { class: 'machines', 'aria-live': 'polite', 'aria-busy': 'false' }, machinesBody(res, id).flat());
  if (machinesTimer) clearInterval(machinesTimer);
  const hash = location.hash;
  machinesTimer = setInterval(async () => {
    if (!body.isConnected || location.hash !== hash) { clearInterval(machinesTimer); machinesTimer = null; return; }
    if (body.querySelector('[data-confirming]')) return;  // a question asked: not redrawn under the user
    const next = await loadMachines(id);
    if (body.isConnected && !body.querySelector('[data-confirming]')) body.replaceChildren(...machinesBody(next, id).flat());
  }, MACHINES_POLL_MS);
  const title = id && res.items && res.items[0] ? `Machine ${res.items[0].hostname}` : 'Machines';
  if (id && res.items && res.items[0]) document.title = `${res.items[0].hostname} — GPUnex`;
  return [id ? el('p', {}, el('a', { href: '#/machines' }, '← All machines')) : '', el('h1', {}, title),
    id && res.items && res.items[0] ? machineTabs(id, '') : '', body];
};
pages.machine = (id) => { location.hash = `#/machines/${encodeURIComponent(id || '')}`; return []; };

// #/fleet (admins): every provider's machines with the fleet's counts, filtered by status; a page of the
// list at a time (GET /v1/admin/machines), with "More" for the next.
pages.fleet = async function fleet(status) {
  document.title = 'Fleet — GPUnex';
  if (!state.user) { location.hash = '#/login'; return []; }
  if (!hasRole('admin')) return [el('h1', {}, 'Fleet'), el('p', {}, 'Only admins see every provider\'s machines.')];
  const filter = status === 'online' || status === 'offline' ? status : '';
  const query = (cursor) => `/v1/admin/machines?limit=100${filter ? `&status=${filter}` : ''}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
  const first = await api('GET', query(null));
  if (!first.ok) {
    return [el('h1', {}, 'Fleet'), el('p', { role: 'alert' }, first.data && first.data.error ? first.data.error.message : 'Could not load the fleet.')];
  }
  const s = first.data.summary;
  const gpusText = (m) => m.gpus.map((g) => `${g.count} × ${g.model}`).join(', ') || 'none';
  const row = (m) => el('tr', { 'data-machine': m.id },
    el('td', { 'data-col': 'machine' }, m.hostname, el('div', { class: 'muted small' }, m.id)),
    el('td', { 'data-col': 'provider' }, m.provider_email),
    el('td', { 'data-col': 'status' }, el('span', { class: `badge ${m.status}` }, m.status === 'online' ? 'Online' : 'Offline'),
      m.simulated ? el('span', { class: 'badge sim' }, 'simulated') : ''),
    el('td', { 'data-col': 'gpus' }, gpusText(m)),
    el('td', { 'data-col': 'listed', class: 'num' }, `${m.gpus_listed}/${m.gpu_count}`),
    el('td', { 'data-col': 'rented', class: 'num' }, String(m.gpus_rented)),
    el('td', { 'data-col': 'last-seen' }, fmtTime(m.last_seen)),
    el('td', { 'data-col': 'note' }, m.rentals_blocked ? `Cannot run rentals: ${m.rentals_blocked}` : ''));
  const tbody = el('tbody', {}, first.data.items.map(row));
  let cursor = first.data.next_cursor;
  const more = el('button', { type: 'button', class: 'ghost', hidden: !cursor, onclick: async () => {
    more.disabled = true;
    const next = await api('GET', query(cursor));
    more.disabled = false;
    if (!next.ok) return;
    tbody.append(...next.data.items.map(row));
    cursor = next.data.next_cursor;
    more.hidden = !cursor;
  } }, 'More');
  const tabs = el('nav', { class: 'tabs', 'aria-label': 'Machines by status' }, [['', 'All'], ['online', 'Online'], ['offline', 'Offline']]
    .map(([v, name]) => el('a', { href: v ? `#/fleet/${v}` : '#/fleet', 'aria-current': v === filter ? 'page' : false }, name)));
  return [el('h1', {}, 'Fleet'),
    el('p', { class: 'muted', role: 'status', id: 'fleet-summary' },
      `${s.machines} machine${s.machines === 1 ? '' : 's'}: ${s.online} online, ${s.offline} offline. ` +
      `${s.gpus} GPU${s.gpus === 1 ? '' : 's'}: ${s.gpus_listed} listed, ${s.gpus_rented} rented. Updated ${clockNow()}.`),
    tabs,
    first.data.items.length
      ? scrollBox(el('table', { class: 'table fleet', 'aria-label': 'Fleet' },
        el('thead', {}, el('tr', {}, ['Machine', 'Provider', 'Status', 'GPUs', 'Listed', 'Rented', 'Last seen', 'Note']
          .map((t) => el('th', { scope: 'col' }, t)))), tbody))
      : el('p', { class: 'empty' }, filter ? `No ${filter} machines.` : 'No machines yet: providers install the agent once approved.'),
    more];
};
