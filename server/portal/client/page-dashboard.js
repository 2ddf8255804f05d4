// Dashboard: activations and licenses over time (GET /v1/stats), fees owed, and the apps.
import { get } from './api.js';
import { dayChart } from './charts.js';
import { h, mount } from './dom.js';
import { listAll } from './page-apps.js';

const RANGES = [7, 30, 90];
const money = (cents, currency) => `${(cents / 100).toLocaleString(undefined, { style: 'currency', currency: currency.toUpperCase() })}`;
const sum = (days) => days.reduce((n, d) => n + d.count, 0);

export async function dashboardPage(view, { query }) {
  const days = RANGES.includes(Number(query.get('days'))) ? Number(query.get('days')) : 30;
  const [stats, apps] = await Promise.all([get(`/v1/stats?days=${days}`), listAll('/v1/apps')]);
  const fees = stats.fees.length ? stats.fees : [{ currency: 'usd', period_cents: 0, period_licenses: 0, unbilled_cents: 0 }];
  const series = (list) => list.map((d) => ({ date: d.date, value: d.count }));
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
      dayChart(series(stats.activations), { id: 'chart-activations', title: 'Activations per day', color: '#0b5fff' }),
    ),
    h(
      'section',
      { class: 'card' },
      h('h2', null, 'Licenses sold per day'),
      dayChart(series(stats.licenses_sold), { id: 'chart-sold', title: 'Licenses sold per day', color: '#2e7d32' }),
      h('h3', null, 'Licenses created per day'),
      dayChart(series(stats.licenses_created), { id: 'chart-created', title: 'Licenses created per day', color: '#7e57c2' }),
    ),
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
