// Metered features as the API takes them (docs/protocol.md, Metered features): per feature name,
// uses per period and the period. Rows of inputs, used wherever meters are given: a new license,
// a license's meters, a redemption batch, an app's sold meters.
import type { Body } from './api.js';
import { h } from './dom.js';

export type Meters = NonNullable<Body<'/v1/licenses', 'post'>['meters']>;
export type Period = Meters[string]['period'];

export const PERIODS: [Period, string][] = [
  ['day', 'per day (UTC)'],
  ['month', 'per month (UTC)'],
  ['year', 'per year (UTC)'],
  ['lifetime', 'in all'],
];

/** One editable meter: feature name, uses per period, period, and a button that removes the row. */
function meterRow(meter: { feature: string; uses_per_period: number | ''; period: Period } = { feature: '', uses_per_period: '', period: 'month' }): HTMLElement {
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

/** The rows (`#<prefix>-meter-rows`) with an "Add meter" button (`#<prefix>-meter-add`), and `values()`: the meters as the API takes them. */
export function metersInput(prefix: string, current: { feature: string; uses_per_period: number; period: Period }[] = []) {
  const rows = h(
    'div',
    { id: `${prefix}-meter-rows` },
    current.map((m) => meterRow(m)),
  );
  const add = h('button', { type: 'button', class: 'secondary', id: `${prefix}-meter-add`, onclick: () => rows.append(meterRow()) }, 'Add meter');
  return {
    rows,
    add,
    values(): Meters {
      const meters: Meters = {};
      for (const row of rows.querySelectorAll('.meter-row')) {
        const feature = row.querySelector<HTMLInputElement>('.meter-feature')!.value.trim();
        meters[feature] = {
          uses_per_period: Number(row.querySelector<HTMLInputElement>('.meter-uses')!.value),
          period: row.querySelector<HTMLSelectElement>('.meter-period')!.value as Period,
        };
      }
      return meters;
    },
  };
}

/** A form field of meters with its label (the forms that create licenses, an app's sold meters), starting with `current`. */
export function metersField(prefix: string, label = 'Metered features (optional)', current: Meters = {}) {
  const input = metersInput(
    prefix,
    Object.entries(current).map(([feature, m]) => ({ feature, ...m })),
  );
  return {
    element: h('div', { class: 'meters-field', role: 'group', 'aria-label': label }, h('p', { class: 'field-label' }, label), input.rows, input.add),
    values: () => input.values(),
  };
}
