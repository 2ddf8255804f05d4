// Settings: the account, two-factor authentication (setup with a QR code, backup codes shown
// once, disable) and the API key (rotated, shown once).
import { act, get, post } from './api.js';
import { confirmButton, copyButton, facts, formatDate, h, mount, svg } from './dom.js';

export async function settingsPage(view) {
  const [me, twoFactor] = await Promise.all([get('/v1/auth/me'), get('/v1/auth/2fa/status')]);
  const twoFactorCard = h('section', { class: 'card', id: 'two-factor' });
  const apiKeyCard = h('section', { class: 'card', id: 'api-key-card' });
  mount(view,
    h('h1', null, 'Settings'),
    h('section', { class: 'card' }, h('h2', null, 'Account'),
      facts([['Email', me.email], ['Company', me.company_name], ['Plan', me.plan === 'pro' ? 'Pro' : 'Free'],
        me.plan_grace_until ? ['Pro ends unless paid', formatDate(me.plan_grace_until)] : null,
        ['Member since', formatDate(me.created_at)]])),
    twoFactorCard, apiKeyCard);
  renderTwoFactor(twoFactorCard, twoFactor);
  renderApiKey(apiKeyCard);
}

function renderTwoFactor(card, status) {
  const error = h('p', { class: 'error', role: 'alert' });
  if (status.two_factor_enabled) {
    const password = h('input', { type: 'password', id: 'disable-2fa-password', autocomplete: 'current-password' });
    const code = h('input', { type: 'text', id: 'disable-2fa-code', autocomplete: 'one-time-code' });
    const submit = h('button', { type: 'submit', class: 'danger' }, 'Turn off 2FA');
    mount(card, h('h2', null, 'Two-factor authentication'),
      h('p', { id: 'two-factor-status' }, `On. ${status.backup_codes_remaining} backup codes left.`),
      h('details', null, h('summary', null, 'Turn two-factor authentication off'),
        h('form', { onsubmit: async (e) => {
          e.preventDefault();
          const res = await act(() => post('/v1/auth/2fa/disable', { password: password.value, code: code.value }), { button: submit, errorEl: error });
          if (res.ok) renderTwoFactor(card, res.value);
        } },
        h('label', { for: 'disable-2fa-password' }, 'Password'), password,
        h('label', { for: 'disable-2fa-code' }, 'Code or backup code'), code,
        h('div', { class: 'actions' }, submit), error)));
    return;
  }
  const start = h('button', { type: 'button', id: 'setup-2fa', onclick: async () => {
    const res = await act(() => post('/v1/auth/2fa/setup'), { button: start, errorEl: error });
    if (res.ok) await renderSetup(card, res.value);
  } }, 'Set up two-factor authentication');
  mount(card, h('h2', null, 'Two-factor authentication'),
    h('p', { id: 'two-factor-status' }, 'Off. Sign-ins need only your password.'),
    h('div', { class: 'actions' }, start), error);
}

/** The QR code of the provisioning URI, drawn from the module matrix the server computes. */
async function qrCode(text) {
  const { size, modules } = await post('/portal/qr', { text });
  const quiet = 4;
  let d = '';
  for (let y = 0; y < size; y++) for (let x = 0; x < size; x++) if (modules[y * size + x] === '1') d += `M${x + quiet} ${y + quiet}h1v1h-1z`;
  const full = size + quiet * 2;
  return svg('svg', { class: 'qr', id: 'qr-code', viewBox: `0 0 ${full} ${full}`, role: 'img', 'aria-label': 'QR code for your authenticator app', 'shape-rendering': 'crispEdges' },
    svg('rect', { width: full, height: full, fill: '#fff' }), svg('path', { d, fill: '#000' }));
}

async function renderSetup(card, setup) {
  const secret = new URL(setup.provisioning_uri).searchParams.get('secret') ?? '';
  const code = h('input', { type: 'text', id: 'confirm-2fa-code', autocomplete: 'one-time-code', inputmode: 'numeric' });
  const error = h('p', { class: 'error', role: 'alert', id: 'confirm-2fa-error' });
  const submit = h('button', { type: 'submit', id: 'confirm-2fa' }, 'Turn on 2FA');
  mount(card, h('h2', null, 'Set up two-factor authentication'),
    h('p', null, '1. Scan this code with your authenticator app.'),
    await qrCode(setup.provisioning_uri),
    h('p', { class: 'hint' }, 'Cannot scan? Enter this key: ', h('span', { class: 'secret', id: 'totp-secret' }, secret)),
    h('details', null, h('summary', null, 'Provisioning URI'), h('p', { class: 'mono', id: 'provisioning-uri' }, setup.provisioning_uri)),
    h('p', null, '2. Keep these backup codes somewhere safe. Each signs you in once if you lose the authenticator. They are shown only now.'),
    h('ol', { class: 'codes', id: 'backup-codes' }, setup.backup_codes.map((c) => h('li', null, c))),
    copyButton(() => setup.backup_codes.join('\n'), 'Copy backup codes'),
    h('form', { id: 'confirm-2fa-form', onsubmit: async (e) => {
      e.preventDefault();
      const res = await act(() => post('/v1/auth/2fa/confirm', { code: code.value }), { button: submit, errorEl: error });
      if (res.ok) renderTwoFactor(card, res.value);
    } },
    h('label', { for: 'confirm-2fa-code' }, '3. Enter the 6-digit code the app shows'), code,
    h('div', { class: 'actions' }, submit), error));
}

function renderApiKey(card) {
  const error = h('p', { class: 'error', role: 'alert' });
  const shown = h('div', { id: 'api-key-shown' });
  const rotate = confirmButton('Generate a new API key', 'The current key stops working at once. Continue?', async () => {
    const res = await act(() => post('/v1/auth/api-keys/rotate'), { errorEl: error });
    if (!res.ok) return;
    mount(shown,
      h('p', null, 'Your new API key. It is shown only now: copy it into your build scripts or secrets store.'),
      h('p', null, h('span', { class: 'secret', id: 'api-key' }, res.value.api_key)),
      copyButton(() => res.value.api_key, 'Copy key'));
  }, { id: 'rotate-api-key' });
  mount(card, h('h2', null, 'API key'),
    h('p', { class: 'hint' }, 'For the CLI, CI and marketplace provisioning (X-API-Key). Generating a key replaces the previous one.'),
    h('div', { class: 'actions' }, rotate), error, shown);
}
