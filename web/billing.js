// Money pages of the dashboard; they register into app.js's `pages`.
// #/balance: the signed-in account's prepaid USDC, how long it lasts at the current spend, and the
// ledger lines behind it. #/credits (admins): add credit to a customer, one ledger transaction per
// payment reference, and the credits made so far.
'use strict';

(() => {
  const usdc = (s) => `${s} USDC`;

  // Puts each invalid field's message beside its input (error.fields, else error.field), the rest
  // under the form; the first invalid input gets the focus.
  function showErrors(form, err) {
    form.querySelectorAll('.field-error').forEach((e) => { e.textContent = ''; });
    form.querySelectorAll('[aria-invalid]').forEach((e) => e.removeAttribute('aria-invalid'));
    const general = form.querySelector('.form-error');
    general.textContent = '';
    if (!err) return;
    const fields = Array.isArray(err.fields) && err.fields.length ? err.fields : [{ field: err.field, message: err.message }];
    let first = null;
    for (const f of fields) {
      const input = f.field && form.querySelector(`[name="${CSS.escape(f.field)}"]`);
      if (!input) { general.textContent += `${general.textContent ? ' ' : ''}${f.message}`; continue; }
      input.setAttribute('aria-invalid', 'true');
      document.getElementById(`${input.id}-error`).textContent = f.message;
      first ||= input;
    }
    if (first) first.focus();
  }

  function input(name, label, extra = {}) {
    const id = `credit-${name}`;
    return el('div', { class: 'field' },
      el('label', { for: id }, label),
      el('input', { id, name, 'aria-describedby': `${id}-error`, ...extra }),
      el('div', { id: `${id}-error`, class: 'field-error', role: 'alert' }));
  }

  pages.balance = async function balance() {
    document.title = 'Balance · GPUnex';
    if (!state.user) { location.hash = '#/login'; return []; }
    const [b, h] = await Promise.all([api('GET', '/v1/billing/balance'), apiList('/v1/billing/history')]);
    if (!b.ok || !h.ok) return [el('h1', {}, 'Balance'), el('p', { class: 'error' }, 'The balance could not be loaded; try again.')];
    const m = b.data.minutes_left;
    const lasts = m === null
      ? 'Nothing is being spent now.'
      : m < 60
        ? `${m < 1 ? 'Used up' : `About ${m} minute${m === 1 ? '' : 's'} left`} at ${usdc(b.data.spend_per_hour)} per hour: ` +
          'your running rentals stop when it is used up.'
        : `About ${b.data.hours_left} ${b.data.hours_left === 1 ? 'hour' : 'hours'} left at ${usdc(b.data.spend_per_hour)} per hour.`;
    // What can be spent: the balance less what running rentals used since their last settlement (the
    // balance itself moves only when they are settled, hourly or at their end).
    const settled = b.data.unsettled === '0.000000' ? ''
      : el('p', { class: 'muted', id: 'balance-settled' }, `Balance ${usdc(b.data.balance)}, less ${usdc(b.data.unsettled)} ` +
        'your running rentals have used since their last settlement.');
    const rows = h.data.items.map((i) => el('tr', {},
      el('td', {}, fmtTime(i.at)), el('td', {}, i.kind), el('td', {}, i.reason), el('td', {}, i.reference),
      el('td', { class: 'num' }, i.amount)));
    return [
      el('h1', {}, 'Balance'),
      el('section', { class: 'card', 'aria-label': 'Balance' },
        el('p', { class: 'big', id: 'balance-amount' }, usdc(b.data.available)),
        settled,
        el('p', { class: 'muted', id: 'balance-lasts' }, lasts)),
      el('section', { id: 'add-credit', 'aria-labelledby': 'add-credit-h' },
        el('h2', { id: 'add-credit-h' }, 'Add credit'),
        el('p', { id: 'payment-instructions', class: 'pre-wrap' }, b.data.payment_instructions
          || 'Ask the operator of this GPUnex how to pay: they add the credit when your payment arrives.'),
        el('p', { class: 'muted' }, `Quote your account's e-mail, ${state.user.email}, with your payment.`)),
      el('h2', {}, 'History'),
      rows.length
        ? el('table', { class: 'table', 'aria-label': 'Balance history' },
          el('thead', {}, el('tr', {}, ['When', 'Kind', 'What', 'Reference', 'USDC'].map((t) => el('th', { scope: 'col' }, t)))),
          el('tbody', {}, rows))
        : el('p', { class: 'empty' }, 'No transactions yet.'),
    ];
  };

  pages.credits = async function credits() {
    document.title = 'Credit · GPUnex';
    if (!state.user) { location.hash = '#/login'; return []; }
    if (!state.user.roles.includes('admin')) return [el('h1', {}, 'Credit'), el('p', {}, 'Only admins add credit.')];
    const result = el('p', { class: 'muted', role: 'status', id: 'credit-result' });
    const form = el('form', { class: 'card', 'aria-label': 'Add credit' },
      input('email', 'Customer e-mail', { type: 'email', autocomplete: 'off' }),
      input('amount', 'Amount (USDC)', { inputmode: 'decimal', placeholder: '100.00' }),
      input('reference', 'Payment reference', { placeholder: 'bank transfer, invoice…' }),
      el('div', { class: 'form-error', role: 'alert' }),
      el('button', { type: 'submit' }, 'Add credit'));
    // One key per filled-in form: a double click or a retry after a lost answer posts it once.
    let key = crypto.randomUUID();
    // Set when a credit was just made (and the form emptied), until the admin types again: the second click
    // of a double click that lands after the first one's answer then submits nothing, rather than an empty
    // form whose field errors would wipe the answer shown.
    let justCredited = false;
    form.addEventListener('input', () => { key = crypto.randomUUID(); justCredited = false; });
    // While a credit is on its way the button is off: a second click would race the first and
    // its answer ("already credited", or "in progress") would overwrite the first one's.
    const submit = form.querySelector('button[type=submit]');
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      if (submit.disabled || justCredited) return;
      const body = Object.fromEntries(['email', 'amount', 'reference'].map((n) => [n, form.elements[n].value.trim()]));
      submit.disabled = true;
      let r;
      try { r = await api('POST', '/v1/admin/credits', body, { 'Idempotency-Key': key }); } finally { submit.disabled = false; }
      if (!r.ok) { showErrors(form, r.data && r.data.error); result.textContent = ''; return; }
      showErrors(form, null);
      result.textContent = r.data.repeated
        ? `Already credited: ${usdc(r.data.amount)} to ${r.data.email} (transaction ${r.data.transaction_id}). Balance ${usdc(r.data.balance)}.`
        : `Credited ${usdc(r.data.amount)} to ${r.data.email} (transaction ${r.data.transaction_id}). Balance ${usdc(r.data.balance)}.`;
      form.reset();
      key = crypto.randomUUID();
      justCredited = true;
      await showCredits();
    });
    // The credits made so far, newest first (GET /v1/admin/credits: its first page), again after each credit.
    const recent = el('div', { id: 'credits-recent' });
    async function showCredits() {
      const made = await api('GET', '/v1/admin/credits?limit=50');
      recent.replaceChildren(!made.ok ? el('p', { class: 'error' }, 'The credits could not be loaded.')
        : made.data.items.length === 0 ? el('p', { class: 'empty' }, 'No credits yet.')
          : scrollBox(el('table', { class: 'table', id: 'credits-list', 'aria-label': 'Recent credits' },
            el('thead', {}, el('tr', {}, ['When', 'Customer', 'USDC', 'Reference', 'By'].map((t) => el('th', { scope: 'col' }, t)))),
            el('tbody', {}, made.data.items.map((c) => el('tr', { 'data-id': c.id },
              el('td', {}, fmtTime(c.at)), el('td', {}, c.email), el('td', { class: 'num' }, c.amount),
              el('td', {}, c.reference), el('td', {}, c.by)))))));
    }
    await showCredits();
    return [el('h1', {}, 'Credit'),
      el('p', { class: 'muted' }, 'Adds prepaid USDC to a customer\'s balance when their payment has arrived. The same reference is never credited twice.'),
      form, result, el('h2', {}, 'Recent credits'), recent];
  };
})();
