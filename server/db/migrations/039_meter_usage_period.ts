import type { Migration } from '../migration.js';

/**
 * A meter's counter is per period kind too (`day`, `month`, `year`, `lifetime`), not only per
 * period start: a month and a day that start at the same instant (the 1st of a month) were one
 * counter, so a meter changed from one to the other kept the count it was meant to start from 0.
 * Counters already kept take the kind of their feature's meter now, `lifetime` for those that
 * start at the epoch; a counter of a meter changed before this migration may still carry its old
 * count into the new period once.
 */
export const meterUsagePeriod: Migration = {
  name: '039_meter_usage_period',
  async up(db) {
    await db.raw(`
      ALTER TABLE meter_usage ADD COLUMN period text;
      UPDATE meter_usage u SET period = CASE
          WHEN u.period_start = 'epoch' THEN 'lifetime'
          WHEN l.meters -> u.feature ->> 'period' IN ('day', 'month', 'year') THEN l.meters -> u.feature ->> 'period'
          ELSE 'day'
        END
        FROM licenses l WHERE l.id = u.license_id;
      ALTER TABLE meter_usage
        ALTER COLUMN period SET NOT NULL,
        ADD CONSTRAINT meter_usage_period CHECK (period IN ('day', 'month', 'year', 'lifetime')),
        DROP CONSTRAINT meter_usage_pkey,
        ADD PRIMARY KEY (license_id, feature, period, period_start);
    `);
  },
  async down(db) {
    await db.raw(`
      DELETE FROM meter_usage a USING meter_usage b
        WHERE a.license_id = b.license_id AND a.feature = b.feature AND a.period_start = b.period_start AND a.period > b.period;
      ALTER TABLE meter_usage DROP CONSTRAINT meter_usage_pkey, ADD PRIMARY KEY (license_id, feature, period_start), DROP COLUMN period;
    `);
  },
};
