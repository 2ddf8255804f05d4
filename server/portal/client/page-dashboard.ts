// Dashboard: activations and licenses over time (GET /v1/stats), fees owed, and the apps.
import { api, type Answer } from './api.js';
import { barChart, chartFigure, dayChart } from './charts.js';
import { h, mount } from './dom.js';
import type { PageContext } from './page.js';

type DayCounts = Answer<'/v1/stats', 'get'>['activations'];
type Fees = Answer<'/v1/stats', 'get'>['fees'];
const RANGES = [7, 30, 90];
const money = (cents: number, currency: string) => `${(cents / 100).toLocaleString(undefined, { style: 'currency', currency: currency.toUpperCase() })}`;
const sum = (days: DayCounts) => days.reduce((n, d) => n + d.count, 0);

/** A chart of counts per day with its numbers in a table (the days with a count; all zero says so). */
function dayFigure(list: DayCounts, options: { id: string; title: string; color: string }): HTMLElement {
  const counted = list.filter((d) => d.count > 0);
  return chartFigure(
    dayChart(
      list.map((d) => ({ date: d.date, value: d.count })),
      options,
    ),
    options.title,
    ['Day (UTC)', 'Count'],
    counted.length ? counted.map((d) => [d.date, String(d.count)]) : [['Every day of the period', '0']],
  );
}

/** Per currency, the fees charged in the period beside those not yet billed (what is owed). */
function feesFigure(fees: Fees, days: number): HTMLElement {
  const rows = fees.flatMap((f) => {
    const currency = f.currency.toUpperCase();
    return [
      { label: `${currency} charged, ${days} days`, value: f.period_cents, color: '#1b5e20', format: (cents: number) => money(cents, f.currency) },
      { label: `${currency} not yet billed`, value: f.unbilled_cents, color: '#9a5b00', format: (cents: number) => money(cents, f.currency) },
    ];
  });
  // One currency (the usual case) writes its values as money; several, as amounts in their labels' currency.
  const format = fees.length === 1 ? rows[0]!.format : (cents: number) => (cents / 100).toFixed(2);
  return chartFigure(
    barChart(rows, { id: 'chart-fees', title: 'Platform fees', format }),
    'Platform fees',
    ['Fees', 'Amount'],
    rows.map((r): [string, string] => [r.label, r.format(r.value)]),
  );
}

export async function dashboardPage(view: HTMLElement, { query }: PageContext): Promise<void> {
  const days = RANGES.includes(Number(query.get('days'))) ? Number(query.get('days')) : 30;
  const [stats, apps] = await Promise.all([api.get('/v1/stats', { query: { days } }), api.all('/v1/apps')]);
  const fees = stats.fees.length ? stats.fees : [{ currency: 'usd', period_cents: 0, period_licenses: 0, unbilled_cents: 0 }];
  mount(
    view,
    h('h1', null, 'Dashboard'),
    h(
      'p',
      { class: 'hint' },
      `${stats.from} to ${stats.to} (UTC) · `,
      RANGES.map((n, i) => [i ? ' · ' : '', n === days ? h('strong', null, `${n} days`) : h('a', { href: `#/?days=${n}` }, `${n} days`)]),
    ),
    h(
      'div',
      { class: 'grid' },
      h(
        'section',
        { class: 'card' },
        h('h2', null, 'Activations'),
        h('p', { class: 'stat', id: 'stat-activations' }, String(sum(stats.activations))),
        h('p', { class: 'hint' }, 'New devices in the period'),
      ),
      h(
        'section',
        { class: 'card' },
        h('h2', null, 'Licenses sold'),
        h('p', { class: 'stat', id: 'stat-sold' }, String(sum(stats.licenses_sold))),
        h('p', { class: 'hint' }, `${sum(stats.licenses_created)} licenses created in all`),
      ),
      h(
        'section',
        { class: 'card', id: 'fees' },
        h('h2', null, 'Fees owed'),
        fees.map((f) => [
          h('p', { class: 'stat', id: `fees-owed-${f.currency}` }, money(f.unbilled_cents, f.currency)),
          h('p', { class: 'hint' }, `Not yet billed. ${money(f.period_cents, f.currency)} for ${f.period_licenses} licenses sold in the period.`),
        ]),
      ),
    ),
    h(
      'section',
      { class: 'card' },
      h('h2', null, 'Activations per day'),
      dayFigure(stats.activations, { id: 'chart-activations', title: 'Activations per day', color: '#0b5fff' }),
    ),
    h(
      'section',
      { class: 'card' },
      h('h2', null, 'Licenses sold per day'),
      dayFigure(stats.licenses_sold, { id: 'chart-sold', title: 'Licenses sold per day', color: '#1b5e20' }),
      h('h3', null, 'Licenses created per day'),
      dayFigure(stats.licenses_created, { id: 'chart-created', title: 'Licenses created per day', color: '#7e57c2' }),
    ),
    h('section', { class: 'card' }, h('h2', null, 'Platform fees'), feesFigure(fees, days)),
    h(
      'section',
      { class: 'card' },
      h('h2', null, 'Apps'),
      apps.length === 0
        ? h('p', null, 'No apps yet. ', h('a', { href: '#/apps' }, 'Register your first app'))
        : h(
            'ul',
            null,
            apps.map((a) => h('li', null, h('a', { href: `#/apps/${a.id}` }, a.name))),
          ),
    ),
  );
}
