// Updates: the active push with its adoption as a chart, a form to push a build, and Clear.
import { act, api, type Answer, type Body } from './api.js';
import { barChart, chartFigure } from './charts.js';
import { confirmButton, facts, formatDate, h, mount } from './dom.js';

type App = Answer<'/v1/apps/{app_id}', 'get'>;
type Build = Answer<'/v1/apps/{app_id}/builds', 'get'>[number];
/** The push of an app or of one license: both answer the same shape. */
export type Push = NonNullable<Answer<'/v1/apps/{app_id}/push-update', 'get'>['push']>;

/** Installed, Skipped, Failed, Pending (able to update) and Unable: together every device the push governs. */
export function adoptionChart(devices: Push['devices'], id = 'adoption-chart'): HTMLElement {
  const waiting = Math.max(0, devices.pending - devices.unable);
  const total = devices.installed + devices.skipped + devices.failed + devices.pending;
  const rows = [
    { label: 'Installed', value: devices.installed, color: '#2e7d32' },
    { label: 'Skipped', value: devices.skipped, color: '#9a5b00' },
    { label: 'Failed', value: devices.failed, color: '#c62828' },
    { label: 'Pending', value: waiting, color: '#0b5fff' },
    { label: 'Unable (old engine)', value: devices.unable, color: '#757575' },
  ];
  return h(
    'div',
    null,
    chartFigure(
      barChart(rows, { id, title: `Adoption of the push: ${total} devices`, shares: true }),
      'Adoption of the push',
      ['Devices', 'Count'],
      rows.map((r): [string, string] => [r.label, String(r.value)]),
    ),
    h(
      'p',
      { class: 'hint' },
      `${total} devices in all. Pending: not asked yet, asked later, or on another platform. ` +
        'Failed: the install failed and the old version runs on; the device tries again after 1, 6 and 24 hours. ' +
        'Unable: their runtime engine is too old to update; their customers need a fresh download once.',
    ),
  );
}

export function pushFacts(push: Push): HTMLDListElement {
  return facts([
    ['Build', h('span', { class: 'mono' }, push.target_build_id)],
    ['Version', push.version ?? '—'],
    ['Platform', push.platform],
    ['Serial', String(push.serial)],
    ['Pushed', formatDate(push.pushed_at)],
    ['Release notes', push.release_notes ? h('span', { class: 'notes' }, push.release_notes) : '—'],
    ['Complete', push.complete ? 'Yes: no device is pending or failed' : 'No'],
  ]);
}

/** Options of the READY builds a push may name; the first, empty one means "the newest READY build". */
export function buildOptions(builds: Build[], { releasedOnly = false }: { releasedOnly?: boolean } = {}): HTMLOptionElement[] {
  const ready = builds.filter((b) => b.status === 'READY').reverse();
  return [
    h('option', { value: '' }, releasedOnly ? 'Newest released READY build' : 'Newest READY build'),
    ...ready.map((b) => h('option', { value: b.id }, `${b.version ?? 'no version'} · ${b.platform}${b.released ? ' · released' : ''} · ${b.id}`)),
  ];
}

export async function updatesTab(body: HTMLElement, app: App): Promise<void> {
  const where = { path: { app_id: app.id } };
  const [status, builds, me] = await Promise.all([api.get('/v1/apps/{app_id}/push-update', where), api.all('/v1/apps/{app_id}/builds', where), api.get('/v1/auth/me')]);
  const activeCard = h('section', { class: 'card', id: 'active-push' });
  const clearError = h('p', { class: 'error', role: 'alert', id: 'clear-push-error' });
  const render = (push: Push | null) => {
    if (!push) {
      mount(activeCard, h('h2', null, 'Active push'), h('p', { class: 'muted', id: 'no-push' }, 'No active push. Customers are offered nothing until you push a build.'));
      return;
    }
    mount(
      activeCard,
      h('h2', null, 'Active push'),
      h('div', { class: 'grid' }, pushFacts(push), adoptionChart(push.devices)),
      h(
        'div',
        { class: 'actions' },
        confirmButton(
          'Clear active push',
          'Stop offering this build?',
          async () => {
            const res = await act(() => api.delete('/v1/apps/{app_id}/push-update', where), { errorEl: clearError });
            if (res.ok) render(null);
          },
          { id: 'clear-push' },
        ),
      ),
      clearError,
    );
  };
  render(status.push);

  const target = h('select', { id: 'push-target' }, buildOptions(builds, { releasedOnly: app.delivery_mode === 'released_only' }));
  const notes = h('textarea', { id: 'push-notes', maxlength: 10000, placeholder: 'What changed, in plain text' });
  const releaseCurrent = h('input', { type: 'checkbox', id: 'push-release-current' });
  const error = h('p', { class: 'error', role: 'alert', id: 'push-error' });
  const notice = h('p', { class: 'notice', role: 'status', id: 'push-notice' });
  const submit = h('button', { type: 'submit', id: 'push-submit' }, 'Push update');
  const form = h(
    'form',
    {
      id: 'push-form',
      onsubmit: async (e: SubmitEvent) => {
        e.preventDefault();
        const payload: Body<'/v1/apps/{app_id}/push-update', 'post'> = { release_notes: notes.value };
        if (target.value) payload.target_build_id = target.value;
        if (releaseCurrent.checked) payload.release_current = true;
        const res = await act(() => api.post('/v1/apps/{app_id}/push-update', payload, where), {
          button: submit,
          errorEl: error,
          noticeEl: notice,
          notice: 'Pushed. Devices get it at their next update check.',
        });
        if (res.ok) render(res.value.push);
      },
    },
    h('label', { for: 'push-target' }, 'Build'),
    target,
    h('label', { for: 'push-notes' }, 'Release notes'),
    notes,
    app.delivery_mode === 'released_only' ? h('label', { class: 'inline' }, releaseCurrent, 'Release it now if it is not released') : null,
    h(
      'p',
      { class: 'hint' },
      (me.plan === 'pro' ? '' : 'Needs the Pro plan. ') +
        'Windows and macOS builds must be replaced with your signed package before you push them. ' +
        'Pushing replaces the active push and overrides per-license pushes.',
    ),
    h('div', { class: 'actions' }, submit),
    error,
    notice,
  );

  mount(body, activeCard, h('section', { class: 'card' }, h('h2', null, 'Push a build'), form));
}
