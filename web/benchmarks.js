// The benchmarks pages of the dashboard; they register into app.js's `pages`.
// #/benchmarks, and each machine's Benchmarks tab (#/machines/ID/benchmarks): per machine
// and GPU, the latest run against the model's reference (bars), the performance score's
// history (a uPlot line chart), the listing state with the delist reason and recommendation,
// the checks of its figures (challenges, telemetry, spot checks), and the rate-limited "Re-run
// benchmarks" button.
// The CSP forbids inline styles, so every size of the bars is an SVG attribute.
'use strict';

(() => {
  const SVG_NS = 'http://www.w3.org/2000/svg';

  function svg(tag, attrs = {}, ...children) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (v !== null && v !== undefined && v !== false) e.setAttribute(k, String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === '') continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  // The agent's metric keys (src/core/benchmark.cpp): label and unit.
  const METRICS = {
    'compute.fp32': ['FP32 throughput', 'TFLOP/s'],
    'compute.fp16': ['FP16 throughput', 'TFLOP/s'],
    'compute.fp16_tensor': ['FP16 tensor throughput', 'TFLOP/s'],
    'compute.bf16_tensor': ['BF16 tensor throughput', 'TFLOP/s'],
    'compute.fp8_tensor': ['FP8 tensor throughput', 'TFLOP/s'],
    'memory.read': ['GPU memory read bandwidth', 'GB/s'],
    'memory.write': ['GPU memory write bandwidth', 'GB/s'],
    'memory.copy': ['GPU memory copy bandwidth', 'GB/s'],
    'host_link.h2d': ['Host-to-device bandwidth', 'GB/s'],
    'host_link.d2h': ['Device-to-host bandwidth', 'GB/s'],
    'storage.seq_write': ['Disk sequential write', 'MB/s'],
    'storage.seq_read': ['Disk sequential read', 'MB/s'],
    'storage.rand_read_4k': ['Disk random 4 KiB reads', 'IOPS'],
    'network.latency_p50': ['Latency to the platform, median', 'ms'],
    'network.latency_p99': ['Latency to the platform, p99', 'ms'],
    'network.download': ['Download', 'Mbit/s'],
    'network.upload': ['Upload', 'Mbit/s'],
  };
  const metricLabel = (k) => (METRICS[k] ? METRICS[k][0] : k);
  const metricUnit = (k) => (METRICS[k] ? METRICS[k][1] : '');

  const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const fmtNum = (v) => (v === null ? '—' : v >= 100 ? v.toFixed(0) : v.toFixed(2));
  const fmtMs = (ms) => (ms ? fmtTime(new Date(ms).toISOString()) : '—');

  const REASONS = {
    first_registration: 'first registration', provider_request: 'your re-run request', scheduled: 'scheduled',
  };

  // One row per metric with a reference: measured / reference as a horizontal bar,
  // the reference drawn as a line at 100%. On a phone each label sits above its bar.
  function barChart(gpu) {
    const latest = gpu.latest;
    const failing = new Set((latest.failures || []).map((f) => f.metric));
    const rows = Object.keys(latest.expected || {})
      .map((k) => ({ key: k, measured: num(latest.figures[k]), expected: num(latest.expected[k]) }))
      .filter((r) => r.measured !== null && r.expected !== null && r.expected > 0)
      .map((r) => ({ ...r, ratio: r.measured / r.expected }));
    if (rows.length === 0) return el('p', { class: 'muted' }, 'No figures with a reference in the latest run.');
    const stacked = narrowScreen();
    const labelW = stacked ? 0 : 230; const barW = stacked ? 260 : 420; const top = 22;
    const rowH = stacked ? 40 : 28; const barY = stacked ? 18 : 4; const labelY = stacked ? 13 : 17;
    const scale = Math.max(1.25, ...rows.map((r) => r.ratio)) * 1.05;
    const x = (ratio) => labelW + Math.max(0, Math.min(ratio, scale)) / scale * barW;
    const height = top + rows.length * rowH + 6;
    const width = labelW + barW + 70;
    const chart = svg('svg', {
      class: 'bench-bars', viewBox: `0 0 ${width} ${height}`, width, height, role: 'img',
      'aria-label': `GPU ${gpu.index}: latest run against the reference`,
    },
    svg('text', { x: x(1), y: 12, class: 'bench-axis', 'text-anchor': 'middle' }, 'reference'),
    rows.map((r, i) => {
      const y = top + i * rowH;
      const cls = failing.has(r.key) ? 'bench-bar fail' : r.ratio < 1 ? 'bench-bar low' : 'bench-bar ok';
      return svg('g', { 'data-metric': r.key },
        svg('title', {}, `${metricLabel(r.key)}: ${fmtNum(r.measured)} of ${fmtNum(r.expected)} ${metricUnit(r.key)} ` +
          `(ratio ${r.ratio.toFixed(2)})`),
        svg('text', { x: 0, y: y + labelY, class: 'bench-label' }, metricLabel(r.key)),
        svg('rect', { x: labelW, y: y + barY, width: barW, height: 18, class: 'bench-track' }),
        svg('rect', { x: labelW, y: y + barY, width: (x(r.ratio) - labelW).toFixed(1), height: 18, class: cls }),
        svg('text', { x: labelW + barW + 8, y: y + barY + 13, class: 'bench-value' }, `${(r.ratio * 100).toFixed(0)}%`));
    }),
    svg('line', { x1: x(1), x2: x(1), y1: top - 2, y2: height - 4, class: 'bench-ref' }));

    const table = el('table', { class: 'table bench-table', 'aria-label': `GPU ${gpu.index}: figures` },
      el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Metric'), el('th', { scope: 'col' }, 'Measured'),
        el('th', { scope: 'col' }, 'Reference'), el('th', { scope: 'col' }, 'Ratio'))),
      el('tbody', {}, rows.map((r) => el('tr', { class: failing.has(r.key) ? 'fail' : '' },
        el('td', {}, metricLabel(r.key)),
        el('td', {}, `${fmtNum(r.measured)} ${metricUnit(r.key)}`),
        el('td', {}, `${fmtNum(r.expected)} ${metricUnit(r.key)}`),
        el('td', {}, r.ratio.toFixed(2))))));
    return el('div', { class: 'bench-latest' }, el('div', { class: 'bench-chart' }, chart), scrollBox(table));
  }

  // The performance score over time, oldest on the left: a uPlot line with a point per scored run
  // (hover one for its time and score in the legend).
  function historyChart(gpu) {
    const pts = (gpu.history || []).filter((h) => num(h.perf_score) !== null).slice().reverse();
    if (pts.length === 0) return el('p', { class: 'muted' }, 'No performance score yet.');
    const box = el('div', { class: 'bench-history', role: 'img',
      'aria-label': `GPU ${gpu.index}: performance score history, ${pts.length} run(s), latest ${fmtNum(pts[pts.length - 1].perf_score)}` });
    if (typeof uPlot !== 'function') {
      box.append(el('p', { class: 'error' }, 'The chart library did not load.'));
      return box;
    }
    const xs = pts.map((p) => p.at_ms / 1000);
    const ys = pts.map((p) => p.perf_score);
    const opts = {
      width: narrowScreen() ? 300 : 640,
      height: 180,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      // The runs' span; one run has none of its own: an hour either side.
      scales: { x: { time: true, range: () => (xs.length === 1 ? [xs[0] - 3600, xs[0] + 3600] : [xs[0], xs[xs.length - 1]]) },
        y: { range: (u, min, max) => [0, max > 0 ? max * 1.15 : 1] } },
      series: [
        { label: 'Run', value: (u, ts) => (ts === null ? '—' : fmtMs(ts * 1000)) },
        { label: 'Score', stroke: '#0e9384', width: 2, points: { show: true, size: 8, fill: '#0e9384' },
          value: (u, v) => (v === null || v === undefined ? '—' : fmtNum(v)) },
      ],
      axes: [{}, { size: 50 }],
      cursor: { drag: { x: false, y: false } },
    };
    box.uplot = new uPlot(opts, [xs, ys], box);
    setTimeout(() => box.uplot.syncRect(), 0);
    return box;
  }

  function listingBadge(gpu) {
    if (!gpu.benchmarked) return el('span', { class: 'badge sim' }, 'not benchmarked yet');
    return gpu.listed ? el('span', { class: 'badge status-approved' }, 'Listed')
      : el('span', { class: 'badge danger' }, 'Delisted');
  }

  const CHECK_NAMES = { gemm: 'GEMM', vram: 'VRAM', telemetry: 'Telemetry' };
  const CHECK_STATUS = { passed: 'Passed', wrong: 'Failed: wrong answer', late: 'Failed: late',
    unanswered: 'Failed: unanswered', issued: 'Waiting for the answer', filled: 'Waiting for the digests' };

  // The checks of the figures (issue 21): each run's GEMM, VRAM and telemetry checks and the spot checks
  // since, for this GPU, newest first, as GET …/benchmarks lists them.
  function checksTable(gpu, runs) {
    const checks = runs.flatMap((run) => (run.challenges || []).filter((c) => c.gpu_uuid === gpu.uuid))
      .sort((a, b) => b.issued_at_ms - a.issued_at_ms || (a.id < b.id ? -1 : 1)).slice(0, 12);
    if (checks.length === 0) return el('p', { class: 'muted' }, 'No checks yet: they come with each benchmark run.');
    return el('table', { class: 'bench-checks', 'aria-label': `GPU ${gpu.index} checks` },
      el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Check'), el('th', { scope: 'col' }, 'When'),
        el('th', { scope: 'col' }, 'Outcome'), el('th', { scope: 'col' }, 'Detail'))),
      el('tbody', {}, ...checks.map((c) => el('tr', { 'data-status': c.status, 'data-kind': c.kind },
        el('td', {}, `${CHECK_NAMES[c.kind] || c.kind} ${c.kind === 'telemetry' ? 'check' : c.origin === 'spot' ? 'spot check' : 'challenge'}`),
        el('td', {}, fmtMs(c.issued_at_ms)),
        el('td', { class: c.status === 'passed' ? 'ok' : ['issued', 'filled'].includes(c.status) ? 'muted' : 'danger' },
          CHECK_STATUS[c.status] || c.status),
        el('td', {}, c.result || '')))));
  }

  function gpuCard(machine, gpu, runs) {
    const title = `GPU ${gpu.index} · ${gpu.model || gpu.name}`;
    const hid = `bench-${machine.id}-${gpu.index}`;
    return el('section', { class: 'card bench-gpu', 'aria-labelledby': hid },
      el('h3', { id: hid }, title, ' ', listingBadge(gpu)),
      el('dl', { class: 'facts' },
        el('dt', {}, 'Performance score'), el('dd', {}, fmtNum(num(gpu.perf_score))),
        el('dt', {}, 'Quality ratio'), el('dd', {}, num(gpu.quality_ratio) === null ? '—' : gpu.quality_ratio.toFixed(2)),
        el('dt', {}, 'Latest run'), el('dd', {}, gpu.latest ? fmtMs(gpu.latest.at_ms) : '—')),
      !gpu.listed && gpu.benchmarked
        ? el('div', { class: 'callout bench-delisted', role: 'note' },
          el('h4', {}, 'Delisted from the marketplace'),
          el('p', { class: 'bench-reason' }, gpu.delist_reason || 'The latest benchmark run fell short of the reference.'),
          gpu.recommendation ? el('p', { class: 'bench-recommendation' }, el('strong', {}, 'Recommendation: '),
            gpu.recommendation) : '')
        : gpu.listed ? el('div', { class: 'callout ok' }, el('p', {}, 'Listed: the latest run meets the reference.')) : '',
      el('h4', {}, 'Latest run against the reference'),
      gpu.latest ? barChart(gpu) : el('p', { class: 'muted' }, 'No completed run yet.'),
      el('h4', {}, 'Performance score history'),
      historyChart(gpu),
      el('h4', {}, 'Checks of the figures'),
      checksTable(gpu, runs));
  }

  async function rerunAnswer(machine, button, status) {
    button.disabled = true;
    status.className = 'bench-rerun-status';
    status.textContent = 'Requesting…';
    const r = await api('POST', `/v1/provider/machines/${encodeURIComponent(machine.id)}/benchmarks/run`);
    const msg = r.data && r.data.error ? r.data.error.message : '';
    if (r.status === 202) {
      status.classList.add('ok');
      status.textContent = r.data.waits_for_rentals
        ? `Re-run requested: ${r.data.waits_for_rentals}. The results appear here when the agent reports them.`
        : 'Re-run requested: the agent runs the benchmarks on its next heartbeat and the results ' +
          'appear here when it reports them.';
    } else if (r.status === 409) {
      status.classList.add('info');
      status.textContent = 'A benchmark run is already in progress on this machine; please wait for it to finish ' +
        'before asking for another.';
    } else if (r.status === 429) {
      status.classList.add('info');
      status.textContent = `Re-runs are rate-limited. ${msg ? msg.charAt(0).toUpperCase() + msg.slice(1) : ''}; please try again later.`;
    } else {
      status.classList.add('error');
      status.textContent = msg || 'The re-run could not be requested; try again.';
    }
    button.disabled = false;
  }

  // The machine's own figures (disk and network) from the newest run that measured them, with the
  // machine checks of that run (a failing one delists every GPU of the machine).
  function machineFigures(bench) {
    const m = bench && bench.machine;
    if (!m) return el('p', { class: 'muted bench-host' }, 'No disk or network figures yet.');
    const failures = m.failures || [];
    const failing = new Set(failures.map((f) => f.metric));
    const keys = Object.keys(METRICS).filter((k) => num(m.figures[k]) !== null);
    return el('section', { class: 'bench-host', 'aria-label': 'Disk and network' },
      el('h3', {}, 'Disk and network', el('span', { class: 'muted small' }, ` — run of ${fmtMs(m.at_ms)}`)),
      scrollBox(el('table', { class: 'table bench-table', 'aria-label': 'Disk and network figures' },
        el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Metric'), el('th', { scope: 'col' }, 'Measured'))),
        el('tbody', {}, keys.map((k) => el('tr', { class: failing.has(k) ? 'fail' : '', 'data-metric': k },
          el('td', {}, metricLabel(k)), el('td', {}, `${fmtNum(m.figures[k])} ${metricUnit(k)}`)))))),
      failures.length ? el('ul', { class: 'bench-host-failures' }, failures.map((f) => el('li', { class: 'form-error' },
        `${f.label}: ${fmtNum(f.measured)} ${f.unit}, needs ${fmtNum(f.expected)}. ${f.recommendation || ''}`))) : '');
  }

  function machineSection(machine, bench) {
    const hid = `bench-m-${machine.id}`;
    const status = el('p', { class: 'bench-rerun-status', role: 'status', 'aria-live': 'polite' });
    const button = el('button', { type: 'button', class: 'bench-rerun' }, 'Re-run benchmarks');
    button.addEventListener('click', () => rerunAnswer(machine, button, status));
    const open = bench && bench.runs.find((x) => x.status !== 'completed' && x.status !== 'failed' && x.status !== 'expired');
    return el('section', { class: 'bench-machine', 'aria-labelledby': hid },
      el('h2', { id: hid }, machine.hostname || machine.id, ' ',
        machine.simulated ? el('span', { class: 'badge sim' }, 'simulated') : '',
        ' ', el('span', { class: 'muted bench-id' }, machine.id)),
      el('div', { class: 'actions bench-actions' }, button,
        el('span', { class: 'muted' }, 'Benchmarks can be re-run once in a while; one run at a time.')),
      status,
      open ? el('p', { class: 'muted' }, `A run is ${open.status} (${REASONS[open.reason] || open.reason}), requested ` +
        `${fmtMs(open.requested_at_ms)}.`) : '',
      bench ? machineFigures(bench) : '',
      !bench ? el('p', { class: 'form-error' }, 'Could not load the benchmarks of this machine.')
        : bench.gpus.length === 0 ? el('p', { class: 'muted' }, 'This machine reports no GPUs.')
          : bench.gpus.map((g) => gpuCard(machine, g, bench.runs)));
  }

  // The Benchmarks tab of one machine's page (#/machines/ID/benchmarks, machines.js): the same section.
  window.machineBenchmarks = async function machineBenchmarks(machine) {
    const r = await api('GET', `/v1/provider/machines/${encodeURIComponent(machine.id)}/benchmarks`);
    return machineSection(machine, r.ok ? r.data : null);
  };

  pages.benchmarks = async function benchmarks() {
    document.title = 'Benchmarks — GPUnex';
    if (!state.user) { location.hash = '#/login'; return []; }
    if (!hasRole('provider')) {
      return [el('h1', {}, 'Benchmarks'), el('p', {}, 'Benchmarks are for approved providers.')];
    }
    const ms = await apiList('/v1/provider/machines');
    if (!ms.ok) {
      return [el('h1', {}, 'Benchmarks'),
        el('p', { class: 'form-error' }, (ms.data && ms.data.error && ms.data.error.message) || 'Could not load your machines.')];
    }
    const machines = ms.data.items || [];
    const intro = el('p', { class: 'muted' }, 'Each GPU is benchmarked when it registers and when you ask; a GPU that ' +
      'falls short of its model\u2019s reference is delisted until a later run passes.');
    if (machines.length === 0) {
      return [el('h1', {}, 'Benchmarks'), intro,
        el('p', {}, 'No machines yet: install the agent with one of your ', el('a', { href: '#/keys' }, 'API keys'), '.')];
    }
    const benches = await Promise.all(machines.map(async (m) => {
      const r = await api('GET', `/v1/provider/machines/${encodeURIComponent(m.id)}/benchmarks`);
      return r.ok ? r.data : null;
    }));
    return [el('h1', {}, 'Benchmarks'), intro, ...machines.map((m, i) => machineSection(m, benches[i]))];
  };
})();
