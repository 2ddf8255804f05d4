// A license's metered features: each meter's usage in its current period, and a form that replaces
// the meters as a whole (PUT /v1/licenses/{id}/meters; usage already counted stays with its feature).
import { act, get, put } from './api.js';
import { formatDate, h, mount } from './dom.js';

const PERIODS = [
  ['day', 'per day (UTC)'],
  ['month', 'per month (UTC)'],
  ['year', 'per year (UTC)'],
  ['lifetime', 'in all'],
];

/** One editable meter: feature name, uses per period, period, and a button that removes the row. */
function meterRow(meter = { feature: '', uses_per_period: '', period: 'month' }) {
  const row = h(
    'div',
    { class: 'meter-row' },
    h('input', { type: 'text', class: 'meter-feature', 'aria-label': 'Feature', placeholder: 'feature, e.g. export', value: meter.feature, required: true, maxlength: 64 }),
    h('input', { class: 'meter-uses', 'aria-label': 'Uses per period', type: 'number', min: 1, max: 1000000000, value: meter.uses_per_period, required: true }),
    h(
      'select',
      { class: 'meter-period', 'aria-label': 'Period' },
      PERIODS.map(([value, label]) => h('option', { value, selected: meter.period === value }, label)),
    ),
    h('button', { type: 'button', class: 'secondary', onclick: () => row.remove() }, 'Remove'),
  );
  return row;
}

/** The card (`#license-meters`) and `load()`, which reads the usage and renders it. */
export function metersCard(licenseId) {
  const card = h('section', { class: 'card', id: 'license-meters' });
  const path = `/v1/licenses/${encodeURIComponent(licenseId)}`;

  const render = (usage, saved = '') => {
    const error = h('p', { class: 'error', role: 'alert', id: 'license-meters-error' });
    const notice = h('p', { class: 'notice', role: 'status', id: 'license-meters-notice' }, saved);
    const rows = h('div', { id: 'license-meter-rows' }, usage.meters.map(meterRow));
    const save = h('button', { type: 'submit', id: 'license-meters-save' }, 'Save meters');
    const form = h(
      'form',
      {
        id: 'license-meters-form',
        onsubmit: async (e) => {
          e.preventDefault();
          const meters = {};
          for (const row of rows.querySelectorAll('.meter-row')) {
            meters[row.querySelector('.meter-feature').value.trim()] = {
              uses_per_period: Number(row.querySelector('.meter-uses').value),
              period: row.querySelector('.meter-period').value,
            };
          }
          const res = await act(() => put(`${path}/meters`, { meters }), { button: save, errorEl: error, noticeEl: notice });
          if (res.ok) render(res.value, 'Meters saved.');
        },
      },
      rows,
      h('div', { class: 'actions' }, h('button', { type: 'button', class: 'secondary', id: 'license-meter-add', onclick: () => rows.append(meterRow()) }, 'Add meter'), save),
    );
    mount(
      card,
      h('h2', null, 'Metered features'),
      usage.meters.length === 0
        ? h('p', { class: 'muted', id: 'no-meters' }, 'No metered feature: the app’s consume() calls are refused.')
        : h(
            'table',
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
                  h('td', null, `${m.uses_per_period} ${PERIODS.find(([p]) => p === m.period)[1]}`),
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

  return { card, load: async () => render(await get(`${path}/usage`)) };
}
