// Rentals in the dashboard; they register into app.js's `pages`.
// #/rent/MACHINE/MODEL: the form that rents GPUs of one marketplace offer, with the estimated cost and the balance.
// #/rentals: the customer's rentals; #/rentals/ID: one of them, with its logs (refreshed while it is
// live) and a Stop button. #/rented: a provider's GPUs that are rented (never by whom), what they earn
// per hour, and a Stop button. The pages poll while shown, and stop polling when left.
'use strict';

(() => {
  const POLL_MS = 3000;
  const STATE_TEXT = { requested: 'Requested', starting: 'Starting', running: 'Running', stopping: 'Stopping', ended: 'Ended' };
  // The customer's words for why a rental ended, when the server sent none (it sends end_text).
  const END_TEXT = {
    customer_stopped: 'Stopped by you', max_duration: 'Reached its maximum duration',
    balance_exhausted: 'Stopped: the balance ran out', window_ended: 'Stopped: the provider\'s availability window ended',
    container_exited: 'The container exited', start_failed: 'Could not start (not charged)',
    provider_stopped: 'Stopped by the provider', gpu_failure: 'A GPU failed', host_failure: 'The provider\'s machine failed',
    agent_lost: 'The provider\'s machine went offline',
  };
  // The provider's words for the same.
  const PROVIDER_END_TEXT = {
    ...END_TEXT, customer_stopped: 'Stopped by the customer', balance_exhausted: 'The customer\'s balance ran out',
    window_ended: 'Your availability window ended', start_failed: 'Could not start', provider_stopped: 'Stopped by you',
    host_failure: 'The machine failed', agent_lost: 'The machine went offline',
  };

  const live = (s) => s !== 'ended';
  const stateBadge = (s) => el('span', { class: `badge rental-state state-${s}`, 'data-state': s }, STATE_TEXT[s] || s);
  const usdc = (s) => (s === null || s === undefined ? '—' : `${s} USDC`);
  const gpusText = (r) => `${r.gpu_count ?? (r.gpus || []).length} × ${r.model}`;
  const endText = (r) => r.end_text || END_TEXT[r.end_reason] || (r.state === 'ended' ? 'Ended' : '—');

  // Whole micro-USDC from an API amount ("0.950000"), and back, so an estimate is exact to the last digit.
  function micro(s) {
    const m = /^(\d+)(?:\.(\d{0,6}))?$/.exec(String(s ?? ''));
    return m ? Number(m[1]) * 1e6 + Number((m[2] || '').padEnd(6, '0')) : null;
  }
  function fromMicro(n) {
    const v = Math.round(n);
    return `${Math.floor(v / 1e6)}.${String(v % 1e6).padStart(6, '0')}`;
  }

  function durationText(seconds) {
    if (typeof seconds !== 'number') return '—';
    const two = (v) => String(v).padStart(2, '0');
    if (seconds >= 3600) return `${Math.floor(seconds / 3600)} h ${two(Math.floor((seconds % 3600) / 60))} min`;
    if (seconds >= 60) return `${Math.floor(seconds / 60)} min ${two(seconds % 60)} s`;
    return `${seconds} s`;
  }

  // Splits a command line as a shell would into words (spaces separate; '…' and "…" keep spaces; \ escapes).
  // Answers the words, or { error } for an unclosed quote.
  function shellWords(line) {
    const words = [];
    let word = null;
    let quote = null;
    for (let i = 0; i < line.length; i++) {
      const c = line[i];
      if (quote === "'") { if (c === "'") quote = null; else word += c; continue; }
      if (quote === '"') {
        if (c === '"') quote = null;
        else if (c === '\\' && i + 1 < line.length && '"\\$`'.includes(line[i + 1])) word += line[++i];
        else word += c;
        continue;
      }
      if (/\s/.test(c)) { if (word !== null) { words.push(word); word = null; } continue; }
      word ??= '';
      if (c === "'" || c === '"') quote = c;
      else if (c === '\\' && i + 1 < line.length) word += line[++i];
      else word += c;
    }
    if (quote) return { error: `The command has an unclosed ${quote === '"' ? 'double' : 'single'} quote.` };
    if (word !== null) words.push(word);
    return { words };
  }
  const shellQuote = (w) => (/^[A-Za-z0-9_\-./:=@%+,]+$/.test(w) ? w : `'${w.replace(/'/g, "'\\''")}'`);

  // A labelled control with its error slot; data-field is the API field its errors are shown beside.
  let seq = 0;
  function control(apiField, label, { type = 'text', hint, options, ...attrs } = {}) {
    const id = `rent-${apiField.replace(/_/g, '-')}-${++seq}`;
    const described = [hint ? `${id}-hint` : '', `${id}-error`].filter(Boolean).join(' ');
    const common = { id, name: apiField, 'data-field': apiField, 'aria-describedby': described, ...attrs };
    let c;
    if (type === 'textarea') c = el('textarea', { rows: 3, ...common });
    else if (type === 'select') c = el('select', common, options.map(([v, t]) => el('option', { value: v }, t)));
    else c = el('input', { type, ...common });
    return el('div', { class: 'field' }, el('label', { for: id }, label),
      hint ? el('div', { id: `${id}-hint`, class: 'hint' }, hint) : '',
      c, el('div', { id: `${id}-error`, class: 'field-error', role: 'alert' }));
  }

  // An error of a field of the rent request shown beside its control: "env.NAME" or "ports[1]" beside
  // env or ports; what no control shows (the offer, the balance) under the form.
  function showRentError(form, err) {
    markInvalid(form, err, (path) => form.querySelector(`[data-field="${CSS.escape(String(path).split(/[.[]/)[0])}"]`));
  }

  async function findOffer(machine, model) {
    const r = await apiList(`/v1/marketplace/offers${model ? `?model=${encodeURIComponent(model)}` : ''}`);
    if (!r.ok) return null;
    return r.data.items.find((o) => o.machine_id === machine && (!model || o.model === model)) || null;
  }

  // ---------------------------------------------------------------- #/rent/MACHINE/MODEL

  pages.rent = async function rent(machine, model) {
    document.title = 'Rent GPUs — GPUnex';
    if (!state.user) {
      return [el('h1', {}, 'Rent GPUs'), el('p', {}, el('a', { href: '#/login' }, 'Log in'), ' or ',
        el('a', { href: '#/signup' }, 'create an account'), ' to rent GPUs.')];
    }
    const [offer, balance] = await Promise.all([findOffer(machine, model), api('GET', '/v1/billing/balance')]);
    if (!offer) {
      return [el('h1', {}, 'Rent GPUs'), el('p', { role: 'alert' }, 'This offer is not available now: its GPUs may have been rented or unlisted. ',
        el('a', { href: '#/market' }, 'Back to the marketplace'))];
    }
    const price = micro(offer.usdc_per_gpu_hour);
    const available = Math.max(1, offer.gpu_count_available || 1);
    const loc = offer.location || {};
    const gpus = control('gpu_count', `GPUs (up to ${available})`, { type: 'select',
      options: [...Array(available).keys()].map((i) => [String(i + 1), String(i + 1)]) });
    const estimate = el('p', { id: 'rent-estimate' });
    const balanceLine = el('p', { id: 'rent-balance' });
    const preview = el('div', { class: 'hint', id: 'rent-command-preview' });
    const form = el('form', { class: 'card rent-form', novalidate: true, 'aria-label': 'Rent GPUs' },
      gpus,
      control('image', 'Container image', { required: true, placeholder: 'docker.io/library/ubuntu:22.04', autocomplete: 'off',
        spellcheck: 'false' }),
      control('command', 'Command (optional)', { autocomplete: 'off', spellcheck: 'false', placeholder: 'python train.py --epochs 3',
        hint: 'As typed in a shell: words are split at spaces, quotes keep them together. Empty: the image\'s own command.' }),
      preview,
      control('env', 'Environment variables (optional)', { type: 'textarea', spellcheck: 'false', placeholder: 'HF_TOKEN=hf_…',
        hint: 'One NAME=value per line. Only the names are shown again.' }),
      control('ports', 'Container ports to expose (optional)', { inputmode: 'numeric', placeholder: '8888, 6006',
        hint: 'Each is reachable on a public port of the provider\'s machine once it runs.' }),
      control('max_hours', 'Stop after (hours, optional)', { type: 'number', min: 0.0167, step: 'any', placeholder: 'until you stop it' }),
      control('ssh_public_key', 'SSH public key (optional)', { type: 'textarea', rows: 2, spellcheck: 'false',
        placeholder: 'ssh-ed25519 AAAA… you@laptop', hint: 'Passed to the container as $PUBLIC_KEY, and its port 22 is opened: once it runs, the rental shows the ssh command (the image must run sshd).' }),
      el('section', { class: 'rent-cost', 'aria-label': 'Cost', role: 'status' }, estimate, balanceLine),
      el('div', { class: 'form-error', role: 'alert' }),
      el('button', { type: 'submit' }, 'Rent'));

    const value = (name) => form.elements[name].value;
    const update = () => {
      const n = Number(value('gpu_count'));
      const perHour = price * n;
      const hours = value('max_hours').trim() === '' ? null : Number(value('max_hours'));
      const limit = hours !== null && Number.isFinite(hours) && hours > 0
        ? [', at most ', el('strong', {}, usdc(fromMicro(perHour * hours))), ` for ${hours} hour${hours === 1 ? '' : 's'}.`]
        : [', billed per second until you stop it.'];
      estimate.replaceChildren('Estimated cost: ', el('strong', {}, usdc(fromMicro(perHour))), ' per hour',
        ` (${n} GPU${n === 1 ? '' : 's'} × ${usdc(offer.usdc_per_gpu_hour)})`, ...limit);
      if (!balance.ok) { balanceLine.textContent = 'Your balance could not be loaded.'; return; }
      // What the server asks to start: the first hour, or all of a shorter max_hours, from what is available
      // (the balance less what running rentals used since their last settlement). The server also keeps
      // back what the customer's other live rentals hold for their own first hour, which is not shown here.
      const have = micro(balance.data.available);
      const short = hours !== null && Number.isFinite(hours) && hours > 0 && hours < 1;
      const first = short ? Math.ceil(perHour * hours) : perHour;
      if (have < first) {
        balanceLine.replaceChildren(el('span', { class: 'warning' },
          `Your balance of ${usdc(balance.data.available)} does not cover ${short ? 'its' : 'the first'} ` +
          `${short ? `${hours} hour${hours === 1 ? '' : 's'}` : 'hour'} (${usdc(fromMicro(first))}). `),
        el('a', { href: '#/balance' }, 'Your balance'));
      } else {
        balanceLine.textContent = `Your balance: ${usdc(balance.data.available)}, enough for about ${Math.floor(have / perHour)} hour${
          Math.floor(have / perHour) === 1 ? '' : 's'} at this rate.`;
      }
      const cmd = shellWords(value('command'));
      preview.textContent = cmd.error ? '' : cmd.words.length ? `Runs: ${cmd.words.map(shellQuote).join(' ')}` : '';
    };
    // One key per filled-in form: a double click, or a retry after a lost answer, rents once.
    let key = crypto.randomUUID();
    form.addEventListener('input', () => { key = crypto.randomUUID(); update(); });
    form.addEventListener('change', update);
    let sending = false;
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      if (sending) return;
      const body = { machine_id: offer.machine_id, model: offer.model, gpu_count: Number(value('gpu_count')), image: value('image').trim() };
      const cmd = shellWords(value('command'));
      if (cmd.error) return showRentError(form, { field: 'command', message: cmd.error });
      if (cmd.words.length) body.command = cmd.words;
      const env = {};
      const lines = value('env').split('\n').map((l) => l.replace(/\r$/, '')).filter((l) => l.trim() !== '');
      for (const [i, line] of lines.entries()) {
        const eq = line.indexOf('=');
        if (eq <= 0) return showRentError(form, { field: 'env', message: `Line ${i + 1} ("${line.trim()}"): write NAME=value.` });
        env[line.slice(0, eq).trim()] = line.slice(eq + 1);
      }
      if (lines.length) body.env = env;
      const ports = value('ports').split(/[\s,]+/).filter(Boolean);
      const bad = ports.find((p) => !/^\d+$/.test(p));
      if (bad !== undefined) return showRentError(form, { field: 'ports', message: `"${bad}" is not a port number.` });
      if (ports.length) body.ports = ports.map(Number);
      if (value('max_hours').trim() !== '') body.max_hours = Number(value('max_hours'));
      if (value('ssh_public_key').trim() !== '') body.ssh_public_key = value('ssh_public_key').trim();
      sending = true;
      const r = await api('POST', '/v1/rentals', body, { 'Idempotency-Key': key });
      sending = false;
      if (!r.ok) {
        const err = r.data && r.data.error;
        showRentError(form, err);
        if (err && err.code === 'insufficient_balance') {
          form.querySelector('.form-error').append(' ', el('a', { href: '#/balance' }, 'Your balance'));
        }
        return;
      }
      state.flash = `Rental ${r.data.id} requested: ${gpusText(r.data)} at ${usdc(r.data.cost_per_hour)} per hour.`;
      location.hash = `#/rentals/${encodeURIComponent(r.data.id)}`;
    });
    update();
    return [el('p', {}, el('a', { href: '#/market' }, '← Marketplace')),
      el('h1', {}, `Rent ${offer.model}`),
      el('dl', { class: 'facts', id: 'rent-offer' },
        el('dt', {}, 'Offer'), el('dd', {}, `${offer.gpu_count_available} × ${offer.model} available`),
        el('dt', {}, 'Price'), el('dd', {}, `${usdc(offer.usdc_per_gpu_hour)} per GPU-hour`),
        el('dt', {}, 'Machine'), el('dd', {}, el('code', {}, offer.machine_id)),
        el('dt', {}, 'Location'), el('dd', {}, [loc.city, loc.country].filter(Boolean).join(', ') + (loc.region ? ` (${loc.region})` : '') || '—'),
        el('dt', {}, 'Reliability'), el('dd', {}, String(offer.reliability ?? '—')),
        offer.available_until ? [el('dt', {}, 'Available until'), el('dd', {}, fmtTime(offer.available_until))] : ''),
      form];
  };

  // ---------------------------------------------------------------- polling

  // Calls `tick` every POLL_MS while `node` is on the page and the address is the same; `tick`
  // answers false to stop. One poller per page: a new one ends the last.
  let poller = null;
  function poll(node, tick) {
    if (poller) clearInterval(poller);
    const hash = location.hash;
    let busy = false;
    const timer = setInterval(async () => {
      if (!node.isConnected || location.hash !== hash) { clearInterval(timer); return; }
      if (busy) return;
      busy = true;
      try { if ((await tick()) === false) clearInterval(timer); } finally { busy = false; }
    }, POLL_MS);
    poller = timer;
  }

  // A Stop button that asks first, in place: "Stop it now? [Yes, stop] [Cancel]".
  function stopControl(label, question, onStop) {
    const box = el('span', { class: 'stop-control' });
    const error = el('span', { class: 'form-error', role: 'alert' });
    const ask = () => {
      box.dataset.confirming = 'true';
      box.replaceChildren(el('span', { class: 'warning' }, question), ' ',
        el('button', { type: 'button', class: 'danger', onclick: async (ev) => {
          ev.target.disabled = true;
          delete box.dataset.confirming;  // answered: a refresh may redraw it now
          const msg = await onStop();
          if (msg) { box.dataset.confirming = 'true'; error.textContent = msg; ev.target.disabled = false; }
        } }, 'Yes, stop'), ' ',
        el('button', { type: 'button', class: 'ghost', onclick: () => { delete box.dataset.confirming; idle(); } }, 'Cancel'), ' ', error);
    };
    const idle = () => box.replaceChildren(el('button', { type: 'button', class: 'danger', onclick: ask }, label));
    idle();
    return box;
  }

  // ---------------------------------------------------------------- #/rentals

  function rentalRow(r) {
    return el('tr', { 'data-rental': r.id },
      el('th', { scope: 'row', 'data-col': 'id' }, el('a', { href: `#/rentals/${encodeURIComponent(r.id)}` }, r.id)),
      el('td', { 'data-col': 'state' }, stateBadge(r.state)),
      el('td', { 'data-col': 'gpus' }, gpusText(r)),
      el('td', { 'data-col': 'cost-per-hour', class: 'num' }, usdc(r.cost_per_hour)),
      el('td', { 'data-col': 'cost', class: 'num' }, usdc(r.cost_so_far)),
      el('td', { 'data-col': 'runtime' }, durationText(r.seconds_metered)),
      el('td', { 'data-col': 'created' }, fmtTime(r.created_at)),
      el('td', { 'data-col': 'end' }, r.state === 'ended' ? endText(r) : '—'));
  }

  function rentalsBody(r) {
    if (!r.ok) return [el('p', { role: 'alert' }, r.data && r.data.error ? r.data.error.message : 'Your rentals could not be loaded.')];
    const items = r.data.items;
    if (!items.length) {
      return [el('p', { class: 'empty' }, 'No rentals yet. Find GPUs on the ', el('a', { href: '#/market' }, 'Marketplace'), '.')];
    }
    const active = items.filter((x) => live(x.state)).length;
    return [el('p', { class: 'muted', role: 'status', id: 'rentals-summary' },
      `${items.length} rental${items.length === 1 ? '' : 's'}, ${active} active. Updated ${clockNow()}.`),
    scrollBox(el('table', { class: 'table rentals', 'aria-label': 'My rentals' },
      el('thead', {}, el('tr', {}, ['Rental', 'State', 'GPUs', 'Per hour', 'Cost so far', 'Run time', 'Requested', 'Ended']
        .map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, items.map(rentalRow))))];
  }

  function factList(r) {
    const f = (name, label, ...value) => [el('dt', {}, label), el('dd', { 'data-fact': name }, ...value)];
    const ports = (r.ports || []).map((p) => (r.state === 'ended' ? `${p.container_port} (closed)`
      : p.address ? `${p.container_port} → ${p.address}`
        : p.host_port ? `${p.container_port} → host port ${p.host_port}` : `${p.container_port} (bound when it runs)`));
    const offline = live(r.state) && r.state !== 'requested' && r.machine_online === false;
    return el('dl', { class: 'facts', id: 'rental-facts' },
      f('state', 'State', stateBadge(r.state)),
      f('gpus', 'GPUs', gpusText(r), (r.gpus || []).length ? el('div', { class: 'muted small' }, r.gpus.join(', ')) : ''),
      f('machine', 'Machine', el('code', {}, r.machine_id), offline
        ? el('div', { class: 'warning', id: 'rental-machine-offline', role: 'status' }, 'Offline: its agent is not heard from. Back within 5 minutes, '
          + 'or the rental ends, billed to its last heartbeat.') : ''),
      f('price', 'Price', `${usdc(r.usdc_per_gpu_hour)} per GPU-hour`),
      f('cost-per-hour', 'Per hour', usdc(r.cost_per_hour)),
      f('cost', r.state === 'ended' ? 'Cost' : 'Cost so far', usdc(r.cost_so_far)),
      f('runtime', 'Run time', durationText(r.seconds_metered)),
      f('image', 'Image', el('code', {}, r.image)),
      f('command', 'Command', (r.command || []).length ? el('code', {}, r.command.map(shellQuote).join(' ')) : 'the image\'s own'),
      (r.env_names || []).length ? f('env', 'Environment', r.env_names.join(', '), el('span', { class: 'muted' }, ' (values not shown)')) : '',
      ports.length ? f('ports', 'Ports', ports.join(', ')) : '',
      r.ssh ? f('ssh', 'SSH', el('code', {}, r.ssh)) : '',
      f('max-hours', 'Stops after', r.max_hours === null || r.max_hours === undefined ? 'no limit: until you stop it' : `${r.max_hours} hours`),
      ...(r.available_until && r.state !== 'ended'
        ? [f('available-until', 'Machine available until', `${fmtTime(r.available_until)} (the end of availability it was rented with: its schedule may stop it then)`)] : []),
      f('created', 'Requested', fmtTime(r.created_at)),
      r.running_since ? f('running-since', 'Running since', fmtTime(r.running_since)) : '',
      r.ended_at ? f('ended', 'Ended', fmtTime(r.ended_at)) : '',
      r.state === 'ended' ? f('end', 'Why it ended', endText(r)) : '');
  }

  function logsView(l) {
    if (!l.ok) return [el('p', { class: 'muted' }, 'The logs could not be loaded.')];
    return [el('p', { class: 'muted', id: 'rental-logs-updated' },
      l.data.updated_at ? `The last lines of its output, as of ${fmtTime(l.data.updated_at)}.`
        : l.data.state === 'ended' ? 'It ended without writing any output.' : 'No output yet.'),
    l.data.logs ? el('pre', { class: 'rental-logs', id: 'rental-logs', tabindex: '0', 'aria-label': 'Container output' }, l.data.logs) : ''];
  }

  async function rentalDetail(id) {
    const path = `/v1/rentals/${encodeURIComponent(id)}`;
    const [r, l] = await Promise.all([api('GET', path), api('GET', `${path}/logs`)]);
    if (!r.ok) return notFound(r);
    document.title = `Rental ${id} — GPUnex`;
    const facts = el('div', { 'aria-live': 'polite' }, factList(r.data));
    const logs = el('div', { class: 'logs' }, logsView(l));
    const actions = el('div', { class: 'actions' });
    const showActions = (rental) => {
      if (actions.querySelector('[data-confirming]')) return;
      actions.replaceChildren(live(rental.state) && rental.state !== 'stopping'
        ? stopControl('Stop rental', 'Stop it now? Its container is stopped and billing ends.', async () => {
          const s = await api('POST', `${path}/stop`);
          if (!s.ok) return s.data && s.data.error ? s.data.error.message : 'It could not be stopped; try again.';
          facts.replaceChildren(factList(s.data));
          actions.replaceChildren();
          showActions(s.data);
          return null;
        })
        : '');
    };
    showActions(r.data);
    if (live(r.data.state)) {
      poll(facts, async () => {
        const [nr, nl] = await Promise.all([api('GET', path), api('GET', `${path}/logs`)]);
        if (!facts.isConnected) return false;
        if (nr.ok) { facts.replaceChildren(factList(nr.data)); showActions(nr.data); }
        if (nl.ok) {
          // Keep the reader's place unless they were at the end.
          const pre = logs.querySelector('pre');
          const atEnd = !pre || pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
          logs.replaceChildren(...logsView(nl));
          const next = logs.querySelector('pre');
          if (next && atEnd) next.scrollTop = next.scrollHeight;
        }
        return !(nr.ok && !live(nr.data.state));
      });
    }
    return [el('p', {}, el('a', { href: '#/rentals' }, '← My rentals')), el('h1', {}, `Rental ${id}`),
      facts, actions, el('h2', {}, 'Logs'), logs];
  }

  pages.rentals = async function rentals(id) {
    document.title = 'My rentals — GPUnex';
    if (!state.user) { location.hash = '#/login'; return []; }
    if (id) return rentalDetail(id);
    const body = el('div', { class: 'rentals-list' }, rentalsBody(await apiList('/v1/rentals')).flat());
    poll(body, async () => {
      const r = await apiList('/v1/rentals');
      if (body.isConnected) body.replaceChildren(...rentalsBody(r).flat());
      return true;
    });
    return [el('h1', {}, 'My rentals'),
      el('p', { class: 'muted' }, 'Billed per second while running, from your ', el('a', { href: '#/balance' }, 'balance'),
        '. Rent more on the ', el('a', { href: '#/market' }, 'Marketplace'), '.'),
      body];
  };

  // ---------------------------------------------------------------- #/rented (providers)

  function rentedRow(r, refresh) {
    return el('tr', { 'data-rental': r.id },
      el('th', { scope: 'row', 'data-col': 'gpus' }, `${(r.gpus || []).length} × ${r.model}`,
        el('div', { class: 'muted small', 'data-col': 'uuids' }, (r.gpus || []).join(', '))),
      el('td', { 'data-col': 'machine' }, el('code', {}, r.machine_id)),
      el('td', { 'data-col': 'state' }, stateBadge(r.state)),
      el('td', { 'data-col': 'price', class: 'num' }, usdc(r.usdc_per_gpu_hour)),
      el('td', { 'data-col': 'earnings-per-hour', class: 'num' }, live(r.state) ? usdc(r.earnings_per_hour) : '—'),
      el('td', { 'data-col': 'earned', class: 'num' }, usdc(r.earned_so_far)),
      el('td', { 'data-col': 'since' }, r.running_since ? fmtTime(r.running_since) : fmtTime(r.created_at)),
      el('td', { 'data-col': 'end' }, r.state === 'ended' ? PROVIDER_END_TEXT[r.end_reason] || r.end_reason || 'Ended' : '—'),
      el('td', { 'data-col': 'action' }, live(r.state) && r.state !== 'stopping'
        ? stopControl('Stop', 'Stop it? It counts as stopped by you.', async () => {
          const s = await api('POST', `/v1/provider/rentals/${encodeURIComponent(r.id)}/stop`);
          if (!s.ok) return s.data && s.data.error ? s.data.error.message : 'It could not be stopped; try again.';
          await refresh();
          return null;
        })
        : ''));
  }

  function rentedBody(r, refresh) {
    if (!r.ok) return [el('p', { role: 'alert' }, r.data && r.data.error ? r.data.error.message : 'Your rented GPUs could not be loaded.')];
    const items = r.data.items || [];
    const now = items.filter((x) => live(x.state));
    const earlier = items.filter((x) => !live(x.state));
    const gpus = now.reduce((n, x) => n + (x.gpus || []).length, 0);
    const rate = now.filter((x) => x.state === 'running' || x.state === 'stopping').reduce((n, x) => n + (micro(x.earnings_per_hour) || 0), 0);
    const table = (rows, name) => scrollBox(el('table', { class: 'table rented', 'aria-label': name },
      el('thead', {}, el('tr', {}, ['GPUs', 'Machine', 'State', 'Price per GPU-hour', 'You earn per hour', 'Earned so far',
        'Since', 'Ended', 'Stop'].map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, rows.map((x) => rentedRow(x, refresh)))));
    return [el('p', { role: 'status', id: 'rented-summary' },
      now.length ? `${gpus} GPU${gpus === 1 ? '' : 's'} rented now, earning ${usdc(fromMicro(rate))} per hour.`
        : 'None of your GPUs is rented now.', el('span', { class: 'muted' }, ` Updated ${clockNow()}.`)),
    now.length ? table(now, 'Rented now') : '',
    earlier.length ? [el('h2', {}, 'Earlier rentals'), table(earlier, 'Earlier rentals')] : ''];
  }

  pages.rented = async function rented() {
    document.title = 'Rented GPUs — GPUnex';
    if (!state.user) { location.hash = '#/login'; return []; }
    if (!hasRole('provider')) return [el('h1', {}, 'Rented GPUs'), el('p', {}, 'This page is for approved providers.')];
    const body = el('div', { class: 'rented-list' });
    const refresh = async () => {
      const r = await apiList('/v1/provider/rentals');
      // A question asked in a row (Stop?) is not wiped by the refresh.
      if (body.isConnected && !body.querySelector('[data-confirming]')) body.replaceChildren(...rentedBody(r, refresh).flat());
    };
    body.replaceChildren(...rentedBody(await apiList('/v1/provider/rentals'), refresh).flat());
    poll(body, async () => { await refresh(); return true; });
    return [el('h1', {}, 'Rented GPUs'),
      el('p', { class: 'muted' }, 'Your GPUs that customers rent now, and what they earn you after the platform\'s commission. ' +
        'Who rents them is not shown.'),
      body];
  };
})();
