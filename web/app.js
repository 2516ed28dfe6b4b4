// GPUnex dashboard: a small hash-routed app over the public REST API.
'use strict';

const state = { user: null };

function csrfToken() {
  const m = document.cookie.match(/(?:^|;\s*)gpunex_csrf=([^;]+)/);
  return m ? decodeURIComponent(m[1]) : '';
}

// Calls the API with the session cookie; mutations carry the CSRF header.
async function api(method, path, body) {
  const headers = {};
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

// Shows a server error next to the field it names, or under the form.
function showError(form, err) {
  form.querySelectorAll('.field-error').forEach((e) => { e.textContent = ''; });
  form.querySelectorAll('[aria-invalid]').forEach((e) => e.removeAttribute('aria-invalid'));
  const general = form.querySelector('.form-error');
  general.textContent = '';
  const f = err && err.field ? form.querySelector(`[name="${CSS.escape(err.field)}"]`) : null;
  if (f) {
    f.setAttribute('aria-invalid', 'true');
    form.querySelector(`#${f.id}-error`).textContent = err.message;
    f.focus();
  } else {
    general.textContent = err ? err.message : 'Something went wrong; try again.';
  }
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
            ? el('p', {}, 'You are an approved provider.')
            : [el('p', { class: 'muted' }, 'Own NVIDIA GPUs? Apply with your hardware details; reviews take 1–3 business days.'),
              el('a', { href: '#/apply', class: 'button', id: 'apply-button' }, 'Apply to Provide GPUs')])),
    ];
  },

  apply() {
    document.title = 'Apply to provide GPUs — GPUnex';
    if (!state.user) { location.hash = '#/login'; return []; }
    return [el('h1', {}, 'Apply to provide GPUs'),
      el('p', { class: 'card' }, 'The provider application form opens here.')];
  },
};

async function route() {
  const name = (location.hash.replace(/^#\/?/, '').split('/')[0]) || 'home';
  const page = pages[name] || pages.home;
  updateChrome(name);
  render(...page());
}

async function boot() {
  const me = await api('GET', '/v1/me');
  state.user = me.ok ? me.data : null;
  document.getElementById('logout').addEventListener('click', async () => {
    await api('POST', '/v1/auth/logout');
    state.user = null;
    location.hash = '#/login';
    route();
  });
  window.addEventListener('hashchange', route);
  route();
}

boot();
