// Sales of one app: the processor account (account-wide), the payment link, redemption code
// batches and the entitlement webhook. Secrets and codes are shown once, when the API answers them.
import { ApiError, act, api, apiUrl, describeError, requestFile, saveBlob, type Answer, type Body } from './api.js';
import { processorAccountSection } from './page-processor.js';
import { confirmButton, copyButton, dataTable, facts, formatDate, h, mount, type Child } from './dom.js';
import { featuresInput } from './features-field.js';
import { metersField } from './meter-fields.js';
import { seatInputs, seatsText } from './seat-fields.js';

type App = Answer<'/v1/apps/{app_id}', 'get'>;
type Plan = Answer<'/v1/auth/me', 'get'>['plan'];
type PaymentLink = Answer<'/v1/apps/{app_id}/payment-link', 'get'>;
type WebhookStatus = Answer<'/v1/apps/{app_id}/entitlement-webhook', 'get'>;

/** A GET that may answer 404 for "none yet": null then. */
async function optional<T>(read: () => Promise<T>): Promise<T | null> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  }
}

export async function salesTab(body: HTMLElement, app: App): Promise<void> {
  const account = h('section', { class: 'card', id: 'processor-account' });
  const link = h('section', { class: 'card', id: 'payment-link' });
  const batches = h('section', { class: 'card', id: 'redemption-batches' });
  const webhook = h('section', { class: 'card', id: 'entitlement-webhook' });
  mount(body, account, link, batches, webhook);
  const { plan } = await api.get('/v1/auth/me');
  const failed = (card: HTMLElement, title: string) => (err: unknown) => mount(card, h('h2', null, title), h('p', { class: 'error', role: 'alert' }, describeError(err)));
  await Promise.all([
    processorAccountSection(account).catch(failed(account, 'Payment processor')),
    linkSection(link, app).catch(failed(link, 'Payment link')),
    batchesSection(batches, app, plan).catch(failed(batches, 'Redemption codes')),
    webhookSection(webhook, app, plan).catch(failed(webhook, 'Entitlement webhook')),
  ]);
}

async function linkSection(card: HTMLElement, app: App): Promise<void> {
  const where = { path: { app_id: app.id } };
  const error = h('p', { class: 'error', role: 'alert', id: 'payment-link-error' });
  const render = (current: PaymentLink | null) => {
    const generate = h(
      'button',
      {
        type: 'button',
        id: 'generate-link',
        onclick: async () => {
          const res = await act(() => api.post('/v1/apps/{app_id}/payment-link', undefined, where), { button: generate, errorEl: error });
          if (res.ok) render(res.value);
        },
      },
      current ? 'Regenerate' : 'Generate payment link',
    );
    const parts: Child[] = [h('h2', null, 'Payment link')];
    if (current) {
      parts.push(
        h(
          'p',
          null,
          h('a', { href: current.url, id: 'payment-link-url', rel: 'noopener', target: '_blank' }, current.url),
          ' ',
          copyButton(() => current.url),
        ),
        h('p', { class: 'hint' }, `Created ${formatDate(current.created_at)}. Regenerating disables this URL.`),
        current.delivering ? null : h('p', { class: 'error' }, 'This link no longer delivers licenses (the processor account was reconnected): regenerate it.'),
      );
    } else {
      parts.push(
        h('p', { class: 'muted', id: 'no-payment-link' }, app.price_id ? 'No payment link: sales are paused.' : 'Save a Price ID in Settings first, then generate a link.'),
      );
    }
    const actions = h('div', { class: 'actions' }, generate);
    if (current) {
      actions.append(
        confirmButton(
          'Remove',
          'Remove the link? Sales pause until you generate a new one.',
          async () => {
            const res = await act(() => api.delete('/v1/apps/{app_id}/payment-link', where), { errorEl: error });
            if (res.ok) render(null);
          },
          { id: 'remove-link' },
        ),
      );
    }
    parts.push(actions, error);
    mount(card, ...parts);
  };
  render(await optional(() => api.get('/v1/apps/{app_id}/payment-link', where)));
}

/** What a plan may sell by code: the free plan creates trial batches only (the API refuses the rest with PLAN_REQUIRED). */
const BATCH_TYPES: Record<Plan, Body<'/v1/apps/{app_id}/redemption-batches', 'post'>['license_type'][]> = {
  pro: ['perpetual', 'trial', 'subscription'],
  free: ['trial'],
};

async function batchesSection(card: HTMLElement, app: App, plan: Plan): Promise<void> {
  const where = { path: { app_id: app.id } };
  const listBatches = () => api.all('/v1/apps/{app_id}/redemption-batches', where);
  let list: Answer<'/v1/apps/{app_id}/redemption-batches', 'get'>;
  try {
    list = await listBatches();
  } catch (err) {
    if (err instanceof ApiError && err.status === 404 && err.code === 'NOT_FOUND') {
      mount(card, h('h2', null, 'Redemption codes'), h('p', { class: 'muted' }, 'Redemption codes are not available on this server yet.'));
      return;
    }
    throw err;
  }
  const fresh = h('div', { id: 'new-batch' });
  const channel = h('input', { type: 'text', id: 'batch-channel', value: 'own_store' });
  const quantity = h('input', { type: 'number', id: 'batch-quantity', min: 1, max: 10000, value: 10 });
  const label = h('input', { type: 'text', id: 'batch-label', maxlength: 200 });
  const type = h(
    'select',
    { id: 'batch-type' },
    BATCH_TYPES[plan].map((t) => h('option', { value: t }, t)),
  );
  const expiry = h('input', { type: 'number', id: 'batch-expiry', min: 0, value: 0 });
  const devices = h('input', { type: 'number', id: 'batch-devices', min: 1, placeholder: `app default (${app.default_device_limit})` });
  const devicesField = h('div', null, h('label', { for: devices.id }, 'Device limit of each license'), devices);
  const seats = seatInputs('batch', { nodeLockedOnly: [devicesField] });
  const features = featuresInput('batch-features');
  const codesExpire = h('input', { type: 'datetime-local', id: 'batch-codes-expire' });
  // No rows: each license takes the app's sold meters when its code is redeemed.
  const meters = metersField('batch', 'Metered features of each license (none: the app’s sold meters)');
  const error = h('p', { class: 'error', role: 'alert', id: 'batch-error' });
  const submit = h('button', { type: 'submit', id: 'batch-submit' }, 'Generate codes');
  const table = h('div', { id: 'batches-list' });

  const revokeError = h('p', { class: 'error', role: 'alert', id: 'batches-error' });
  const codeInput = h('input', { type: 'text', id: 'revoke-code', placeholder: 'LK-XXXX-…' });
  const codeSubmit = h('button', { type: 'submit', class: 'secondary', id: 'revoke-code-submit' }, 'Revoke code');
  const codeNotice = h('p', { class: 'notice', role: 'status', id: 'revoke-code-notice' });
  const revokeForm = h(
    'form',
    {
      id: 'revoke-code-form',
      onsubmit: async (e: SubmitEvent) => {
        e.preventDefault();
        const res = await act(() => api.post('/v1/redemption-codes/{code}/revoke', undefined, { path: { code: codeInput.value.trim() } }), {
          button: codeSubmit,
          errorEl: revokeError,
          noticeEl: codeNotice,
          notice: (r) => `Code ${r.code} revoked.`,
        });
        if (res.ok) {
          codeInput.value = '';
          await reload();
        }
      },
    },
    h('label', { for: 'revoke-code' }, 'Revoke one code'),
    h('div', { class: 'actions' }, codeInput, codeSubmit),
    codeNotice,
  );
  const tableHolder = h('div');
  const renderList = () => {
    mount(
      tableHolder,
      list.length === 0
        ? h('p', { class: 'muted' }, 'No batches yet.')
        : dataTable(
            { id: 'batches-table' },
            h(
              'thead',
              null,
              h(
                'tr',
                null,
                ['Label', 'Channel', 'Seats', 'Codes', 'Available', 'Redeemed', 'Revoked', 'Expired', 'Created', ''].map((t) => h('th', null, t)),
              ),
            ),
            h(
              'tbody',
              null,
              [...list].reverse().map((b) =>
                h(
                  'tr',
                  { 'data-batch-id': b.id },
                  h('td', null, b.label || '—'),
                  h('td', null, b.channel),
                  h('td', { 'data-seats': b.seat_model }, seatsText(b)),
                  h('td', null, String(b.quantity)),
                  h('td', { 'data-count': 'available' }, String(b.counts.available)),
                  h('td', { 'data-count': 'redeemed' }, String(b.counts.redeemed)),
                  h('td', { 'data-count': 'revoked' }, String(b.counts.revoked)),
                  h('td', { 'data-count': 'expired' }, String(b.counts.expired)),
                  h('td', null, formatDate(b.created_at)),
                  h(
                    'td',
                    null,
                    b.counts.available > 0
                      ? confirmButton('Revoke all', 'Revoke every available code of this batch?', async () => {
                          const res = await act(() => api.post('/v1/redemption-batches/{batch_id}/revoke-all', undefined, { path: { batch_id: b.id } }), {
                            errorEl: revokeError,
                            noticeEl: codeNotice,
                            notice: (r) => `${r.revoked} codes revoked.`,
                          });
                          if (res.ok) await reload();
                        })
                      : null,
                  ),
                ),
              ),
            ),
          ),
    );
  };
  mount(table, tableHolder, revokeError, revokeForm);
  const reload = async () => {
    list = await listBatches();
    renderList();
  };

  mount(
    card,
    h('h2', null, 'Redemption codes'),
    h(
      'form',
      {
        id: 'batch-form',
        onsubmit: async (e: SubmitEvent) => {
          e.preventDefault();
          const featureValues = features.parse(error);
          if (!featureValues) return;
          const payload: Body<'/v1/apps/{app_id}/redemption-batches', 'post'> = {
            channel: channel.value.trim(),
            quantity: Number(quantity.value),
            label: label.value,
            license_type: type.value as (typeof BATCH_TYPES)[Plan][number],
            license_expiry_days: Number(expiry.value || 0),
            features: featureValues,
            ...seats.values(),
          };
          const meterValues = meters.values();
          if (Object.keys(meterValues).length) payload.meters = meterValues;
          if (devices.value && !seats.floating()) payload.device_limit = Number(devices.value);
          if (codesExpire.value) payload.codes_expire_at = new Date(codesExpire.value).toISOString();
          // The codes come once, as the server's CSV export (Accept: text/csv): kept in memory until saved.
          const res = await act(() => requestFile('POST', apiUrl('/v1/apps/{app_id}/redemption-batches', where), payload, 'text/csv'), { button: submit, errorEl: error });
          if (!res.ok) return;
          let file: { blob: Blob; name: string } | null = res.value;
          const count = (await file.blob.text()).trim().split(/\r?\n/).length - 1;
          const download = h(
            'button',
            {
              type: 'button',
              id: 'batch-download',
              onclick: () => {
                if (!file) return;
                saveBlob(file.blob, file.name);
                const name = file.name;
                file = null;
                mount(fresh, h('p', { class: 'notice', id: 'batch-downloaded' }, `Saved ${name}. The codes are not shown again.`));
              },
            },
            `Download ${count} codes (CSV)`,
          );
          mount(fresh, h('p', { class: 'notice' }, 'Batch created. Download its codes now: they are shown only once.'), h('div', { class: 'actions' }, download));
          await reload();
        },
      },
      h(
        'div',
        { class: 'grid' },
        h('div', null, h('label', { for: 'batch-channel' }, 'Channel'), channel, h('p', { class: 'hint' }, 'Lowercase label, e.g. appsumo; becomes the license source.')),
        h('div', null, h('label', { for: 'batch-quantity' }, 'Number of codes'), quantity),
        h('div', null, h('label', { for: 'batch-label' }, 'Label'), label),
        h('div', null, h('label', { for: 'batch-type' }, 'License type'), type),
        h('div', null, h('label', { for: 'batch-expiry' }, 'License expiry (days after redemption, 0 = never)'), expiry),
        seats.element,
        devicesField,
        h('div', null, h('label', { for: codesExpire.id }, 'Unredeemed codes expire (optional)'), codesExpire),
        features.element,
        meters.element,
      ),
      plan === 'free' ? h('p', { class: 'hint', id: 'batch-plan-hint' }, 'The free plan creates trial batches; paid codes need the Pro plan.') : null,
      h('div', { class: 'actions' }, submit),
      error,
    ),
    fresh,
    h('h3', null, 'Batches'),
    table,
  );
  renderList();
}

async function webhookSection(card: HTMLElement, app: App, plan: Plan): Promise<void> {
  const where = { path: { app_id: app.id } };
  const read = () => api.get('/v1/apps/{app_id}/entitlement-webhook', where);
  let status: WebhookStatus;
  try {
    status = await read();
  } catch (err) {
    if (err instanceof ApiError && err.status === 404 && err.code === 'NOT_FOUND') {
      mount(card, h('h2', null, 'Entitlement webhook'), h('p', { class: 'muted' }, 'The entitlement webhook is not available on this server yet.'));
      return;
    }
    throw err;
  }
  const error = h('p', { class: 'error', role: 'alert', id: 'webhook-error' });
  const shown = h('div', { id: 'webhook-shown' });
  const secretOnce = (label: string, value: string, id: string) => [
    h('p', null, label),
    h(
      'p',
      null,
      h('span', { class: 'secret', id }, value),
      ' ',
      copyButton(() => value),
    ),
  ];
  const render = (s: WebhookStatus) => {
    const actions = h('div', { class: 'actions' });
    if (!s.enabled) {
      const enable = h(
        'button',
        {
          type: 'button',
          id: 'enable-webhook',
          onclick: async () => {
            const res = await act(() => api.post('/v1/apps/{app_id}/entitlement-webhook', undefined, where), { button: enable, errorEl: error });
            if (!res.ok) return;
            mount(
              shown,
              ...secretOnce('Webhook URL (shown once):', res.value.webhook_url, 'webhook-url'),
              ...secretOnce('Secret, sent as X-MerchantOps-Secret (shown once):', res.value.secret, 'webhook-secret'),
            );
            render(await read());
          },
        },
        'Enable webhook',
      );
      actions.append(enable);
    } else {
      const rotate = confirmButton(
        'Rotate secret',
        'Issue a new secret? The current one keeps working for 24 hours.',
        async () => {
          const res = await act(() => api.post('/v1/apps/{app_id}/entitlement-webhook/rotate-secret', undefined, where), { errorEl: error });
          if (!res.ok) return;
          mount(
            shown,
            ...secretOnce('New secret (shown once):', res.value.secret, 'webhook-secret'),
            h('p', { class: 'hint' }, `The previous secret works until ${formatDate(res.value.previous_secret_expires_at)}.`),
          );
          render(await read());
        },
        { danger: false, id: 'rotate-webhook' },
      );
      const disable = confirmButton(
        'Disable',
        'Disable the webhook? Its URL stops working; enabling again gives a new URL.',
        async () => {
          const res = await act(() => api.delete('/v1/apps/{app_id}/entitlement-webhook', where), { errorEl: error });
          if (!res.ok) return;
          mount(shown);
          render(await read());
        },
        { id: 'disable-webhook' },
      );
      actions.append(rotate, disable);
    }
    mount(
      card,
      h('h2', null, 'Entitlement webhook'),
      s.enabled
        ? facts([
            ['Status', h('span', { id: 'webhook-status' }, 'Enabled')],
            ['Since', formatDate(s.enabled_at)],
            ['Product key', s.product_key ?? 'not set: events are unactionable until you set one in Settings'],
            s.secret_rotated_at ? ['Secret rotated', formatDate(s.secret_rotated_at)] : null,
            s.previous_secret_expires_at ? ['Previous secret works until', formatDate(s.previous_secret_expires_at)] : null,
          ])
        : h('p', { id: 'webhook-status' }, plan === 'pro' ? 'Disabled.' : 'Disabled. Needs the Pro plan.'),
      shown,
      actions,
      error,
    );
  };
  render(status);
}
