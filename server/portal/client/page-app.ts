// One app: its settings (and deletion), builds, update push and sales, as tabs.
import { act, api, type Answer, type Body } from './api.js';
import { copyButton, h, mount, type Child } from './dom.js';
import { buildsTab } from './page-builds.js';
import { checkedValues, platformBoxes } from './page-apps.js';
import { salesTab } from './page-sales.js';
import { metersField } from './meter-fields.js';
import type { PageContext } from './page.js';
import { seatInputs } from './seat-fields.js';

type App = Answer<'/v1/apps/{app_id}', 'get'>;
type AppChanges = Body<'/v1/apps/{app_id}', 'put'>;
import { updatesTab } from './page-updates.js';

const TABS = [
  ['settings', 'Settings'],
  ['builds', 'Builds'],
  ['updates', 'Updates'],
  ['sales', 'Sales'],
];

export async function appPage(view: HTMLElement, { params }: PageContext): Promise<void> {
  const [appId = '', tab = 'settings'] = params;
  const app = await api.get('/v1/apps/{app_id}', { path: { app_id: appId } });
  const body = h('div', { id: `tab-${tab}` });
  mount(
    view,
    h('p', { class: 'hint' }, h('a', { href: '#/apps' }, 'Apps'), ' / ', app.name),
    h('h1', { id: 'app-name' }, app.name),
    h(
      'nav',
      { class: 'tabs' },
      TABS.map(([key, label]) => h('a', { href: `#/apps/${app.id}/${key}`, class: key === tab ? 'active' : '' }, label)),
      h('a', { href: `#/licenses?app_id=${encodeURIComponent(app.id)}` }, 'Licenses'),
    ),
    body,
  );
  if (tab === 'builds') await buildsTab(body, app);
  else if (tab === 'updates') await updatesTab(body, app);
  else if (tab === 'sales') await salesTab(body, app);
  else settingsTab(body, app);
}

const numberOrNull = (input: HTMLInputElement) => (input.value.trim() === '' ? null : Number(input.value));

function settingsTab(body: HTMLElement, app: App): void {
  const field = (id: string, label: string, input: HTMLElement, hint?: string): Child[] => [h('label', { for: id }, label), input, hint ? h('p', { class: 'hint' }, hint) : null];
  const name = h('input', { type: 'text', id: 'app-name-input', value: app.name });
  const protection = h(
    'select',
    { id: 'app-protection' },
    ['none', 'standard', 'hardened'].map((v) => h('option', { value: v, selected: app.protection_level === v }, v)),
  );
  const priceId = h('input', { type: 'text', id: 'app-price-id', value: app.price_id ?? '', placeholder: 'price_…' });
  const delivery = h(
    'select',
    { id: 'app-delivery-mode' },
    h('option', { value: 'all', selected: app.delivery_mode === 'all' }, 'All READY builds'),
    h('option', { value: 'released_only', selected: app.delivery_mode === 'released_only' }, 'Released builds only'),
  );
  const releaseCurrent = h('input', { type: 'checkbox', id: 'app-release-current' });
  const productKey = h('input', { type: 'text', id: 'app-product-key', value: app.product_key ?? '' });
  const trials = h('input', { type: 'number', id: 'app-trials', min: 0, max: 100, value: app.trials_per_computer });
  const deviceLimit = h('input', { type: 'number', id: 'app-device-limit', min: 1, value: app.default_device_limit });
  const grace = h('input', { type: 'number', id: 'app-grace', min: 1, max: 8760, value: app.offline_grace_hours });
  const deactivations = h('input', { type: 'number', id: 'app-deactivations', min: 1, max: 1000, value: app.app_deactivations_per_30_days });
  const downloadLimit = h('input', { type: 'number', id: 'app-download-limit', min: 1, value: app.download_limit ?? '', placeholder: 'default allowance' });
  const soldSeats = seatInputs('app-sold', {
    names: { seat_model: 'sold_seat_model', max_concurrent: 'sold_max_concurrent', lease_ttl_minutes: 'sold_lease_ttl_minutes' },
    current: app,
  });
  const soldMeters = metersField('app-sold', 'Metered features of each license sold', app.sold_meters ?? {});
  const error = h('p', { class: 'error', role: 'alert', id: 'app-settings-error' });
  const notice = h('p', { class: 'notice', role: 'status', id: 'app-settings-notice' });
  const submit = h('button', { type: 'submit', id: 'app-settings-save' }, 'Save settings');
  let current = app;
  const form = h(
    'form',
    {
      id: 'app-settings-form',
      onsubmit: async (e: SubmitEvent) => {
        e.preventDefault();
        const wanted: AppChanges = {
          name: name.value.trim(),
          platforms: checkedValues(form, 'app-platforms') as AppChanges['platforms'],
          protection_level: protection.value as AppChanges['protection_level'],
          price_id: priceId.value.trim() === '' ? null : priceId.value.trim(),
          delivery_mode: delivery.value as AppChanges['delivery_mode'],
          product_key: productKey.value.trim() === '' ? null : productKey.value.trim(),
          trials_per_computer: Number(trials.value),
          default_device_limit: Number(deviceLimit.value),
          offline_grace_hours: Number(grace.value),
          app_deactivations_per_30_days: Number(deactivations.value),
          download_limit: numberOrNull(downloadLimit),
          ...soldSeats.named(),
          sold_meters: soldMeters.values(),
        };
        // Only what changed is sent: PUT changes the fields it names. The sold seat model goes
        // whole (the API takes its seats only with it).
        const changes: Record<string, unknown> = {};
        const before = current as Record<string, unknown>;
        for (const [key, value] of Object.entries(wanted)) if (JSON.stringify(value) !== JSON.stringify(before[key])) changes[key] = value;
        if (Object.values(soldSeats.names).some((key) => key in changes)) Object.assign(changes, soldSeats.named());
        if ('delivery_mode' in changes && releaseCurrent.checked) changes.release_current = true;
        if (Object.keys(changes).length === 0) {
          notice.textContent = 'Nothing changed.';
          return;
        }
        const res = await act(() => api.put('/v1/apps/{app_id}', changes as AppChanges, { path: { app_id: app.id } }), {
          button: submit,
          errorEl: error,
          noticeEl: notice,
          notice: 'Saved.',
        });
        if (res.ok) {
          current = res.value;
          // Gone when the user moved to another page while the save was on its way.
          const heading = document.getElementById('app-name');
          if (heading) heading.textContent = current.name;
        }
      },
    },
    h(
      'div',
      { class: 'grid' },
      h(
        'div',
        null,
        field('app-name-input', 'Name', name),
        h('label', null, 'Platforms'),
        platformBoxes('app-platforms', app.platforms),
        field('app-protection', 'Protection', protection, 'standard: license gate and update check bundled in; hardened: also minified and integrity-checked.'),
        field('app-delivery-mode', 'Delivery mode', delivery, 'Released only: customers get only builds you released.'),
        h('label', { class: 'inline' }, releaseCurrent, 'Release the pushed build too, if it is not released'),
        field('app-price-id', 'Price ID', priceId, 'The Stripe Price this app sells at; one app per Price.'),
      ),
      h(
        'div',
        null,
        field('app-product-key', 'Product key', productKey, 'Must equal the `app` field of entitlement webhook events.'),
        field('app-trials', 'Trials per computer', trials),
        field('app-device-limit', 'Default device limit', deviceLimit),
        field('app-grace', 'Offline grace (hours)', grace),
        field('app-deactivations', 'Deactivations from the app', deactivations, 'Per license in any 30 days (license.deactivate() in the SDK); your resets are not counted.'),
        field('app-download-limit', 'Download limit', downloadLimit, 'Empty: the default allowance.'),
        h('h3', null, 'Licenses sold'),
        h('p', { class: 'hint' }, 'What checkout, the entitlement webhook and marketplace provisioning mint; trials stay node-locked.'),
        soldSeats.element,
        soldMeters.element,
        h('label', null, 'Fingerprint salt'),
        h(
          'p',
          null,
          h('span', { class: 'secret', id: 'app-salt' }, app.fingerprint_salt),
          ' ',
          copyButton(() => app.fingerprint_salt),
        ),
        h('p', { class: 'hint' }, 'Pass it to the runtime SDK.'),
        h('label', null, 'App ID'),
        h('p', { class: 'mono', id: 'app-id' }, app.id),
      ),
    ),
    h('div', { class: 'actions' }, submit),
    error,
    notice,
  );

  mount(body, h('section', { class: 'card' }, form), deleteCard(app));
}

function deleteCard(app: App): HTMLElement {
  const typed = h('input', { type: 'text', id: 'delete-app-confirm', autocomplete: 'off' });
  const error = h('p', { class: 'error', role: 'alert', id: 'delete-app-error' });
  const submit = h('button', { type: 'submit', class: 'danger', id: 'delete-app', disabled: true }, 'Delete this app');
  typed.addEventListener('input', () => {
    submit.disabled = typed.value !== app.name;
  });
  return h(
    'section',
    { class: 'card danger-zone' },
    h('h2', null, 'Delete app'),
    h('p', null, 'Deletes the app with all its builds and licenses. Customers’ licenses stop working. This cannot be undone.'),
    h(
      'form',
      {
        onsubmit: async (e: SubmitEvent) => {
          e.preventDefault();
          if (typed.value !== app.name) return;
          const res = await act(() => api.delete('/v1/apps/{app_id}', { path: { app_id: app.id } }), { button: submit, errorEl: error });
          if (res.ok) location.hash = '#/apps';
          else submit.disabled = typed.value !== app.name;
        },
      },
      h('label', { for: 'delete-app-confirm' }, 'Type the app name, ', h('strong', null, app.name), ', to confirm'),
      typed,
      h('div', { class: 'actions' }, submit),
      error,
    ),
  );
}
