// GPUnex dashboard: a small hash-routed app over the public REST API.
'use strict';

const state = { user: null };

function csrfToken() {
  const m = document.cookie.match(/(?:^|;\s*)gpunex_csrf=([^;]+)/);
  return m ? decodeURIComponent(m[1]) : '';
}

// Calls the API with the session cookie; mutations carry the CSRF header.
async function api(method, path, body, extraHeaders = {}) {
  const headers = { ...extraHeaders };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET') headers['X-CSRF-Token'] = csrfToken();
  const res = await fetch(path, {
    method, headers, credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try { data = await res.json(); } catch { /* empty body */ }
  return { ok: res.ok, status: res.status, data };
}

// GET a list and follow its next_cursor (API.md paging), answering api()'s shape with every item.
async function apiList(path) {
  const items = [];
  let cursor = null;
  for (let page = 0; page < 50; ++page) {
    const sep = path.includes('?') ? '&' : '?';
    const r = await api('GET', `${path}${sep}limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    if (!r.ok) return r;
    items.push(...r.data.items);
    cursor = r.data.next_cursor;
    if (!cursor) return { ...r, data: { ...r.data, items, next_cursor: null } };
  }
  return { ok: true, status: 200, data: { items, next_cursor: cursor } };
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v !== false && v !== null && v !== undefined) e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function field(name, label, type = 'text', extra = {}) {
  const id = `f-${name}`;
  return el('div', { class: 'field' },
    el('label', { for: id }, label),
    el('input', { id, name, type, 'aria-describedby': `${id}-error`, ...extra }),
    el('div', { id: `${id}-error`, class: 'field-error', role: 'alert' }));
}

// The invalid fields of a server error: every one it lists (error.fields), else the one it names.
function invalidFields(err) {
  if (!err) return [];
  if (Array.isArray(err.fields) && err.fields.length) return err.fields;
  return err.field ? [{ field: err.field, message: err.message }] : [];
}

// Shows each invalid field's message beside its control: the control gets aria-invalid and the
// message goes into its error element (which the control's aria-describedby names). `find` maps a
// field's JSON path to its control. Messages with no control go under the form; the first bad
// control gets the focus.
function markInvalid(form, err, find) {
  form.querySelectorAll('.field-error').forEach((e) => { e.textContent = ''; });
  form.querySelectorAll('[aria-invalid]').forEach((e) => e.removeAttribute('aria-invalid'));
  const general = form.querySelector('.form-error');
  general.textContent = '';
  if (!err) { general.textContent = 'Something went wrong; try again.'; return; }
  const elsewhere = [];
  let first = null;
  for (const f of invalidFields(err)) {
    const c = f.field ? find(f.field) : null;
    if (!c) { elsewhere.push(f.message); continue; }
    c.setAttribute('aria-invalid', 'true');
    first ||= c;
    const box = c.id ? form.querySelector(`#${CSS.escape(c.id)}-error`) : null;
    if (box) box.textContent = box.textContent ? `${box.textContent} ${f.message}` : f.message;
    else elsewhere.push(f.message);
  }
  if (!first && !elsewhere.length) elsewhere.push(err.message);
  general.textContent = elsewhere.join(' ');
  const focusable = first && (first.matches('input, select, textarea') ? first : first.querySelector('input, select, textarea'));
  if (focusable) focusable.focus();
}

// Shows a server error next to the fields it names (by input name), or under the form.
function showError(form, err) {
  markInvalid(form, err, (path) => form.querySelector(`[name="${CSS.escape(path)}"]`));
}

// Phone-sized screens (style.css's 640 px breakpoint): charts are drawn narrower there, so their
// text keeps its size instead of being scaled down with the chart.
const narrowScreen = () => window.matchMedia('(max-width: 640px)').matches;

// A table in a box that scrolls sideways when the table is wider than the screen, so a wide table
// never widens the page (a phone is 375 px). Focusable and named, so the keyboard can scroll it too.
function scrollBox(table) {
  const caption = table.querySelector('caption');
  const name = table.getAttribute('aria-label') || (caption ? caption.textContent : 'Table');
  return el('div', { class: 'table-scroll', role: 'region', 'aria-label': name, tabindex: '0' }, table);
}

function render(...nodes) {
  const main = document.getElementById('main');
  main.replaceChildren(...nodes);
  main.focus();
}

function updateChrome(route) {
  const signedIn = !!state.user;
  document.querySelectorAll('[data-auth="in"]').forEach((e) => { e.hidden = !signedIn; });
  document.querySelectorAll('[data-auth="out"]').forEach((e) => { e.hidden = signedIn; });
  document.getElementById('who').textContent = signedIn ? state.user.email : '';
  document.querySelectorAll('[data-role]').forEach((e) => {
    e.hidden = !signedIn || !e.dataset.role.split(' ').some((r) => state.user.roles.includes(r));
  });
  const unread = document.getElementById('unread');
  unread.textContent = signedIn && state.unread ? String(state.unread) : '';
  unread.hidden = !(signedIn && state.unread);
  document.querySelectorAll('[data-nav]').forEach((a) => {
    if (a.dataset.nav === route) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  });
}

const pages = {
  home() {
    document.title = 'GPUnex';
    return [el('section', { class: 'hero' },
      el('h1', {}, 'Rent NVIDIA GPUs from providers you can measure'),
      el('p', {}, 'Every GPU on GPUnex is benchmarked and scored, every provider has a public reliability record, ' +
        'and you pay per second in USDC.'),
      state.user
        ? el('p', {}, 'Signed in as ', el('strong', {}, state.user.full_name), '. ', el('a', { href: '#/roles' }, 'Your roles'))
        : el('p', {}, el('a', { href: '#/signup', class: 'button' }, 'Create an account'), ' ',
          el('a', { href: '#/login', class: 'button ghost' }, 'Log in')))];
  },

  login() {
    document.title = 'Log in — GPUnex';
    const form = el('form', { class: 'card narrow', novalidate: true, 'aria-labelledby': 'login-h' },
      el('h1', { id: 'login-h' }, 'Log in'),
      field('email', 'E-mail', 'email', { autocomplete: 'username', required: true }),
      field('password', 'Password', 'password', { autocomplete: 'current-password', required: true }),
      el('div', { class: 'form-error', role: 'alert' }),
      el('button', { type: 'submit' }, 'Log in'),
      el('p', { class: 'muted' }, el('a', { href: '#/forgot-password' }, 'Forgot your password?')),
      el('p', { class: 'muted' }, 'No account yet? ', el('a', { href: '#/signup' }, 'Sign up')));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const r = await api('POST', '/v1/auth/login', { email: form.email.value, password: form.password.value });
      if (!r.ok) return showError(form, r.data && r.data.error);
      state.user = r.data.user;
      location.hash = '#/roles';
    });
    return [form];
  },

  signup() {
    document.title = 'Sign up — GPUnex';
    const form = el('form', { class: 'card narrow', novalidate: true, 'aria-labelledby': 'signup-h' },
      el('h1', { id: 'signup-h' }, 'Create your account'),
      field('full_name', 'Full name', 'text', { autocomplete: 'name', required: true }),
      field('email', 'E-mail', 'email', { autocomplete: 'email', required: true }),
      field('password', 'Password (at least 10 characters)', 'password', { autocomplete: 'new-password', required: true }),
      el('div', { class: 'form-error', role: 'alert' }),
      el('button', { type: 'submit' }, 'Sign up'));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const body = { full_name: form.full_name.value, email: form.email.value, password: form.password.value };
      const r = await api('POST', '/v1/auth/signup', body);
      if (!r.ok) return showError(form, r.data && r.data.error);
      const l = await api('POST', '/v1/auth/login', { email: body.email, password: body.password });
      if (!l.ok) return showError(form, l.data && l.data.error);
      state.user = l.data.user;
      location.hash = '#/roles';
    });
    return [form];
  },

  // #/confirm-email/TOKEN: the link mailed to an address, opened (signed in or not).
  async 'confirm-email'(token) {
    document.title = 'Confirm your e-mail — GPUnex';
    const r = await api('POST', '/v1/auth/confirm-email', { token: token || '' });
    if (!r.ok) {
      return [el('section', { class: 'card narrow' }, el('h1', {}, 'This link did not work'),
        el('p', { role: 'alert' }, r.data && r.data.error ? r.data.error.message : 'Something went wrong; try again.'),
        el('p', {}, state.user ? el('a', { href: '#/account' }, 'Send a new link from your account')
          : el('a', { href: '#/login' }, 'Log in to send a new link')))];
    }
    if (state.user && state.user.id === r.data.id) state.user = r.data;
    return [el('section', { class: 'card narrow' }, el('h1', {}, 'E-mail address confirmed'),
      el('p', { role: 'status' }, 'GPUnex now sends your account\'s mail to ', el('strong', {}, r.data.email), '.'),
      el('p', {}, el('a', { href: state.user ? '#/roles' : '#/login', class: 'button' }, state.user ? 'Continue' : 'Log in')))];
  },

  // #/forgot-password: asks for a link that sets a new password. The server answers alike whether or
  // not an account has the address, and so does the page.
  'forgot-password'() {
    document.title = 'Forgot your password — GPUnex';
    const form = el('form', { class: 'card narrow', novalidate: true, 'aria-labelledby': 'forgot-h' },
      el('h1', { id: 'forgot-h' }, 'Forgot your password?'),
      el('p', { class: 'muted' }, 'We mail a link that sets a new one to your account\'s address.'),
      field('email', 'E-mail', 'email', { autocomplete: 'username', required: true }),
      el('div', { class: 'form-error', role: 'alert' }),
      el('button', { type: 'submit' }, 'Mail me a link'),
      el('p', { class: 'muted' }, el('a', { href: '#/login' }, 'Back to log in')));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const r = await api('POST', '/v1/auth/password-reset', { email: form.email.value });
      if (!r.ok) return showError(form, r.data && r.data.error);
      form.replaceChildren(el('h1', { id: 'forgot-h' }, 'Check your mail'),
        el('p', { role: 'status' }, `If an account has the address ${r.data.email}, we mailed it a link that sets ` +
          `a new password. The link works once, for ${r.data.link_valid_minutes} minutes.`),
        el('p', { class: 'muted' }, 'No mail? Look in the spam folder, or check the address and ask again.'),
        el('p', {}, el('a', { href: '#/login' }, 'Back to log in')));
    });
    return [form];
  },

  // #/reset-password/TOKEN: the link from the reset mail; the new password is set with it.
  'reset-password'(token) {
    document.title = 'Set a new password — GPUnex';
    const form = el('form', { class: 'card narrow', novalidate: true, 'aria-labelledby': 'reset-h' },
      el('h1', { id: 'reset-h' }, 'Set a new password'),
      el('p', { class: 'muted' }, 'Every place your account is signed in is signed out.'),
      field('new_password', 'New password (at least 10 characters)', 'password',
        { autocomplete: 'new-password', required: true, minlength: 10 }),
      el('div', { class: 'form-error', role: 'alert' }),
      el('button', { type: 'submit' }, 'Set the password'));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const r = await api('POST', '/v1/auth/password-reset/confirm',
        { token: token || '', new_password: form.new_password.value });
      if (!r.ok) {
        const err = r.data && r.data.error;
        if (err && err.field === 'token') {
          return form.replaceChildren(el('h1', { id: 'reset-h' }, 'This link did not work'),
            el('p', { role: 'alert' }, err.message),
            el('p', {}, el('a', { href: '#/forgot-password', class: 'button' }, 'Ask for a new link')));
        }
        return showError(form, err);
      }
      state.user = null;  // every session of the account ended, this browser's too
      state.flash = `Your password is set. Log in as ${r.data.email} with it.`;
      location.hash = '#/login';
    });
    return [form];
  },

  // #/account: the account's e-mail address, whether it is confirmed, a change of address, and of password.
  async account() {
    document.title = 'Your account — GPUnex';
    if (!state.user) { location.hash = '#/login'; return []; }
    const u = state.user;
    const form = el('form', { class: 'card narrow', novalidate: true, 'aria-labelledby': 'email-h' },
      el('h2', { id: 'email-h' }, 'Change your e-mail address'),
      el('p', { class: 'muted' }, 'We mail a link to the new address; your account keeps the old one until you open it.'),
      field('email', 'New e-mail', 'email', { autocomplete: 'email', required: true }),
      field('password', 'Your password', 'password', { autocomplete: 'current-password', required: true }),
      el('div', { class: 'form-error', role: 'alert' }),
      el('button', { type: 'submit' }, 'Send the link'));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const r = await api('POST', '/v1/me/email', { email: form.email.value, password: form.password.value });
      if (!r.ok) return showError(form, r.data && r.data.error);
      state.flash = `We sent a link to ${r.data.pending_email}. Open it to move your account there.`;
      route();
    });
    const pw = el('form', { class: 'card narrow', id: 'password-form', novalidate: true, 'aria-labelledby': 'password-h' },
      el('h2', { id: 'password-h' }, 'Password'),
      el('p', { class: 'muted' }, 'Every other place you are signed in is signed out; this one stays.'),
      field('current_password', 'Current password', 'password', { autocomplete: 'current-password', required: true }),
      field('new_password', 'New password (at least 10 characters)', 'password', { autocomplete: 'new-password', required: true, minlength: 10 }),
      el('div', { class: 'form-error', role: 'alert' }),
      el('button', { type: 'submit' }, 'Change the password'));
    pw.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const r = await api('POST', '/v1/me/password',
        { current_password: pw.current_password.value, new_password: pw.new_password.value });
      if (!r.ok) return showError(pw, r.data && r.data.error);
      const n = r.data.other_sessions_ended;
      state.flash = `Your password is changed${n ? `; ${n === 1 ? 'one other session was' : `${n} other sessions were`} signed out` : ''}.`;
      route();
    });
    return [el('h1', {}, 'Your account'),
      el('section', { class: 'card narrow', 'aria-labelledby': 'addr-h' }, el('h2', { id: 'addr-h' }, 'E-mail'),
        el('p', { id: 'account-email' }, el('strong', {}, u.email), ' ',
          el('span', { class: 'badge' }, u.email_verified ? 'confirmed' : 'not confirmed')),
        u.pending_email ? el('p', { id: 'pending-email' }, `A link waits to be opened at ${u.pending_email}.`) : ''),
      form, pw];
  },

  roles() {
    document.title = 'Roles — GPUnex';
    if (!state.user) { location.hash = '#/login'; return []; }
    const has = (r) => state.user.roles.includes(r);
    return [
      el('h1', {}, 'Roles'),
      el('p', {}, 'Your account holds these roles:'),
      el('ul', { class: 'roles', 'aria-label': 'Your roles' }, state.user.roles.map((r) => el('li', { class: 'badge' }, r))),
      el('div', { class: 'role-grid' },
        el('section', { class: 'card' },
          el('h2', {}, 'Rent GPUs'),
          el('p', { class: 'muted' }, 'As a customer you can browse benchmarked offers and run containers on them.')),
        el('section', { class: 'card', 'aria-labelledby': 'provide-h' },
          el('h2', { id: 'provide-h' }, 'Provide GPUs'),
          has('provider')
            ? [el('p', {}, 'You are an approved provider.'), el('a', { href: '#/keys', class: 'button' }, 'API keys'), ' ',
              el('a', { href: '#/applications', class: 'button ghost' }, 'Your application')]
            : [el('p', { class: 'muted' }, 'Own NVIDIA GPUs? Apply with your hardware details; reviews take 1–3 business days.'),
              el('a', { href: '#/apply', class: 'button', id: 'apply-button' }, 'Apply to Provide GPUs'), ' ',
              el('a', { href: '#/applications', class: 'button ghost' }, 'Your application')]),
        isReviewer()
          ? el('section', { class: 'card', 'aria-labelledby': 'review-h' },
            el('h2', { id: 'review-h' }, 'Review applications'),
            el('p', { class: 'muted' }, 'Decide on provider applications within 1–3 business days.'),
            el('a', { href: '#/review', class: 'button' }, 'Open the review queue'))
          : ''),
    ];
  },

  // #/apply (a new application, or the open one) and #/apply/ID (edit a draft or one sent back).
  async apply(id) {
    document.title = 'Apply to provide GPUs — GPUnex';
    if (!state.user) { location.hash = '#/login'; return []; }
    let app = null;
    if (id) {
      const r = await api('GET', `/v1/applications/${encodeURIComponent(id)}`);
      if (!r.ok) return notFound(r);
      app = r.data;
    } else {
      const mine = await apiList('/v1/applications');
      const open = mine.ok ? mine.data.items.find((a) => ['draft', 'submitted', 'needs_info'].includes(a.status)) : null;
      if (open) { location.hash = open.editable ? `#/apply/${open.id}` : `#/applications/${open.id}`; return []; }
    }
    if (app && !app.editable) { location.hash = `#/applications/${app.id}`; return []; }
    const catalog = await loadCatalog();
    return applicationForm(app, catalog);
  },

  // #/applications: yours, newest first; #/applications/ID: its status page.
  async applications(id) {
    if (!state.user) { location.hash = '#/login'; return []; }
    if (!id) {
      document.title = 'Your applications — GPUnex';
      const r = await apiList('/v1/applications');
      const items = r.ok ? r.data.items : [];
      if (items.length === 1) { location.hash = `#/applications/${items[0].id}`; return []; }
      return [el('h1', {}, 'Your applications'),
        items.length === 0
          ? el('p', {}, 'You have not applied yet. ', el('a', { href: '#/apply' }, 'Apply to Provide GPUs'))
          : el('ul', {}, items.map((a) => el('li', {}, el('a', { href: `#/applications/${a.id}` }, a.id), ' ',
            statusBadge(a.status), ' created ', fmtTime(a.created_at))))];
    }
    const r = await api('GET', `/v1/applications/${encodeURIComponent(id)}`);
    if (!r.ok) return notFound(r);
    // The key issued at approval is the one with a one-time reveal; its owner may open it here.
    let approvalKey = null;
    if (r.data.status === 'approved' && r.data.user_id === state.user.id && hasRole('provider')) {
      const keys = await apiList('/v1/provider/api-keys');
      if (keys.ok) approvalKey = keys.data.items.find((k) => k.reveal) || null;
    }
    return applicationStatus(r.data, approvalKey);
  },

  async notifications() {
    document.title = 'Notifications — GPUnex';
    if (!state.user) { location.hash = '#/login'; return []; }
    const r = await api('GET', '/v1/notifications');
    const items = r.ok ? r.data.items : [];
    const list = el('ul', { class: 'notifications', 'aria-label': 'Notifications' }, items.map((n) => {
      const li = el('li', { class: n.read_at ? 'card notification' : 'card notification unread' },
        el('h2', {}, n.title, n.read_at ? '' : el('span', { class: 'badge' }, 'new')),
        el('p', {}, n.body),
        el('p', { class: 'muted' }, fmtTime(n.created_at), n.link ? [' · ', el('a', { href: localLink(n.link) }, 'Open')] : ''));
      if (!n.read_at) {
        li.append(el('button', { type: 'button', class: 'ghost', 'aria-label': `Mark "${n.title}" as read`,
          onclick: async () => { await api('POST', `/v1/notifications/${n.id}/read`); route(); } }, 'Mark as read'));
      }
      return li;
    }));
    return [el('h1', {}, 'Notifications'),
      el('p', { class: 'muted', id: 'unread-count' }, `${r.ok ? r.data.unread : 0} unread`),
      items.length ? list : el('p', {}, 'Nothing yet.')];
  },

  // #/keys: the provider's API keys; a new key is shown once, right after it is made.
  async keys() {
    document.title = 'API keys — GPUnex';
    if (!state.user) { location.hash = '#/login'; return []; }
    if (!hasRole('provider')) return [el('h1', {}, 'API keys'), el('p', {}, 'API keys are for approved providers.')];
    const r = await apiList('/v1/provider/api-keys');
    const items = r.ok ? r.data.items : [];
    const fresh = state.freshKey;
    state.freshKey = null;  // shown on this render only
    const errorBox = el('div', { class: 'form-error', role: 'alert' });
    const act = async (method, path, body) => {
      const res = await api(method, path, body);
      if (!res.ok) { errorBox.textContent = res.data && res.data.error ? res.data.error.message : 'Something went wrong.'; return; }
      if (res.data.api_key) state.freshKey = res.data;
      route();
    };
    const rows = items.map((k) => el('tr', {},
      el('td', {}, el('code', {}, `${k.prefix}…`)),
      el('td', {}, fmtTime(k.created_at)),
      el('td', {}, k.last_used_at ? fmtTime(k.last_used_at) : 'never'),
      el('td', {}, k.active ? el('span', { class: 'badge' }, 'active') : `revoked ${fmtTime(k.revoked_at)}`),
      el('td', {}, k.active ? [
        el('button', { type: 'button', class: 'ghost', 'aria-label': `Rotate key ${k.prefix}`,
          onclick: () => act('POST', '/v1/provider/api-keys', { revoke: k.id }) }, 'Rotate'), ' ',
        el('button', { type: 'button', class: 'danger', 'aria-label': `Revoke key ${k.prefix}`,
          onclick: () => act('DELETE', `/v1/provider/api-keys/${k.id}`) }, 'Revoke')] : '')));
    return [el('h1', {}, 'API keys'),
      el('p', { class: 'muted' }, 'The GPUnex agent on each of your hosts authenticates with a provider API key. ' +
        'Install it with ', el('code', {}, installCommand()), '.'),
      fresh ? newKeyPanel(fresh) : '',
      errorBox,
      scrollBox(el('table', { class: 'table', 'aria-label': 'Your API keys' },
        el('thead', {}, el('tr', {}, ['Key', 'Created', 'Last used', 'Status', 'Actions'].map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', {}, rows.length ? rows : el('tr', {}, el('td', { colspan: 5 }, 'No keys yet.'))))),
      el('button', { type: 'button', id: 'create-key', onclick: () => act('POST', '/v1/provider/api-keys') }, 'Create a new API key')];
  },

  // #/review: the queue; #/review/ID: one application and the decision form.
  async review(id) {
    document.title = 'Review — GPUnex';
    if (!state.user) { location.hash = '#/login'; return []; }
    if (!isReviewer()) return [el('h1', {}, 'Review'), el('p', {}, 'The review console is for reviewers.')];
    if (id) return reviewDetail(id);
    const status = new URLSearchParams(location.hash.split('?')[1] || '').get('status') || 'submitted';
    const r = await apiList(`/v1/review/applications?status=${encodeURIComponent(status)}`);
    const items = r.ok ? r.data.items : [];
    const tabs = el('nav', { class: 'tabs', 'aria-label': 'Application status' },
      ['submitted', 'needs_info', 'approved', 'rejected'].map((s) => el('a', {
        href: `#/review?status=${s}`, 'aria-current': s === status ? 'page' : false }, statusText(s))));
    const rows = items.map((a) => el('tr', { class: a.overdue ? 'overdue' : '' },
      el('td', {}, el('a', { href: `#/review/${a.id}` }, a.full_name)),
      el('td', {}, a.company || '—'),
      el('td', {}, a.gpus_text),
      el('td', {}, tierBadge(a.suggested_tier)),
      el('td', {}, a.submitted_at ? fmtTime(a.submitted_at) : '—'),
      el('td', {}, a.age_ms !== undefined ? ageText(a) : '—'),
      el('td', {}, a.expected_review_by ? [fmtDate(a.expected_review_by), ' ',
        a.overdue ? el('span', { class: 'badge danger' }, 'overdue') : ''] : '—')));
    return [el('h1', {}, 'Review queue'),
      el('p', { class: 'muted' }, 'Oldest submission first. We promise applicants an answer within 1–3 business days.'),
      tabs,
      scrollBox(el('table', { class: 'table', 'aria-label': 'Review queue' },
        el('thead', {}, el('tr', {}, ['Applicant', 'Company', 'GPUs', 'Suggested tier', 'Submitted', 'Age', 'Due by']
          .map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', {}, rows.length ? rows : el('tr', {}, el('td', { colspan: 7 }, 'No applications here.'))))),
      ...(hasRole('admin') ? await flaggedProvidersSection() : [])];
  },
};

// Admins: providers whose benchmark checks failed repeatedly (issue 21), newest first.
async function flaggedProvidersSection() {
  const r = await api('GET', '/v1/admin/providers/flagged');
  const items = r.ok ? r.data.providers : [];
  return [el('h2', { id: 'flagged-h' }, 'Providers flagged by benchmark checks'),
    el('p', { class: 'muted' }, 'Repeated failed challenges or telemetry checks (each row says how many, and ' +
      'the server’s review_after sets when a provider is flagged): their GPUs are delisted; ' +
      'look at their machines’ Benchmarks tabs before they are trusted again.'),
    !r.ok ? el('p', { class: 'form-error' }, 'Could not load the flagged providers.')
      : scrollBox(el('table', { class: 'table', 'aria-labelledby': 'flagged-h' },
        el('thead', {}, el('tr', {}, ['Provider', 'Failed checks', 'Flagged', 'Reason']
          .map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', {}, items.length ? items.map((p) => el('tr', {},
          el('td', {}, p.email, el('br'), el('span', { class: 'muted' }, p.provider_id)),
          el('td', {}, String(p.challenge_failures)),
          el('td', {}, fmtTime(new Date(p.flagged_at_ms).toISOString())),
          el('td', {}, p.reason || '')))
          : el('tr', {}, el('td', { colspan: 4 }, 'No provider is flagged.')))))];
}

// ---- helpers shared by the onboarding pages ----

const DAYS = [['mon', 'Monday'], ['tue', 'Tuesday'], ['wed', 'Wednesday'], ['thu', 'Thursday'], ['fri', 'Friday'],
  ['sat', 'Saturday'], ['sun', 'Sunday']];
const STATUS_TEXT = { draft: 'Draft', submitted: 'Submitted — waiting for review', needs_info: 'More information needed',
  approved: 'Approved', rejected: 'Rejected' };
const RULE_TEXT = { ups: 'UPS', availability: '24/7 availability', bandwidth: '≥ 1 Gbit/s both ways',
  commitment: 'Commitment ≥ 6 months', company: 'Company' };

const hasRole = (r) => !!state.user && state.user.roles.includes(r);
const isReviewer = () => hasRole('reviewer') || hasRole('admin');
const statusText = (s) => STATUS_TEXT[s] || s;
const statusBadge = (s) => el('span', { class: `badge status-${s}` }, statusText(s));
const tierText = (t) => (t === 'enterprise' ? 'Enterprise' : t === 'community' ? 'Community' : t);
const tierBadge = (t) => el('span', { class: `badge tier-${t}` }, tierText(t));
const installCommand = () => `curl -fsSL ${location.origin}/agent/install.sh | bash`;

function fmtTime(s) {
  if (!s) return '—';
  return new Date(s).toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }) + ' UTC';
}
// The time of day now, in UTC as every other time on the dashboard: "14:05:09 UTC".
function clockNow() {
  return `${new Date().toLocaleTimeString('en-GB', { timeZone: 'UTC' })} UTC`;
}
function fmtDate(s) {
  return new Date(s).toLocaleDateString('en-GB', { weekday: 'long', day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' });
}
function ageText(a) {
  const hours = Math.floor(a.age_ms / 3600000);
  const span = hours < 48 ? `${hours} h` : `${Math.floor(hours / 24)} days`;
  return `${span} (${a.age_business_days} of 3 business days)`;
}
// Notification links are absolute URLs to this dashboard; keep them in the app.
function localLink(link) {
  const i = link.indexOf('#/');
  return i >= 0 ? link.slice(i) : link;
}
function notFound(r) {
  return [el('h1', {}, 'Not found'),
    el('p', {}, r.data && r.data.error ? r.data.error.message : 'This page does not exist.')];
}

let catalogCache = null;
async function loadCatalog() {
  if (!catalogCache) {
    const r = await apiList('/v1/catalog/gpus');
    if (r.ok) catalogCache = r.data.items;
  }
  return catalogCache || [];
}

// Finds the control a server error names (its JSON path), or the nearest enclosing one:
// gpus[1].availability.windows[0].days[1] falls back to that window's days group.
function controlFor(form, path) {
  let p = path;
  while (p) {
    const e = form.querySelector(`[data-path="${CSS.escape(p)}"]`);
    if (e) return e;
    const m = p.match(/^(.*)(\.[^.[\]]+|\[\d+\])$/);
    if (!m) return null;
    p = m[1];
  }
  return null;
}

// Shows the server's error next to each field its paths name (data-path), or under the form.
function showFieldError(form, err) {
  markInvalid(form, err, (path) => controlFor(form, path));
}

// A labelled control bound to obj[key]; `path` is the JSON path the server uses in its errors.
function bound(path, label, obj, key, { type = 'text', hint, options, ...attrs } = {}) {
  const id = `f-${path.replace(/[^A-Za-z0-9]+/g, '-')}`;
  const describedBy = [`${id}-error`, hint ? `${id}-hint` : null].filter(Boolean).join(' ');
  let control;
  if (options) {
    control = el('select', { id, 'data-path': path, 'aria-describedby': describedBy, ...attrs },
      options.map(([v, t]) => el('option', { value: v }, t)));
  } else if (type === 'textarea') {
    control = el('textarea', { id, 'data-path': path, 'aria-describedby': describedBy, rows: 3, ...attrs });
  } else {
    control = el('input', { id, type, 'data-path': path, 'aria-describedby': describedBy, ...attrs });
  }
  control.value = obj[key] === undefined || obj[key] === null ? '' : String(obj[key]);
  control.addEventListener(options ? 'change' : 'input', () => { obj[key] = control.value; });
  return el('div', { class: 'field' },
    el('label', { for: id }, label),
    hint ? el('div', { id: `${id}-hint`, class: 'hint' }, hint) : '',
    control,
    el('div', { id: `${id}-error`, class: 'field-error' }));
}

// A fieldset that can carry an error for its whole group (e.g. "gpus[0].availability").
function group(path, legend, ...children) {
  const id = `g-${path.replace(/[^A-Za-z0-9]+/g, '-')}`;
  return el('fieldset', { id, 'data-path': path, 'aria-describedby': `${id}-error` },
    el('legend', {}, legend),
    el('div', { id: `${id}-error`, class: 'field-error' }),
    ...children);
}

function radios(path, legend, name, choices, current, onChange) {
  return group(path, legend, el('div', { class: 'choices' }, choices.map(([v, t]) => {
    const id = `r-${name}-${v}`.replace(/[^A-Za-z0-9-]+/g, '-');
    const input = el('input', { type: 'radio', id, name, value: v, checked: current === v });
    input.addEventListener('change', () => { if (input.checked) onChange(v); });
    return el('label', { for: id, class: 'choice' }, input, ' ', t);
  })));
}

// ---- the application form ----

function blankGpu() {
  return { model: '', model_other: '', count: '1', system_ram_gb: '', download_gbps: '', upload_gbps: '',
    always: true, timezone: Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC', windows: [blankWindow()],
    location: { city: '', country: '', region: '' } };
}
function blankWindow() { return { days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '18:00', end: '08:00' }; }

// The server's application (or nothing) as the form's working copy.
function formModel(app) {
  if (!app) {
    return { full_name: state.user.full_name, email: state.user.email, company: '', ups: null, commitment_months: '',
      maintenance_notes: '', gpus: [blankGpu()] };
  }
  return {
    full_name: app.full_name, email: app.email, company: app.company || '', ups: app.ups,
    commitment_months: String(app.commitment_months), maintenance_notes: app.maintenance_notes || '',
    gpus: app.gpus.map((g) => {
      const always = g.availability === '24/7';
      return { model: g.model, model_other: g.model_other || '', count: String(g.count),
        system_ram_gb: String(g.system_ram_gb), download_gbps: String(g.download_gbps), upload_gbps: String(g.upload_gbps),
        always, timezone: always ? blankGpu().timezone : g.availability.timezone,
        windows: always ? [blankWindow()] : g.availability.windows.map((w) => ({ ...w, days: [...w.days] })),
        location: { ...g.location } };
    }),
  };
}

// The working copy as the API's JSON body; empty numbers are left out so the server names them.
function formBody(m) {
  const num = (v) => (v === '' || v === null || v === undefined ? undefined : Number(v));
  const body = {
    full_name: m.full_name, email: m.email,
    gpus: m.gpus.map((g) => ({
      model: g.model, model_other: g.model === 'other' ? g.model_other : undefined,
      count: num(g.count), system_ram_gb: num(g.system_ram_gb), download_gbps: num(g.download_gbps), upload_gbps: num(g.upload_gbps),
      availability: g.always ? '24/7' : { timezone: g.timezone, windows: g.windows.map((w) => ({ days: w.days, start: w.start, end: w.end })) },
      location: g.location,
    })),
    ups: m.ups === null ? undefined : m.ups,
    commitment_months: num(m.commitment_months),
  };
  if (m.company.trim()) body.company = m.company;
  if (m.maintenance_notes.trim()) body.maintenance_notes = m.maintenance_notes;
  return body;
}

function gpuEntry(m, i, catalog, rerender) {
  const g = m.gpus[i];
  const p = `gpus[${i}]`;
  const modelOptions = [['', 'Choose a model…'], ...catalog.map((c) => [c.id, `${c.name} (${c.vram_gib} GB)`]),
    ['other', 'Other (not in the list)']];
  const model = bound(`${p}.model`, 'GPU model', g, 'model', { options: modelOptions });
  const other = bound(`${p}.model_other`, 'Model name (not in the list)', g, 'model_other', { placeholder: 'e.g. NVIDIA GeForce RTX 5090' });
  other.hidden = g.model !== 'other';
  model.querySelector('select').addEventListener('change', (e) => { other.hidden = e.target.value !== 'other'; });

  const schedule = el('div', { class: 'schedule' });
  const drawSchedule = () => {
    schedule.hidden = g.always;
    const tzList = `tz-list`;
    schedule.replaceChildren(
      bound(`${p}.availability.timezone`, 'Time zone', g, 'timezone', { list: tzList, hint: 'An IANA name, e.g. Europe/Berlin' }),
      ...g.windows.map((w, j) => {
        const wp = `${p}.availability.windows[${j}]`;
        const days = group(`${wp}.days`, 'Days', el('div', { class: 'choices' }, DAYS.map(([d, name]) => {
          const id = `f-${wp}-day-${d}`.replace(/[^A-Za-z0-9-]+/g, '-');
          const box = el('input', { type: 'checkbox', id, value: d, checked: w.days.includes(d) });
          box.addEventListener('change', () => {
            w.days = DAYS.map(([x]) => x).filter((x) => (x === d ? box.checked : w.days.includes(x)));
          });
          return el('label', { for: id, class: 'choice' }, box, ' ', name.slice(0, 3));
        })));
        return group(wp, `Window ${j + 1}`, days,
          el('div', { class: 'row' },
            bound(`${wp}.start`, 'Start (HH:MM)', w, 'start', { inputmode: 'numeric', placeholder: '18:00' }),
            bound(`${wp}.end`, 'End (HH:MM)', w, 'end', { inputmode: 'numeric', placeholder: '08:00' })),
          g.windows.length > 1
            ? el('button', { type: 'button', class: 'ghost', onclick: () => { g.windows.splice(j, 1); drawSchedule(); } },
              `Remove window ${j + 1}`)
            : '');
      }),
      el('button', { type: 'button', class: 'ghost', onclick: () => { g.windows.push(blankWindow()); drawSchedule(); } },
        'Add a window'));
  };
  drawSchedule();

  return group(p, `GPU entry ${i + 1}`,
    model, other,
    el('div', { class: 'row' },
      bound(`${p}.count`, 'Number of GPUs', g, 'count', { type: 'number', min: 1, max: 1024, step: 1 }),
      bound(`${p}.system_ram_gb`, 'Host system RAM (GB)', g, 'system_ram_gb', { type: 'number', min: 1, max: 16384, step: 1 })),
    el('div', { class: 'row' },
      bound(`${p}.download_gbps`, 'Download speed (Gbit/s)', g, 'download_gbps', { type: 'number', min: 0.01, max: 400, step: 0.01 }),
      bound(`${p}.upload_gbps`, 'Upload speed (Gbit/s)', g, 'upload_gbps', { type: 'number', min: 0.01, max: 400, step: 0.01 })),
    radios(`${p}.availability`, 'Availability', `avail-${i}`, [['always', '24/7'], ['schedule', 'Weekly schedule']],
      g.always ? 'always' : 'schedule', (v) => { g.always = v === 'always'; drawSchedule(); }),
    schedule,
    group(`${p}.location`, 'Location', el('div', { class: 'row three' },
      bound(`${p}.location.city`, 'City', g.location, 'city'),
      bound(`${p}.location.country`, 'Country', g.location, 'country'),
      bound(`${p}.location.region`, 'Region', g.location, 'region', { placeholder: 'e.g. eu-central' }))),
    m.gpus.length > 1
      ? el('button', { type: 'button', class: 'ghost', onclick: () => { m.gpus.splice(i, 1); rerender(); } },
        `Remove GPU entry ${i + 1}`)
      : '');
}

function applicationForm(app, catalog) {
  const m = formModel(app);
  let id = app ? app.id : null;
  const gpuList = el('div', { class: 'gpu-list' });
  const drawGpus = () => gpuList.replaceChildren(...m.gpus.map((_, i) => gpuEntry(m, i, catalog, drawGpus)));
  drawGpus();
  const tz = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  const status = el('p', { class: 'status', role: 'status' });

  const form = el('form', { class: 'card application', novalidate: true, 'aria-labelledby': 'apply-h' },
    el('h2', { id: 'contact-h' }, 'You'),
    bound('full_name', 'Full legal name', m, 'full_name', { autocomplete: 'name' }),
    bound('email', 'E-mail', m, 'email', { type: 'email', autocomplete: 'email' }),
    bound('company', 'Company (optional)', m, 'company', { autocomplete: 'organization' }),
    el('h2', {}, 'Your GPUs'),
    el('div', { 'data-path': 'gpus', id: 'f-gpus' }, el('div', { id: 'f-gpus-error', class: 'field-error' })),
    gpuList,
    el('button', { type: 'button', class: 'ghost', id: 'add-gpu', onclick: () => { m.gpus.push(blankGpu()); drawGpus(); } },
      'Add another GPU entry'),
    el('h2', {}, 'Infrastructure'),
    radios('ups', 'Uninterruptible power supply (UPS)', 'ups', [['yes', 'Yes'], ['no', 'No']],
      m.ups === null ? null : m.ups ? 'yes' : 'no', (v) => { m.ups = v === 'yes'; }),
    bound('commitment_months', 'Commitment period', m, 'commitment_months',
      { options: [['', 'Choose…'], ['3', '3 months'], ['6', '6 months'], ['12', '12 months'], ['24', '24 months']] }),
    bound('maintenance_notes', 'Maintenance notes (optional)', m, 'maintenance_notes',
      { type: 'textarea', hint: 'Planned maintenance windows, e.g. "Sundays 02:00–04:00 CET".' }),
    el('datalist', { id: 'tz-list' }, tz.map((z) => el('option', { value: z }))),
    el('div', { class: 'form-error', role: 'alert' }),
    el('div', { class: 'actions' },
      el('button', { type: 'button', class: 'ghost', id: 'save-draft' }, 'Save as draft'),
      el('button', { type: 'submit' }, app && app.status === 'needs_info' ? 'Resubmit application' : 'Submit application')),
    status);

  const save = async () => {
    // The form is the whole application: PUT replaces it, so a field emptied here is emptied there too.
    const r = id ? await api('PUT', `/v1/applications/${id}`, formBody(m)) : await api('POST', '/v1/applications', formBody(m));
    if (!r.ok) { showFieldError(form, r.data && r.data.error); return false; }
    id = r.data.id;
    showFieldError(form, null);
    form.querySelector('.form-error').textContent = '';
    return true;
  };
  form.querySelector('#save-draft').addEventListener('click', async () => {
    status.textContent = '';
    if (!(await save())) return;
    status.textContent = `Draft saved at ${clockNow()}.`;
    if (!app) history.replaceState(null, '', `#/apply/${id}`);
  });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    status.textContent = '';
    if (!(await save())) return;
    const r = await api('POST', `/v1/applications/${id}/submit`);
    if (!r.ok) { showFieldError(form, r.data && r.data.error); return; }
    state.flash = 'Your application is submitted.';
    location.hash = `#/applications/${id}`;
  });
  // The clear-on-save above empties the general error too; keep only the real one.
  const intro = app && app.status === 'needs_info'
    ? reviewerNote(app, 'The reviewer needs more information')
    : el('p', { class: 'muted' }, 'Tell us about your hardware. Reviews take 1–3 business days; ' +
      'Enterprise needs UPS, 24/7 availability, ≥ 1 Gbit/s both ways, a commitment of 6 months or more and a company.');
  return [el('h1', { id: 'apply-h' }, app ? 'Edit your application' : 'Apply to provide GPUs'), intro, form];
}

// The latest note from the reviewer that sent the application back (or decided it).
function reviewerNote(app, heading) {
  const h = [...app.history].reverse().find((x) => x.to === app.status);
  return el('section', { class: 'callout', 'aria-labelledby': 'note-h' },
    el('h2', { id: 'note-h' }, heading),
    el('p', { class: 'reviewer-note' }, h ? h.note : ''),
    h ? el('p', { class: 'muted' }, fmtTime(h.at)) : '');
}

function whoText(app, by) {
  if (state.user && by === state.user.id) return 'you';
  if (by === app.user_id) return 'applicant';
  return 'GPUnex reviewer';
}

function historyTable(app) {
  return scrollBox(el('table', { class: 'table', 'aria-label': 'History' },
    el('thead', {}, el('tr', {}, ['When', 'Who', 'From', 'To', 'Note'].map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, app.history.map((h) => el('tr', {},
      el('td', {}, fmtTime(h.at)), el('td', {}, whoText(app, h.by)),
      el('td', {}, h.from ? statusText(h.from) : '—'), el('td', {}, statusText(h.to)), el('td', {}, h.note))))));
}

function availabilityText(a) {
  if (a === '24/7') return '24/7';
  return `${a.timezone}: ` + a.windows.map((w) => `${w.days.join(', ')} ${w.start}–${w.end}`).join('; ');
}

function applicationSummary(app) {
  return [
    el('dl', { class: 'facts' },
      el('dt', {}, 'Applicant'), el('dd', {}, `${app.full_name} <${app.email}>`),
      el('dt', {}, 'Company'), el('dd', {}, app.company || '—'),
      el('dt', {}, 'UPS'), el('dd', {}, app.ups ? 'Yes' : 'No'),
      el('dt', {}, 'Commitment'), el('dd', {}, `${app.commitment_months} months`),
      el('dt', {}, 'Maintenance'), el('dd', {}, app.maintenance_notes || '—')),
    scrollBox(el('table', { class: 'table', 'aria-label': 'GPUs' },
      el('thead', {}, el('tr', {}, ['Model', 'Count', 'RAM', 'Down / up', 'Availability', 'Location']
        .map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, app.gpus.map((g) => el('tr', {},
        el('td', {}, g.model === 'other' ? `Other: ${g.model_other}` : g.model),
        el('td', {}, g.count), el('td', {}, `${g.system_ram_gb} GB`),
        el('td', {}, `${g.download_gbps} / ${g.upload_gbps} Gbit/s`),
        el('td', {}, availabilityText(g.availability)),
        el('td', {}, `${g.location.city}, ${g.location.country} (${g.location.region})`)))))),
  ];
}

function applicationStatus(app, approvalKey) {
  document.title = 'Your application — GPUnex';
  const parts = [el('h1', {}, 'Your provider application'),
    el('dl', { class: 'facts' },
      el('dt', {}, 'Status'), el('dd', { id: 'app-status' }, statusBadge(app.status)),
      el('dt', {}, 'Application'), el('dd', {}, el('code', {}, app.id)),
      el('dt', {}, 'Submitted'), el('dd', {}, app.submitted_at ? fmtTime(app.submitted_at) : 'not yet'),
      app.expected_review_by ? [el('dt', {}, 'Expected review by'),
        el('dd', { id: 'expected-review' }, fmtDate(app.expected_review_by), ' (reviews take 1–3 business days)',
          app.review_overdue ? [' ', el('span', { class: 'badge danger' }, 'overdue')] : '')] : '',
      app.tier ? [el('dt', {}, 'Tier'), el('dd', {}, tierBadge(app.tier))] : '')];
  if (app.status === 'draft') {
    parts.push(el('p', {}, 'This application is a draft. ', el('a', { href: `#/apply/${app.id}`, class: 'button' }, 'Continue editing')));
  }
  if (app.status === 'needs_info') {
    parts.push(reviewerNote(app, 'The reviewer needs more information'),
      el('p', {}, el('a', { href: `#/apply/${app.id}`, class: 'button', id: 'edit-resubmit' }, 'Edit and resubmit')));
  }
  if (app.status === 'approved') {
    parts.push(el('section', { class: 'callout ok', 'aria-labelledby': 'approved-h' },
      el('h2', { id: 'approved-h' }, `Approved as ${tierText(app.tier)} provider`),
      approvalKeyPart(app, approvalKey),
      el('p', {}, 'Install the GPUnex agent on each GPU host:'),
      el('pre', {}, el('code', {}, installCommand())),
      el('p', {}, el('a', { href: '#/keys', class: 'button', id: 'manage-keys' }, 'Manage API keys'))));
  }
  if (app.status === 'rejected') parts.push(reviewerNote(app, 'Your application was not approved'));
  parts.push(el('h2', {}, 'Your application'), ...applicationSummary(app), el('h2', {}, 'History'), historyTable(app));
  return parts;
}

// The key issued at approval: its owner reveals it here once (mailed too only over encrypted mail); after that the
// server keeps only its hash, and this says when it was shown.
function approvalKeyPart(app, k) {
  const mailed = `The approval mail to your account's address has these instructions.`;
  if (!k) {
    return el('p', {}, 'Your first provider API key was shown once on this page. ' +
      'Keys are shown only once; create or rotate keys on the API keys page.');
  }
  const part = el('div', { id: 'approval-key' });
  if (k.reveal.state === 'available') {
    const error = el('div', { class: 'form-error', role: 'alert' });
    const reveal = async () => {
      const r = await api('POST', `/v1/provider/api-keys/${encodeURIComponent(k.id)}/reveal`);
      if (!r.ok) { error.textContent = r.data && r.data.error ? r.data.error.message : 'Something went wrong; try again.'; return; }
      part.replaceChildren(newKeyPanel(r.data, 'Your provider API key'));
    };
    part.append(
      el('p', {}, `Your provider API key ${k.prefix}… is ready. It is shown once, here, until ${fmtDate(k.reveal.expires_at)}: ` +
        `copy it when you open it. ${mailed}`),
      el('button', { type: 'button', id: 'reveal-key', onclick: reveal }, 'Show my API key (shown once)'),
      error);
    return part;
  }
  const lost = 'If you lost it, create a new key on the API keys page and revoke this one.';
  const text = {
    revealed: `was already shown here on ${fmtTime(k.reveal.cleared_at)}; it is never shown again. ${mailed} ${lost}`,
    revoked: 'was revoked before it was shown here. Create a new key on the API keys page.',
    expired: `was not opened here by ${fmtDate(k.reveal.expires_at)}, so it is no longer kept. ${mailed} ${lost}`,
  }[k.reveal.state];
  part.append(el('p', {}, `Your provider API key ${k.prefix}… ${text}`));
  return part;
}

// The key just made (or revealed): shown here once, never again (the server keeps only its hash).
function newKeyPanel(k, heading = 'Your new API key') {
  const box = el('input', { id: 'new-key', type: 'text', readonly: true, value: k.api_key, 'aria-describedby': 'new-key-warning' });
  const copied = el('span', { role: 'status', class: 'muted' });
  return el('section', { class: 'callout ok', 'aria-labelledby': 'new-key-h' },
    el('h2', { id: 'new-key-h' }, heading),
    k.revoked ? el('p', {}, `Key ${k.revoked.prefix}… is revoked.`) : '',
    el('p', { id: 'new-key-warning', class: 'warning' },
      'Copy it now: this is the only time it is shown. Anyone with it can act as your GPU hosts; keep it secret.'),
    el('label', { for: 'new-key' }, 'API key'),
    box,
    el('div', { class: 'actions' },
      el('button', { type: 'button', onclick: async () => {
        box.select();
        try { await navigator.clipboard.writeText(k.api_key); copied.textContent = 'Copied.'; } catch {
          copied.textContent = 'Select the key and copy it (Ctrl+C).';
        }
      } }, 'Copy key'), ' ', copied),
    el('p', {}, 'Then install the agent on each GPU host with this one line, and paste the key when it asks:'),
    el('pre', {}, el('code', {}, installCommand())),
    el('p', { class: 'muted' }, 'Unattended: ',
      el('code', {}, installCommand().replace('| bash', '| GPUNEX_API_KEY=gpx_… bash')), '.'));
}

async function reviewDetail(id) {
  const r = await api('GET', `/v1/applications/${encodeURIComponent(id)}`);
  if (!r.ok) return notFound(r);
  const app = r.data;
  document.title = `Review ${app.full_name} — GPUnex`;
  const rules = el('table', { class: 'table', 'aria-label': 'Tier rules' },
    el('thead', {}, el('tr', {}, ['Enterprise rule', 'Result', 'Reason'].map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, app.tier_reasons.map((x) => el('tr', { class: x.passed ? 'pass' : 'fail' },
      el('td', {}, RULE_TEXT[x.rule] || x.rule),
      el('td', {}, el('span', { class: x.passed ? 'badge' : 'badge danger' }, x.passed ? 'pass' : 'fail')),
      el('td', {}, x.reason || '')))));
  const parts = [
    el('p', {}, el('a', { href: '#/review' }, '← Review queue')),
    el('h1', {}, `Application from ${app.full_name}`),
    el('dl', { class: 'facts' },
      el('dt', {}, 'Status'), el('dd', { id: 'app-status' }, statusBadge(app.status)),
      el('dt', {}, 'Submitted'), el('dd', {}, fmtTime(app.submitted_at)),
      app.expected_review_by ? [el('dt', {}, 'Due by'), el('dd', {}, fmtDate(app.expected_review_by),
        app.review_overdue ? [' ', el('span', { class: 'badge danger' }, 'overdue')] : '')] : '',
      el('dt', {}, 'Suggested tier'), el('dd', { id: 'suggested-tier' }, tierBadge(app.suggested_tier)),
      app.tier ? [el('dt', {}, 'Tier'), el('dd', {}, tierBadge(app.tier))] : ''),
    ...applicationSummary(app),
    el('h2', {}, 'Suggested tier: why'), scrollBox(rules),
    el('h2', {}, 'History'), historyTable(app)];
  if (app.status === 'submitted') parts.push(decisionForm(app));
  return parts;
}

function decisionForm(app) {
  const d = { decision: 'approve', tier: app.suggested_tier, note: '', addModel: false, model: {} };
  const hasOther = app.gpus.some((g) => g.model === 'other');
  const tier = bound('tier', 'Tier', d, 'tier', { options: [['community', 'Community'], ['enterprise', 'Enterprise']] });
  const num = (key, label, step = 0.1) =>
    bound(`add_model.${key}`, label, d.model, key, { type: 'number', min: 0, step });
  const modelFields = el('div', { hidden: true },
    bound('add_model.id', 'Catalog id', d.model, 'id', { placeholder: 'e.g. RTX-5090' }),
    bound('add_model.name', 'Display name', d.model, 'name', { placeholder: 'e.g. NVIDIA GeForce RTX 5090' }),
    bound('add_model.nvml_name_pattern', 'Name NVML reports (optional)', d.model, 'nvml_name_pattern',
      { placeholder: 'e.g. NVIDIA GeForce RTX 5090', hint: 'How the agents\' GPUs are matched to this model; as nvidia-smi prints it.' }),
    el('div', { class: 'row three' },
      num('vram_gib', 'Memory (GiB)', 1),
      num('pcie_gen', 'PCIe generation (optional)', 1),
      bound('add_model.compute_capability', 'Compute capability (optional)', d.model, 'compute_capability',
        { placeholder: 'e.g. 12.0' })),
    el('p', { class: 'muted' }, 'Reference figures (optional): spec peaks; tensor figures dense, without sparsity.'),
    el('div', { class: 'row three' },
      num('mem_bw_gbs', 'Memory bandwidth GB/s', 1),
      num('fp32_tflops', 'FP32 TFLOP/s'),
      num('fp16_tflops', 'FP16 TFLOP/s')),
    el('div', { class: 'row three' },
      num('fp16_tensor_tflops', 'FP16 tensor TFLOP/s'),
      num('bf16_tensor_tflops', 'BF16 tensor TFLOP/s'),
      num('fp8_tensor_tflops', 'FP8 tensor TFLOP/s')),
    el('div', { class: 'row three' },
      num('tdp_w', 'Board power (TDP) W', 1),
      bound('add_model.reference_usdc_per_gpu_hour', 'Reference price, USDC per GPU-hour (optional)', d.model,
        'reference_usdc_per_gpu_hour', { inputmode: 'decimal', placeholder: 'e.g. 1.20',
          hint: 'Recommended to its providers until enough of them list it; without one they set their own.' })));
  // Several different unlisted models: the reviewer says which one this catalog entry is for.
  const others = [...new Set(app.gpus.filter((g) => g.model === 'other').map((g) => g.model_other))];
  if (others.length > 1) {
    d.model.model_other = others[0];
    modelFields.prepend(bound('add_model.model_other', 'For the applicant\'s GPU', d.model, 'model_other',
      { options: others.map((o) => [o, o]) }));
  }
  const addBox = el('input', { type: 'checkbox', id: 'f-add-model' });
  addBox.addEventListener('change', () => { d.addModel = addBox.checked; modelFields.hidden = !addBox.checked; });
  const addModel = hasOther
    ? group('add_model', 'Unlisted GPU model',
      el('p', { class: 'muted' }, `The applicant listed: ${others.join(', ')}.`),
      el('label', { for: 'f-add-model', class: 'choice' }, addBox, ' Add it to the GPU catalog when approving'),
      modelFields)
    : '';
  const approveOnly = [tier, addModel];
  const result = el('div', { role: 'status' });
  const form = el('form', { class: 'card', novalidate: true, 'aria-labelledby': 'decide-h' },
    el('h2', { id: 'decide-h' }, 'Decision'),
    radios('decision', 'Decision', 'decision', [['approve', 'Approve'], ['needs_info', 'Ask for more information'], ['reject', 'Reject']],
      d.decision, (v) => {
        d.decision = v;
        for (const e of approveOnly) if (e) e.hidden = v !== 'approve';
      }),
    ...approveOnly,
    bound('note', 'Note to the applicant', d, 'note', { type: 'textarea', hint: 'Required to ask for information or to reject.' }),
    el('div', { class: 'form-error', role: 'alert' }),
    el('button', { type: 'submit' }, 'Record decision'),
    result);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = { decision: d.decision };
    if (d.note.trim()) body.note = d.note;
    if (d.decision === 'approve') {
      body.tier = d.tier;
      if (d.addModel) {
        // Every field filled in, as typed: the server checks each and names the one at fault.
        const text = ['id', 'name', 'nvml_name_pattern', 'compute_capability', 'model_other', 'reference_usdc_per_gpu_hour'];
        body.add_model = Object.fromEntries(Object.entries(d.model).filter(([, v]) => v !== '')
          .map(([k, v]) => [k, text.includes(k) ? v : Number(v)]));
      }
    }
    const r = await api('POST', `/v1/review/applications/${app.id}/decision`, body);
    if (!r.ok) { showFieldError(form, r.data && r.data.error); return; }
    catalogCache = null;
    const flash = [el('strong', {}, `Decision recorded: ${statusText(r.data.application.status)}.`)];
    if (r.data.provider_id) {
      // The key itself is the applicant's (once on their application page, by mail only over TLS), never the reviewer's.
      flash.push(' ', `Approved as ${tierText(r.data.tier)}: provider ${r.data.provider_id} was created and API key ` +
        `${r.data.api_key_id} was issued (${r.data.api_key_delivery}); the applicant was mailed the install command `,
      el('code', {}, installCommand()), '.');
    }
    state.flash = flash;
    route();
  });
  return form;
}

// Until the account opens the link mailed at signup, GPUnex mails it nothing else: every page says so.
function unconfirmedBanner(pageName) {
  const u = state.user;
  if (!u || (u.email_verified && !u.pending_email) || pageName === 'confirm-email') return '';
  const to = u.pending_email || u.email;
  const said = el('span', { 'aria-live': 'polite' });
  const resend = el('button', { type: 'button', class: 'ghost', onclick: async () => {
    resend.disabled = true;
    const r = await api('POST', '/v1/me/email/confirmation');
    said.textContent = r.ok ? ` Sent again to ${r.data.pending_email}.`
      : ` ${r.data && r.data.error ? r.data.error.message : 'Something went wrong; try again.'}`;
    resend.disabled = false;
  } }, 'Send the link again');
  return el('div', { class: 'banner', id: 'confirm-banner', role: 'region', 'aria-label': 'Address confirmation' },
    u.email_verified ? `Open the link we sent to ${to} to move your account there. `
      : `Confirm your e-mail address: open the link we sent to ${to}. Until then GPUnex sends you no mail. `,
    resend, said);
}

let routeSeq = 0;

async function route() {
  const seq = ++routeSeq;
  const [path] = location.hash.replace(/^#\/?/, '').split('?');
  // #/name/arg/sub: a page, the thing it shows, and a part of it (#/machines/ID/benchmarks, a tab).
  const [name, ...args] = path.split('/');
  const page = pages[name] || pages.home;
  if (state.user) {
    // Roles change under us (approval makes a provider), and a session can end: ask each time.
    const me = await api('GET', '/v1/me');
    state.user = me.ok ? me.data : null;
    const n = state.user ? await api('GET', '/v1/notifications') : null;
    state.unread = n && n.ok ? n.data.unread : 0;
  }
  const nodes = await page(...args.map((a) => (a ? decodeURIComponent(a) : undefined)));
  if (seq !== routeSeq) return;  // a newer navigation won
  updateChrome(pages[name] ? name : 'home');
  const flash = state.flash;
  state.flash = null;
  render(flash ? el('div', { class: 'flash', role: 'status' }, flash) : '', unconfirmedBanner(name), ...nodes);
}

async function boot() {
  const me = await api('GET', '/v1/me');
  state.user = me.ok ? me.data : null;
  state.unread = 0;
  document.getElementById('logout').addEventListener('click', async () => {
    await api('POST', '/v1/auth/logout');
    state.user = null;
    location.hash = '#/login';
    route();
  });
  window.addEventListener('hashchange', route);
  route();
}

// Pages in other files (machines.js, market.js, benchmarks.js) add themselves to `pages`
// when their deferred scripts run; boot waits for all of them.
document.addEventListener('DOMContentLoaded', boot);
