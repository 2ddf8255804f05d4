// Licenses: a searchable, filterable, paginated list; creating one; one license with its devices,
// revoke, reset devices, its metered features, its deactivation history and its own update push.
import { act, api, type Answer, type Body } from './api.js';
import { badge, confirmButton, copyButton, dataTable, facts, formatDate, h, mount } from './dom.js';
import { featuresInput } from './features-field.js';
import { metersCard } from './license-meters.js';
import { metersField } from './meter-fields.js';
import type { PageContext } from './page.js';
import { adoptionChart, buildOptions, pushFacts } from './page-updates.js';
import { seatInputs, seatsText } from './seat-fields.js';

type App = Answer<'/v1/apps', 'get'>[number];
type License = Answer<'/v1/licenses/{license_id}', 'get'>;
type LicenseStatus = NonNullable<NonNullable<Parameters<typeof api.list<'/v1/licenses'>>[1]>['query']>['status'];
type Device = License['devices'][number];
type LicensePush = Answer<'/v1/licenses/{license_id}/push-update', 'get'>['push'];

const PAGE_SIZE = 20;
const DEACTIVATION_SOURCES: Record<string, string> = { app: 'By the app', developer: 'Reset by you', store_reset: 'Reset by the store', revoked: 'License revoked by the store' };
const STATUSES: [LicenseStatus | '', string][] = [
  ['', 'Any status'],
  ['active', 'Active'],
  ['revoked', 'Revoked'],
  ['expired', 'Expired'],
  ['demo', 'Demo'],
];

function hashWith(query: URLSearchParams, changes: Record<string, string | number>): string {
  const next = new URLSearchParams(query);
  for (const [k, v] of Object.entries(changes)) {
    if (v === '' || v === null || v === undefined) next.delete(k);
    else next.set(k, String(v));
  }
  const qs = next.toString();
  return `#/licenses${qs ? `?${qs}` : ''}`;
}

export async function licensesPage(view: HTMLElement, { query }: PageContext): Promise<void> {
  const offset = Number(query.get('offset') ?? 0) || 0;
  const apiQuery = {
    limit: PAGE_SIZE,
    offset,
    app_id: query.get('app_id') || undefined,
    status: (query.get('status') || undefined) as LicenseStatus,
    q: query.get('q') || undefined,
  };
  const [apps, page] = await Promise.all([api.all('/v1/apps'), api.list('/v1/licenses', { query: apiQuery })]);
  const appName = new Map(apps.map((a) => [a.id, a.name]));

  const appFilter = h(
    'select',
    { id: 'filter-app' },
    h('option', { value: '' }, 'All apps'),
    apps.map((a) => h('option', { value: a.id, selected: query.get('app_id') === a.id }, a.name)),
  );
  const statusFilter = h(
    'select',
    { id: 'filter-status' },
    STATUSES.map(([v, label]) => h('option', { value: v, selected: (query.get('status') ?? '') === v }, label)),
  );
  const search = h('input', { type: 'search', id: 'filter-q', value: query.get('q') ?? '', placeholder: 'Key, license id or email' });
  const filters = h(
    'form',
    {
      class: 'filters',
      id: 'license-filters',
      onsubmit: (e: SubmitEvent) => {
        e.preventDefault();
        location.hash = hashWith(query, { app_id: appFilter.value, status: statusFilter.value, q: search.value.trim(), offset: '' });
      },
    },
    h('div', null, h('label', { for: 'filter-q' }, 'Search'), search),
    h('div', null, h('label', { for: 'filter-app' }, 'App'), appFilter),
    h('div', null, h('label', { for: 'filter-status' }, 'Status'), statusFilter),
    h('div', null, h('button', { type: 'submit', id: 'filter-apply' }, 'Apply')),
  );
  for (const select of [appFilter, statusFilter]) select.addEventListener('change', () => filters.requestSubmit());

  const total = page.total;
  const rows = page.data;
  const pager = h(
    'div',
    { class: 'pager' },
    h('span', { id: 'license-count' }, total === 0 ? 'No licenses' : `${offset + 1}–${offset + rows.length} of ${total}`),
    offset > 0 ? h('a', { href: hashWith(query, { offset: Math.max(0, offset - PAGE_SIZE) || '' }), id: 'page-prev' }, '← Previous') : null,
    offset + rows.length < total ? h('a', { href: hashWith(query, { offset: offset + PAGE_SIZE }), id: 'page-next' }, 'Next →') : null,
  );

  mount(
    view,
    h('h1', null, 'Licenses'),
    h('section', { class: 'card' }, filters),
    h(
      'section',
      { class: 'card' },
      rows.length === 0
        ? h('p', { class: 'muted' }, 'No license matches.')
        : dataTable(
            { id: 'licenses-table' },
            h(
              'thead',
              null,
              h(
                'tr',
                null,
                ['Key', 'App', 'Email', 'Status', 'Type', 'Seats', 'Source', 'Created'].map((t) => h('th', null, t)),
              ),
            ),
            h(
              'tbody',
              null,
              rows.map((l) =>
                h(
                  'tr',
                  { 'data-license-id': l.license_id },
                  h('td', null, h('a', { class: 'mono', href: `#/licenses/${l.license_id}` }, l.license_key)),
                  h('td', null, appName.get(l.app_id) ?? l.app_id),
                  h('td', null, l.email ?? '—'),
                  h('td', null, badge(l.status)),
                  h('td', null, l.license_type),
                  h('td', { 'data-seats': l.seat_model }, seatsText(l)),
                  h('td', null, l.source),
                  h('td', null, formatDate(l.created_at)),
                ),
              ),
            ),
          ),
      pager,
    ),
    createCard(apps, query.get('app_id')),
  );
}

function createCard(apps: App[], preselected: string | null): HTMLElement {
  const app = h(
    'select',
    { id: 'new-license-app' },
    apps.map((a) => h('option', { value: a.id, selected: a.id === preselected }, a.name)),
  );
  const email = h('input', { type: 'email', id: 'new-license-email', placeholder: 'optional' });
  const type = h(
    'select',
    { id: 'new-license-type' },
    ['perpetual', 'trial', 'subscription'].map((t) => h('option', { value: t }, t)),
  );
  const devices = h('input', { type: 'number', id: 'new-license-devices', min: 1, placeholder: 'app default' });
  const devicesField = h('div', null, h('label', { for: 'new-license-devices' }, 'Device limit'), devices);
  const seats = seatInputs('new-license', { nodeLockedOnly: [devicesField] });
  const expiry = h('input', { type: 'number', id: 'new-license-expiry', min: 1, placeholder: 'never (trials: 14 days from first run)' });
  const downloads = h('input', { type: 'number', id: 'new-license-downloads', min: 1, max: 1000000, placeholder: 'default allowance' });
  const features = featuresInput('new-license-features');
  const meters = metersField('new-license');
  const error = h('p', { class: 'error', role: 'alert', id: 'new-license-error' });
  const created = h('div', { id: 'new-license-created' });
  const submit = h('button', { type: 'submit', id: 'new-license-submit', disabled: apps.length === 0 }, 'Create license');
  return h(
    'section',
    { class: 'card' },
    h('h2', null, 'Create a license'),
    apps.length === 0 ? h('p', { class: 'muted' }, 'Register an app first.') : null,
    h(
      'form',
      {
        id: 'new-license-form',
        onsubmit: async (e: SubmitEvent) => {
          e.preventDefault();
          const featureValues = features.parse(error);
          if (!featureValues) return;
          const body: Body<'/v1/licenses', 'post'> = {
            app_id: app.value,
            license_type: type.value as NonNullable<Body<'/v1/licenses', 'post'>['license_type']>,
            features: featureValues,
            meters: meters.values(),
            ...seats.values(),
          };
          if (email.value.trim()) body.email = email.value.trim();
          if (devices.value && !seats.floating()) body.device_limit = Number(devices.value);
          if (expiry.value) body.expiry_days = Number(expiry.value);
          if (downloads.value) body.download_limit = Number(downloads.value);
          const res = await act(() => api.post('/v1/licenses', body), { button: submit, errorEl: error });
          if (!res.ok) return;
          const l = res.value;
          mount(
            created,
            h(
              'p',
              { class: 'notice' },
              'Created: ',
              h('a', { class: 'mono', id: 'new-license-key', href: `#/licenses/${l.license_id}` }, l.license_key),
              ' ',
              copyButton(() => l.license_key),
            ),
          );
        },
      },
      h(
        'div',
        { class: 'grid' },
        h('div', null, h('label', { for: 'new-license-app' }, 'App'), app),
        h('div', null, h('label', { for: 'new-license-type' }, 'Type'), type),
        h('div', null, h('label', { for: 'new-license-email' }, 'Customer email'), email),
        seats.element,
        devicesField,
        h('div', null, h('label', { for: 'new-license-expiry' }, 'Expires after (days)'), expiry),
        h('div', null, h('label', { for: downloads.id }, 'Download limit'), downloads),
        features.element,
        meters.element,
      ),
      h('p', { class: 'hint' }, 'The free plan may create trial licenses only; a trial is node-locked.'),
      h('div', { class: 'actions' }, submit),
      error,
      created,
    ),
  );
}

/** A floating license's seats and lease TTL (PUT …/seats); fewer seats than leases in use wait for copies to stop. */
function seatsForm(l: License, { errorEl, noticeEl, saved }: { errorEl: HTMLElement; noticeEl: HTMLElement; saved: (l: License) => void }): HTMLFormElement {
  const seats = h('input', { type: 'number', id: 'license-max-concurrent', min: 1, max: 10000, value: l.max_concurrent });
  const ttl = h('input', { type: 'number', id: 'license-lease-ttl', min: 3, max: 1440, value: l.lease_ttl_minutes });
  const save = h('button', { type: 'submit', id: 'license-seats-save' }, 'Save seats');
  return h(
    'form',
    {
      id: 'license-seats-form',
      class: 'inline',
      onsubmit: async (e: SubmitEvent) => {
        e.preventDefault();
        const where = { path: { license_id: l.license_id } };
        const res = await act(() => api.put('/v1/licenses/{license_id}/seats', { max_concurrent: Number(seats.value), lease_ttl_minutes: Number(ttl.value) }, where), {
          button: save,
          errorEl,
          noticeEl,
          notice: 'Seats saved.',
        });
        // The answer is the license without its seats in use: read it whole again.
        if (res.ok) saved(await api.get('/v1/licenses/{license_id}', where));
      },
    },
    h('label', { for: 'license-max-concurrent' }, 'Seats (copies running at once)'),
    seats,
    h('label', { for: 'license-lease-ttl' }, 'Lease TTL (minutes)'),
    ttl,
    save,
  );
}

export async function licensePage(view: HTMLElement, { params }: PageContext): Promise<void> {
  const [licenseId = ''] = params;
  const license = await api.get('/v1/licenses/{license_id}', { path: { license_id: licenseId } });
  const where = { path: { license_id: license.license_id } };
  const [app, pushStatus, builds] = await Promise.all([
    api.get('/v1/apps/{app_id}', { path: { app_id: license.app_id } }),
    api.get('/v1/licenses/{license_id}/push-update', where),
    api.all('/v1/apps/{app_id}/builds', { path: { app_id: license.app_id } }),
  ]);
  const detailCard = h('section', { class: 'card', id: 'license-detail' });
  const devicesCard = h('section', { class: 'card', id: 'license-devices' });
  const deactivationsCard = h('section', { class: 'card', id: 'license-deactivations' });
  const meters = metersCard(license.license_id);
  const pushCard = h('section', { class: 'card', id: 'license-push' });
  mount(
    view,
    h('p', { class: 'hint' }, h('a', { href: '#/licenses' }, 'Licenses'), ' / ', license.license_key),
    h('h1', null, 'License ', h('span', { class: 'mono' }, license.license_key)),
    detailCard,
    devicesCard,
    meters.card,
    deactivationsCard,
    pushCard,
  );

  const renderDetail = (l: License) => {
    const error = h('p', { class: 'error', role: 'alert', id: 'license-action-error' });
    const notice = h('p', { class: 'notice', role: 'status', id: 'license-action-notice' });
    const actions = h('div', { class: 'actions' });
    if (l.status !== 'REVOKED') {
      actions.append(
        confirmButton(
          'Revoke',
          'Revoke this license? It stops working at the next start or token refresh.',
          async () => {
            const res = await act(() => api.post('/v1/licenses/{license_id}/revoke', undefined, where), { errorEl: error });
            if (res.ok) renderDetail({ ...l, ...res.value });
          },
          { id: 'revoke-license' },
        ),
      );
    }
    actions.append(
      confirmButton(
        'Reset devices',
        'Deactivate every computer of this license?',
        async () => {
          const res = await act(() => api.post('/v1/licenses/{license_id}/reset-devices', undefined, where), {
            errorEl: error,
            noticeEl: notice,
            notice: (r) => `${r.devices_removed} device${r.devices_removed === 1 ? '' : 's'} removed.`,
          });
          if (res.ok) {
            renderDevices([]);
            await loadDeactivations();
          }
        },
        { danger: false, id: 'reset-devices' },
      ),
    );
    // A developer-set limit replaces the default allowance (10 per build offered); empty goes back to it.
    const limitInput = h('input', { type: 'number', id: 'license-download-limit', min: 1, max: 1000000, value: l.download_limit ?? '', placeholder: 'default allowance' });
    const limitSave = h('button', { type: 'submit', id: 'license-download-limit-save' }, 'Save download limit');
    const limitForm = h(
      'form',
      {
        id: 'license-download-limit-form',
        class: 'inline',
        onsubmit: async (e: SubmitEvent) => {
          e.preventDefault();
          const value = limitInput.value.trim() === '' ? null : Number(limitInput.value);
          const res = await act(() => api.put('/v1/licenses/{license_id}/download-limit', { download_limit: value }, where), {
            button: limitSave,
            errorEl: error,
            noticeEl: notice,
            notice: 'Download limit saved.',
          });
          if (res.ok) renderDetail({ ...l, ...res.value });
        },
      },
      h('label', { for: 'license-download-limit' }, 'Download limit (delivery page and installer; replaces the default allowance, empty: the default)'),
      limitInput,
      limitSave,
    );
    mount(
      detailCard,
      h(
        'div',
        { class: 'grid' },
        facts([
          [
            'Key',
            h(
              'span',
              null,
              h('span', { class: 'mono', id: 'license-key' }, l.license_key),
              ' ',
              copyButton(() => l.license_key),
            ),
          ],
          ['Status', h('span', { id: 'license-status' }, badge(l.status))],
          ['App', h('a', { href: `#/apps/${app.id}` }, app.name)],
          ['Type', l.license_type],
          ['Email', l.email ?? '—'],
          ['Source', l.source],
          ['Payment session', l.payment_session_id ? h('span', { class: 'mono' }, l.payment_session_id) : '—'],
        ]),
        facts([
          ['Seat model', h('span', { id: 'license-seat-model' }, l.seat_model === 'floating' ? 'Floating' : 'Node-locked')],
          l.seat_model === 'floating'
            ? ['Seats in use', h('span', { id: 'license-seats-in-use' }, `${l.seats_in_use ?? 0} of ${l.max_concurrent}`)]
            : ['Device limit', String(l.device_limit)],
          l.seat_model === 'floating' ? ['Lease TTL', `${l.lease_ttl_minutes} minutes`] : null,
          ['Download limit', l.download_limit === null ? 'Default allowance' : String(l.download_limit)],
          ['Expires', l.expires_at ? formatDate(l.expires_at) : l.license_type === 'trial' ? '14 days after first run' : 'Never'],
          ['Created', formatDate(l.created_at)],
          ['Revoked', l.revoked_at ? formatDate(l.revoked_at) : '—'],
          ['License ID', h('span', { class: 'mono' }, l.license_id)],
        ]),
      ),
      limitForm,
      l.seat_model === 'floating' ? seatsForm(l, { errorEl: error, noticeEl: notice, saved: renderDetail }) : null,
      actions,
      error,
      notice,
    );
  };

  const renderDevices = (devices: Device[]) => {
    mount(
      devicesCard,
      // A floating license's devices are those that ever ran it; its seats are the leases (above).
      h('h2', null, license.seat_model === 'floating' ? `Devices (${devices.length})` : `Devices (${devices.length} of ${license.device_limit})`),
      devices.length === 0
        ? h('p', { class: 'muted', id: 'no-devices' }, 'No device is activated.')
        : dataTable(
            { id: 'devices-table' },
            h(
              'thead',
              null,
              h(
                'tr',
                null,
                ['Fingerprint', 'Platform', 'App version', 'Engine', 'First seen', 'Last seen'].map((t) => h('th', null, t)),
              ),
            ),
            h(
              'tbody',
              null,
              devices.map((d) =>
                h(
                  'tr',
                  null,
                  h('td', { class: 'mono' }, `${d.fingerprint_hash.slice(0, 16)}…`),
                  h('td', null, d.platform ?? '—'),
                  h('td', null, d.app_version ?? '—'),
                  h('td', null, d.engine_version ?? '—'),
                  h('td', null, formatDate(d.first_seen_at)),
                  h('td', null, formatDate(d.last_seen_at)),
                ),
              ),
            ),
          ),
    );
  };

  // The newest page of the history: devices the app deactivated itself and those a reset removed.
  const loadDeactivations = async () => {
    const page = await api.list('/v1/licenses/{license_id}/deactivations', { ...where, query: { limit: PAGE_SIZE } });
    const rows = page.data;
    mount(
      deactivationsCard,
      h('h2', null, 'Deactivation history'),
      h('p', { class: 'hint' }, `Deactivations from the app count against the app’s ${app.app_deactivations_per_30_days} per license in any 30 days; your resets do not.`),
      rows.length === 0
        ? h('p', { class: 'muted', id: 'no-deactivations' }, 'No device has been deactivated.')
        : dataTable(
            { id: 'deactivations-table' },
            h(
              'thead',
              null,
              h(
                'tr',
                null,
                ['When', 'By', 'Fingerprint'].map((t) => h('th', null, t)),
              ),
            ),
            h(
              'tbody',
              null,
              rows.map((d) =>
                h(
                  'tr',
                  { 'data-source': d.source },
                  h('td', null, formatDate(d.deactivated_at)),
                  h('td', null, DEACTIVATION_SOURCES[d.source] ?? d.source),
                  h('td', { class: 'mono' }, `${d.fingerprint_hash.slice(0, 16)}…`),
                ),
              ),
            ),
          ),
      page.total > rows.length ? h('p', { class: 'hint', id: 'deactivations-count' }, `The latest ${rows.length} of ${page.total}.`) : null,
    );
  };

  const renderPush = (push: LicensePush) => {
    const target = h('select', { id: 'license-push-target' }, buildOptions(builds));
    const notes = h('textarea', { id: 'license-push-notes', maxlength: 10000 });
    const error = h('p', { class: 'error', role: 'alert', id: 'license-push-error' });
    const submit = h('button', { type: 'submit', id: 'license-push-submit' }, 'Push to this license');
    const form = h(
      'form',
      {
        id: 'license-push-form',
        onsubmit: async (e: SubmitEvent) => {
          e.preventDefault();
          const payload: Body<'/v1/licenses/{license_id}/push-update', 'post'> = { release_notes: notes.value };
          if (target.value) payload.target_build_id = target.value;
          const res = await act(() => api.post('/v1/licenses/{license_id}/push-update', payload, where), { button: submit, errorEl: error });
          if (res.ok) renderPush(res.value.push);
        },
      },
      h('label', { for: 'license-push-target' }, 'Build (may be unreleased)'),
      target,
      h('label', { for: 'license-push-notes' }, 'Release notes'),
      notes,
      h('div', { class: 'actions' }, submit),
      error,
    );
    const clearError = h('p', { class: 'error', role: 'alert' });
    mount(
      pushCard,
      h('h2', null, 'Update push for this license'),
      push
        ? h(
            'div',
            null,
            h('div', { class: 'grid' }, pushFacts(push), adoptionChart(push.devices, 'license-adoption-chart')),
            h(
              'div',
              { class: 'actions' },
              confirmButton(
                'Clear',
                'Clear this license’s own push (the app push applies again)?',
                async () => {
                  const res = await act(() => api.delete('/v1/licenses/{license_id}/push-update', where), { errorEl: clearError });
                  if (res.ok) renderPush(null);
                },
                { id: 'clear-license-push' },
              ),
            ),
            clearError,
          )
        : h('p', { class: 'muted' }, 'No push of its own: the app’s push, if any, applies.'),
      h('h3', null, 'Push a build to this license only'),
      form,
    );
  };

  renderDetail(license);
  renderDevices(license.devices);
  renderPush(pushStatus.push);
  await Promise.all([meters.load(), loadDeactivations()]);
}
