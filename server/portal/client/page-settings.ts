// Settings: the account and its password, the payment processor account (page-processor.js), two-factor authentication (setup with a QR code, backup
// codes shown once, disable) and API keys (listed with their scopes and last use; created, revoked
// or all replaced, a new key shown once). Every change to these asks for the password again: the
// API refuses them without it (and refuses API keys outright).
import { act, api, describeError, portal, type Answer } from './api.js';
import { confirmButton, copyButton, dataTable, facts, formatDate, h, mount, svg } from './dom.js';
import type { PageContext } from './page.js';
import { processorAccountSection } from './page-processor.js';

type TwoFactorStatus = Answer<'/v1/auth/2fa/status', 'get'>;
type TwoFactorSetup = Answer<'/v1/auth/2fa/setup', 'post'>;
type ApiKeyScope = Answer<'/v1/auth/api-keys', 'get'>[number]['scopes'][number];

const SCOPES: [ApiKeyScope, string][] = [
  ['read', 'read: every GET'],
  ['licenses', 'licenses: licenses, redemption codes, marketplace'],
  ['builds', 'builds: uploads, releases, update pushes'],
  ['admin', 'admin: everything an API key may do'],
];

export async function settingsPage(view: HTMLElement, { query }: PageContext): Promise<void> {
  const [me, twoFactor] = await Promise.all([api.get('/v1/auth/me'), api.get('/v1/auth/2fa/status')]);
  const twoFactorCard = h('section', { class: 'card', id: 'two-factor' });
  const apiKeyCard = h('section', { class: 'card', id: 'api-key-card' });
  const processorCard = h('section', { class: 'card', id: 'processor-account' });
  mount(
    view,
    h('h1', null, 'Settings'),
    h(
      'section',
      { class: 'card' },
      h('h2', null, 'Account'),
      facts([
        ['Email', me.email],
        ['Company', me.company_name],
        ['Plan', me.plan === 'pro' ? 'Pro' : 'Free'],
        me.plan_grace_until ? ['Pro ends unless paid', formatDate(me.plan_grace_until)] : null,
        ['Member since', formatDate(me.created_at)],
      ]),
      passwordChange(),
    ),
    processorCard,
    twoFactorCard,
    apiKeyCard,
  );
  renderTwoFactor(twoFactorCard, twoFactor);
  await Promise.all([
    renderApiKeys(apiKeyCard),
    processorAccountSection(processorCard, { result: query.get('payments') }).catch((err) =>
      mount(processorCard, h('h2', null, 'Payment processor'), h('p', { class: 'error', role: 'alert' }, describeError(err))),
    ),
  ]);
}

const passwordInput = (id: string, autocomplete = 'current-password') => h('input', { type: 'password', id, autocomplete, required: true });

function passwordChange(): HTMLElement {
  const current = passwordInput('current-password');
  const next = passwordInput('new-password', 'new-password');
  next.minLength = 10;
  const error = h('p', { class: 'error', role: 'alert', id: 'change-password-error' });
  const notice = h('p', { class: 'hint', role: 'status', id: 'change-password-done' });
  const submit = h('button', { type: 'submit', id: 'change-password' }, 'Change password');
  return h(
    'details',
    null,
    h('summary', null, 'Change your password'),
    h(
      'form',
      {
        onsubmit: async (e: SubmitEvent) => {
          e.preventDefault();
          const res = await act(() => api.post('/v1/auth/password', { password: current.value, new_password: next.value }), {
            button: submit,
            errorEl: error,
            noticeEl: notice,
            notice: 'Password changed. Every other session was signed out.',
          });
          if (res.ok) (e.target as HTMLFormElement).reset();
        },
      },
      h('label', { for: 'current-password' }, 'Current password'),
      current,
      h('label', { for: 'new-password' }, 'New password (at least 10 characters)'),
      next,
      h('div', { class: 'actions' }, submit),
      error,
      notice,
    ),
  );
}

function renderTwoFactor(card: HTMLElement, status: TwoFactorStatus): void {
  const error = h('p', { class: 'error', role: 'alert' });
  if (status.two_factor_enabled) {
    const password = passwordInput('disable-2fa-password');
    const code = h('input', { type: 'text', id: 'disable-2fa-code', autocomplete: 'one-time-code' });
    const submit = h('button', { type: 'submit', class: 'danger' }, 'Turn off 2FA');
    mount(
      card,
      h('h2', null, 'Two-factor authentication'),
      h('p', { id: 'two-factor-status' }, `On. ${status.backup_codes_remaining} backup codes left.`),
      h(
        'details',
        null,
        h('summary', null, 'Turn two-factor authentication off'),
        h(
          'form',
          {
            onsubmit: async (e: SubmitEvent) => {
              e.preventDefault();
              const res = await act(() => api.post('/v1/auth/2fa/disable', { password: password.value, code: code.value }), { button: submit, errorEl: error });
              if (res.ok) renderTwoFactor(card, res.value);
            },
          },
          h('label', { for: 'disable-2fa-password' }, 'Password'),
          password,
          h('label', { for: 'disable-2fa-code' }, 'Code or backup code'),
          code,
          h('div', { class: 'actions' }, submit),
          error,
        ),
      ),
    );
    return;
  }
  const password = passwordInput('setup-2fa-password');
  const start = h('button', { type: 'submit', id: 'setup-2fa' }, 'Set up two-factor authentication');
  mount(
    card,
    h('h2', null, 'Two-factor authentication'),
    h('p', { id: 'two-factor-status' }, 'Off. Sign-ins need only your password.'),
    h(
      'form',
      {
        onsubmit: async (e: SubmitEvent) => {
          e.preventDefault();
          const res = await act(() => api.post('/v1/auth/2fa/setup', { password: password.value }), { button: start, errorEl: error });
          if (res.ok) await renderSetup(card, res.value);
        },
      },
      h('label', { for: 'setup-2fa-password' }, 'Your password, to confirm it is you'),
      password,
      h('div', { class: 'actions' }, start),
      error,
    ),
  );
}

/** The QR code of the provisioning URI, drawn from the module matrix the server computes. */
async function qrCode(text: string): Promise<SVGSVGElement> {
  const { size, modules } = await portal.post<{ size: number; modules: string }>('/portal/qr', { text });
  const quiet = 4;
  let d = '';
  for (let y = 0; y < size; y++) for (let x = 0; x < size; x++) if (modules[y * size + x] === '1') d += `M${x + quiet} ${y + quiet}h1v1h-1z`;
  const full = size + quiet * 2;
  return svg(
    'svg',
    { class: 'qr', id: 'qr-code', viewBox: `0 0 ${full} ${full}`, role: 'img', 'aria-label': 'QR code for your authenticator app', 'shape-rendering': 'crispEdges' },
    svg('rect', { width: full, height: full, fill: '#fff' }),
    svg('path', { d, fill: '#000' }),
  );
}

async function renderSetup(card: HTMLElement, setup: TwoFactorSetup): Promise<void> {
  const secret = new URL(setup.provisioning_uri).searchParams.get('secret') ?? '';
  const code = h('input', { type: 'text', id: 'confirm-2fa-code', autocomplete: 'one-time-code', inputmode: 'numeric' });
  const error = h('p', { class: 'error', role: 'alert', id: 'confirm-2fa-error' });
  const submit = h('button', { type: 'submit', id: 'confirm-2fa' }, 'Turn on 2FA');
  mount(
    card,
    h('h2', null, 'Set up two-factor authentication'),
    h('p', null, '1. Scan this code with your authenticator app.'),
    await qrCode(setup.provisioning_uri),
    h('p', { class: 'hint' }, 'Cannot scan? Enter this key: ', h('span', { class: 'secret', id: 'totp-secret' }, secret)),
    h('details', null, h('summary', null, 'Provisioning URI'), h('p', { class: 'mono', id: 'provisioning-uri' }, setup.provisioning_uri)),
    h('p', null, '2. Keep these backup codes somewhere safe. Each signs you in once if you lose the authenticator. They are shown only now.'),
    h(
      'ol',
      { class: 'codes', id: 'backup-codes' },
      setup.backup_codes.map((c) => h('li', null, c)),
    ),
    copyButton(() => setup.backup_codes.join('\n'), 'Copy backup codes'),
    h(
      'form',
      {
        id: 'confirm-2fa-form',
        onsubmit: async (e: SubmitEvent) => {
          e.preventDefault();
          const res = await act(() => api.post('/v1/auth/2fa/confirm', { code: code.value }), { button: submit, errorEl: error });
          if (res.ok) renderTwoFactor(card, res.value);
        },
      },
      h('label', { for: 'confirm-2fa-code' }, '3. Enter the 6-digit code the app shows'),
      code,
      h('p', { class: 'hint' }, 'Turning 2FA on signs out every other session.'),
      h('div', { class: 'actions' }, submit),
      error,
    ),
  );
}

async function renderApiKeys(card: HTMLElement): Promise<void> {
  const keys = await api.get('/v1/auth/api-keys', { query: { limit: 100 } });
  const error = h('p', { class: 'error', role: 'alert', id: 'api-key-error' });
  const shown = h('div', { id: 'api-key-shown' });
  const password = passwordInput('api-key-password');
  const proof = () => ({ password: password.value });

  /** The new key, shown once, above the refreshed list. */
  const showKey = async (created: Answer<'/v1/auth/api-keys', 'post'>) => {
    await renderApiKeys(card);
    mount(
      card.querySelector<HTMLElement>('#api-key-shown')!,
      h('p', null, `Your new API key "${created.name}". It is shown only now: copy it into your build scripts or secrets store.`),
      h('p', null, h('span', { class: 'secret', id: 'api-key' }, created.api_key)),
      copyButton(() => created.api_key, 'Copy key'),
    );
  };

  const name = h('input', { type: 'text', id: 'new-api-key-name', placeholder: 'what it is for', maxlength: 100 });
  const scopeBoxes = SCOPES.map(([value, label]) => h('label', { class: 'inline' }, h('input', { type: 'checkbox', name: 'scopes', value, checked: value === 'admin' }), label));
  const create = h('button', { type: 'submit', id: 'create-api-key' }, 'Create key');
  const createForm = h(
    'form',
    {
      id: 'new-api-key-form',
      onsubmit: async (e: SubmitEvent) => {
        e.preventDefault();
        const scopes = [...createForm.querySelectorAll<HTMLInputElement>('input[name="scopes"]:checked')].map((i) => i.value as ApiKeyScope);
        const res = await act(() => api.post('/v1/auth/api-keys', { ...proof(), name: name.value || undefined, scopes }), { button: create, errorEl: error });
        if (res.ok) await showKey(res.value);
      },
    },
    h('label', { for: 'new-api-key-name' }, 'Name'),
    name,
    h('div', null, scopeBoxes),
    h('div', { class: 'actions' }, create),
  );

  const rotate = confirmButton(
    'Replace every key with a new one',
    'Every current key stops working at once. Continue?',
    async () => {
      const res = await act(() => api.post('/v1/auth/api-keys/rotate', proof()), { errorEl: error });
      if (res.ok) await showKey(res.value);
    },
    { id: 'rotate-api-key' },
  );

  const list =
    keys.length === 0
      ? h('p', { class: 'muted', id: 'no-api-keys' }, 'No API keys.')
      : dataTable(
          { id: 'api-keys-table' },
          h(
            'thead',
            null,
            h(
              'tr',
              null,
              ['Name', 'Key', 'Scopes', 'Created', 'Last used', ''].map((t) => h('th', null, t)),
            ),
          ),
          h(
            'tbody',
            null,
            keys.map((k) =>
              h(
                'tr',
                { 'data-api-key-id': k.id },
                h('td', null, k.name),
                h('td', { class: 'mono' }, `${k.prefix}_…`),
                h('td', null, k.scopes.join(', ')),
                h('td', null, formatDate(k.created_at)),
                h('td', null, k.last_used_at ? formatDate(k.last_used_at) : 'never'),
                h(
                  'td',
                  null,
                  confirmButton('Revoke', `Revoke "${k.name}" now?`, async () => {
                    const res = await act(() => api.post('/v1/auth/api-keys/{key_id}/revoke', proof(), { path: { key_id: k.id } }), { errorEl: error });
                    if (res.ok) await renderApiKeys(card);
                  }),
                ),
              ),
            ),
          ),
        );

  mount(
    card,
    h('h2', null, 'API keys'),
    h('p', { class: 'hint' }, 'For the CLI, CI and marketplace provisioning (X-API-Key). A key does what its scopes allow; no key can change your password, 2FA or keys.'),
    shown,
    list,
    h('label', { for: 'api-key-password' }, 'Your password, to create, revoke or replace keys'),
    password,
    h('details', null, h('summary', null, 'Create a key'), createForm),
    h('div', { class: 'actions' }, rotate),
    error,
  );
}
