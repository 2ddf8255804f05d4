// A license's metered features: each meter's usage in its current period, and a form that replaces
// the meters as a whole (PUT /v1/licenses/{id}/meters; usage already counted stays with its feature).
import { act, api, type Answer } from './api.js';
import { dataTable, formatDate, h, mount } from './dom.js';
import { metersInput, PERIODS } from './meter-fields.js';

type Usage = Answer<'/v1/licenses/{license_id}/usage', 'get'>;

/** The card (`#license-meters`) and `load()`, which reads the usage and renders it. */
export function metersCard(licenseId: string) {
  const card = h('section', { class: 'card', id: 'license-meters' });
  const where = { path: { license_id: licenseId } };

  const render = (usage: Usage, saved = '') => {
    const error = h('p', { class: 'error', role: 'alert', id: 'license-meters-error' });
    const notice = h('p', { class: 'notice', role: 'status', id: 'license-meters-notice' }, saved);
    const input = metersInput('license', usage.meters);
    const save = h('button', { type: 'submit', id: 'license-meters-save' }, 'Save meters');
    const form = h(
      'form',
      {
        id: 'license-meters-form',
        onsubmit: async (e: SubmitEvent) => {
          e.preventDefault();
          const res = await act(() => api.put('/v1/licenses/{license_id}/meters', { meters: input.values() }, where), { button: save, errorEl: error, noticeEl: notice });
          if (res.ok) render(res.value, 'Meters saved.');
        },
      },
      input.rows,
      h('div', { class: 'actions' }, input.add, save),
    );
    mount(
      card,
      h('h2', null, 'Metered features'),
      usage.meters.length === 0
        ? h('p', { class: 'muted', id: 'no-meters' }, 'No metered feature: the app’s consume() calls are refused.')
        : dataTable(
            { id: 'meters-table' },
            h(
              'thead',
              null,
              h(
                'tr',
                null,
                ['Feature', 'Used', 'Remaining', 'Per period', 'Resets'].map((t) => h('th', null, t)),
              ),
            ),
            h(
              'tbody',
              null,
              usage.meters.map((m) =>
                h(
                  'tr',
                  null,
                  h('td', { class: 'mono' }, m.feature),
                  h('td', null, String(m.used)),
                  h('td', null, String(m.remaining)),
                  h('td', null, `${m.uses_per_period} ${PERIODS.find(([p]) => p === m.period)?.[1] ?? m.period}`),
                  h('td', null, m.period_ends_at ? formatDate(m.period_ends_at) : 'Never'),
                ),
              ),
            ),
          ),
      form,
      error,
      notice,
    );
  };

  return { card, load: async () => render(await api.get('/v1/licenses/{license_id}/usage', where)) };
}
