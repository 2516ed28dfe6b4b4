// Payouts in the dashboard; they register into app.js's `pages`.
// The Earnings tab's payout history (window.earningsPayoutHistory, which earnings.js calls): each payout
// with its day, amount, method and status, the Solana signature with an explorer link and its
// confirmation, or the bank batch and end-to-end ids, and why one came back.
// #/payouts (admins): the hot wallet's USDC and SOL, every run with its payouts, held runs and why,
// the bank batch of a SEPA run (the operator's rate, the file to download, sent), and each sent bank
// payout marked paid or returned.
'use strict';

(() => {
  const short = (s) => (s.length > 16 ? `${s.slice(0, 8)}…${s.slice(-8)}` : s);
  const STATUS = { awaiting_batch: 'waiting for the bank batch', batched: 'in a bank file', sent: 'sent to the bank',
    pending: 'to be sent', sending: 'on its way', paid: 'paid', returned: 'returned', failed: 'failed' };

  function reference(p) {
    if (p.solana) {
      return el('span', {},
        el('a', { href: p.solana.explorer_url, target: '_blank', rel: 'noopener', class: 'mono',
          title: p.solana.signature }, short(p.solana.signature)),
        ` ${p.solana.confirmation_status || 'not confirmed yet'}`);
    }
    if (p.sepa) {
      return el('span', {}, `batch ${p.sepa.message_id}, end-to-end `, el('span', { class: 'mono' }, p.sepa.end_to_end_id),
        `, ${p.sepa.eur_amount} EUR`);
    }
    return '—';
  }

  function payoutsTable(items, label, extraHead = [], extraCells = () => []) {
    return el('table', { class: 'table', 'aria-label': label },
      el('thead', {}, el('tr', {}, ['Day', 'USDC', 'Method', 'To', 'Status', 'Reference', 'Why', ...extraHead]
        .map((t) => el('th', { scope: 'col' }, t)))),
      el('tbody', {}, items.map((p) => el('tr', { 'data-payout': p.id },
        el('td', {}, p.payout_day), el('td', { class: 'num' }, p.amount), el('td', {}, p.method_text),
        el('td', { class: 'mono', 'data-col': 'to' }, p.destination_text),
        el('td', {}, el('span', { class: `badge payout-${p.status}` }, STATUS[p.status] || p.status)),
        el('td', {}, reference(p)), el('td', {}, p.failure_reason || ''), ...extraCells(p)))));
  }

  window.earningsPayoutHistory = async function earningsPayoutHistory() {
    const r = await apiList('/v1/provider/payouts');
    if (!r.ok) return [el('p', { class: 'error' }, 'The payouts could not be loaded; try again.')];
    if (!r.data.items.length) return [el('p', { class: 'empty' }, 'No payouts yet.')];
    return [scrollBox(payoutsTable(r.data.items, 'Payout history'))];
  };

  async function hotWallet() {
    const r = await api('GET', '/v1/admin/hot-wallet');
    const box = el('section', { class: 'card', 'aria-label': 'Hot wallet' }, el('h2', {}, 'Hot wallet'));
    if (!r.ok) return box.append(el('p', { class: 'error' }, (r.data && r.data.error && r.data.error.message) || 'Not available.')), box;
    if (!r.data.configured) { box.append(el('p', { class: 'muted' }, r.data.reason)); return box; }
    box.append(el('p', {}, 'Address ', el('span', { class: 'mono', id: 'hot-wallet-address' }, r.data.address)));
    if (r.data.error) { box.append(el('p', { class: 'error' }, `The Solana node did not answer: ${r.data.error}`)); return box; }
    box.append(el('p', {}, el('strong', { id: 'hot-wallet-usdc' }, `${r.data.usdc ?? r.data.usdc_base_units} USDC`),
      ' · ', el('span', { id: 'hot-wallet-sol' }, `${(Number(r.data.sol_lamports) / 1e9).toFixed(4)} SOL`)));
    return box;
  }

  function runCard(run, reload) {
    const card = el('section', { class: 'card run', 'aria-label': `Run ${run.payout_day} ${run.method}` },
      el('h2', {}, `${run.payout_day} · ${run.method === 'sepa' ? 'SEPA' : 'USDC on Solana'}`),
      el('p', {}, `${run.payouts.length} payout${run.payouts.length === 1 ? '' : 's'}, ${run.total} USDC · `,
        el('span', { class: `badge run-${run.status}` }, run.status)));
    if (run.held_reason) card.append(el('p', { class: 'error', role: 'status' }, `Held: ${run.held_reason}`));
    const message = el('p', { class: 'form-error', role: 'alert' });
    const act = async (method, path, body) => {
      const r = await api(method, path, body);
      if (!r.ok) { message.textContent = (r.data && r.data.error && r.data.error.message) || `Failed (${r.status}).`; return; }
      await reload();
    };
    const actions = (p) => {
      if (p.status !== 'sent') return [el('td', {})];
      const reason = el('input', { 'aria-label': `Why payout ${p.id} came back`, placeholder: 'reason' });
      return [el('td', {},
        el('button', { type: 'button', onclick: () => act('POST', `/v1/admin/payouts/${p.id}/paid`) }, 'Paid'), ' ',
        reason, ' ',
        el('button', { type: 'button', class: 'ghost',
          onclick: () => act('POST', `/v1/admin/payouts/${p.id}/returned`, { reason: reason.value.trim() }) }, 'Returned'))];
    };
    if (run.payouts.length) card.append(scrollBox(payoutsTable(run.payouts, `Payouts of ${run.payout_day} ${run.method}`, ['Action'], actions)));
    for (const b of run.batches) {
      card.append(el('p', { class: 'batch' }, `Bank file ${b.message_id}: ${b.transfers} transfer(s), ${b.total_eur} EUR at `
        + `${b.eur_per_usdc} EUR/USDC, to execute ${b.execution_date} · ${b.status} `,
      el('a', { href: `/v1/admin/sepa-batches/${b.id}/file`, download: `${b.id}.pain.001.xml` }, 'Download'), ' ',
      b.status === 'sent' ? '' : el('button', { type: 'button', onclick: () => act('POST', `/v1/admin/sepa-batches/${b.id}/sent`) },
        'Mark sent')));
    }
    if (run.method === 'sepa' && run.payouts.some((p) => p.status === 'awaiting_batch')) {
      const rate = el('input', { id: `rate-${run.id}`, name: 'eur_per_usdc', inputmode: 'decimal', placeholder: '0.92' });
      const form = el('form', { class: 'inline', 'aria-label': `Bank batch of ${run.payout_day}` },
        el('label', { for: `rate-${run.id}` }, 'EUR per USDC '), rate, ' ',
        el('button', { type: 'submit' }, 'Make bank file'));
      form.addEventListener('submit', (ev) => { ev.preventDefault(); act('POST', `/v1/admin/payout-runs/${run.id}/sepa-batch`, { eur_per_usdc: rate.value.trim() }); });
      card.append(form);
    }
    card.append(message);
    return card;
  }

  pages.payouts = async function payouts() {
    document.title = 'Payouts · GPUnex';
    if (!state.user) { location.hash = '#/login'; return []; }
    if (!state.user.roles.includes('admin')) return [el('h1', {}, 'Payouts'), el('p', {}, 'Only admins run payouts.')];
    const body = el('div', { id: 'payout-runs' });
    const reload = async () => {
      const r = await apiList('/v1/admin/payout-runs');
      body.replaceChildren(...(!r.ok ? [el('p', { class: 'error' }, 'The runs could not be loaded; try again.')]
        : r.data.items.length ? r.data.items.map((run) => runCard(run, reload))
          : [el('p', { class: 'empty' }, 'No payout runs yet: the first comes on the next payout day.')]));
    };
    await reload();
    return [el('h1', {}, 'Payouts'), await hotWallet(), body];
  };
})();
