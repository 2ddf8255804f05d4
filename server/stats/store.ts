import type { Db } from '../db/knex.js';

interface DayCount {
  day: string;
  count: string;
}

const DAY = `to_char(date_trunc('day', %s AT TIME ZONE 'UTC'), 'YYYY-MM-DD')`;
const dayOf = (column: string) => DAY.replace('%s', column);

/** Counts by UTC day for one developer (optionally one app), from `since` on; every query is tenant-scoped. */
export function createStatsStore(db: Db) {
  return {
    appExists: (developerId: string, appId: string) => db('apps').where({ id: appId, developer_id: developerId }).first('id'),

    async activations(developerId: string, appId: string | undefined, since: Date): Promise<DayCount[]> {
      const q = db('devices').join('licenses', 'licenses.id', 'devices.license_id').where('licenses.developer_id', developerId).where('devices.first_seen_at', '>=', since);
      if (appId) q.where('licenses.app_id', appId);
      return q.select(db.raw(`${dayOf('devices.first_seen_at')} AS day`), db.raw('count(*) AS count')).groupBy('day');
    },

    async licensesCreated(developerId: string, appId: string | undefined, since: Date): Promise<DayCount[]> {
      const q = db('licenses').where('developer_id', developerId).where('created_at', '>=', since);
      if (appId) q.where('app_id', appId);
      return q.select(db.raw(`${dayOf('created_at')} AS day`), db.raw('count(*) AS count')).groupBy('day');
    },

    async licensesSold(developerId: string, appId: string | undefined, since: Date): Promise<DayCount[]> {
      const q = db('license_fees').where('developer_id', developerId).where('charged_at', '>=', since);
      if (appId) q.where('app_id', appId);
      return q.select(db.raw(`${dayOf('charged_at')} AS day`), db.raw('count(*) AS count')).groupBy('day');
    },

    async fees(developerId: string, appId: string | undefined, since: Date) {
      const q = db('license_fees').where('developer_id', developerId);
      if (appId) q.where('app_id', appId);
      const rows: { currency: string; period_cents: string; period_licenses: string; unbilled_cents: string }[] = await q
        .select(
          'currency',
          db.raw('coalesce(sum(amount_cents) FILTER (WHERE charged_at >= ?), 0) AS period_cents', [since]),
          db.raw('count(*) FILTER (WHERE charged_at >= ?) AS period_licenses', [since]),
          db.raw(`coalesce(sum(amount_cents) FILTER (WHERE report_status IN ('pending', 'failed', 'not_reported')), 0) AS unbilled_cents`),
        )
        .groupBy('currency')
        .orderBy('currency');
      return rows.map((r) => ({
        currency: r.currency,
        period_cents: Number(r.period_cents),
        period_licenses: Number(r.period_licenses),
        unbilled_cents: Number(r.unbilled_cents),
      }));
    },
  };
}

export type StatsStore = ReturnType<typeof createStatsStore>;
