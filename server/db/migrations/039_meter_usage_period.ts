import type { Migration } from '../migration.js';

/**
 * A meter's counter is per period kind too (`day`, `month`, `year`, `lifetime`), not only per
 * period start: a month and a day that start at the same instant (the 1st of a month) were one
 * counter, so a meter changed from one to the other kept the count it was meant to start from 0.
 * The counters are rebuilt from the ledger, which keeps every counted consumption with the period
 * it counted in (its end null for `lifetime`): counters merged before are split again. Rewrites
 * meter_usage, and a process from before it cannot count against the new key: no rolling upgrade
 * across it (docs/operations.md, Upgrades).
 */
export const meterUsagePeriod: Migration = {
  name: '039_meter_usage_period',
  async up(db) {
    await db.raw(`
      ALTER TABLE meter_usage DROP CONSTRAINT meter_usage_pkey, ADD COLUMN period text;
      DELETE FROM meter_usage;
      INSERT INTO meter_usage (license_id, feature, period, period_start, used)
        SELECT license_id, feature,
          CASE
            WHEN period_end IS NULL THEN 'lifetime'
            WHEN period_end - period_start <= interval '1 day' THEN 'day'
            WHEN period_end - period_start < interval '32 days' THEN 'month'
            ELSE 'year'
          END,
          period_start, sum(quantity)
        FROM meter_consumptions
        GROUP BY 1, 2, 3, 4;
      ALTER TABLE meter_usage
        ALTER COLUMN period SET NOT NULL,
        ADD CONSTRAINT meter_usage_period CHECK (period IN ('day', 'month', 'year', 'lifetime')),
        ADD PRIMARY KEY (license_id, feature, period, period_start);
    `);
  },
  async down(db) {
    // Counters of two kinds that start together become one again, keeping the larger of their counts.
    await db.raw(`
      DELETE FROM meter_usage a USING meter_usage b
        WHERE a.license_id = b.license_id AND a.feature = b.feature AND a.period_start = b.period_start
          AND (a.used < b.used OR (a.used = b.used AND a.period > b.period));
      ALTER TABLE meter_usage DROP CONSTRAINT meter_usage_pkey, DROP CONSTRAINT meter_usage_period, DROP COLUMN period,
        ADD PRIMARY KEY (license_id, feature, period_start);
    `);
  },
};
