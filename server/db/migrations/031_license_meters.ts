import type { Migration } from '../migration.js';

/**
 * Metered features (docs/protocol.md, Metered features). A license's meters are a small map on the
 * license (feature → uses_per_period and period), read with it like `features`. Usage is a counter
 * per license, feature and calendar period (its UTC start; 1970-01-01 for `lifetime`), raised by one
 * conditional UPDATE so concurrent consumptions never pass the limit. Each counted consumption is a
 * ledger row keyed by the runtime's idempotency key: a replay finds it and answers what it answered,
 * counting nothing. Neither table references the meter: changing a license's meters keeps its history.
 */
export const licenseMeters: Migration = {
  name: '031_license_meters',
  async up(db) {
    await db.raw(`
      ALTER TABLE licenses ADD COLUMN meters jsonb NOT NULL DEFAULT '{}'::jsonb;

      CREATE TABLE meter_usage (
        license_id text NOT NULL REFERENCES licenses(id) ON DELETE CASCADE,
        feature text NOT NULL,
        period_start timestamptz NOT NULL,
        used bigint NOT NULL DEFAULT 0 CHECK (used >= 0),
        PRIMARY KEY (license_id, feature, period_start)
      );

      CREATE TABLE meter_consumptions (
        license_id text NOT NULL REFERENCES licenses(id) ON DELETE CASCADE,
        idempotency_key text NOT NULL,
        feature text NOT NULL,
        quantity integer NOT NULL CHECK (quantity > 0),
        consumed_at timestamptz NOT NULL,
        recorded_at timestamptz NOT NULL,
        period_start timestamptz NOT NULL,
        period_end timestamptz,
        used bigint NOT NULL,
        uses_per_period integer NOT NULL,
        PRIMARY KEY (license_id, idempotency_key)
      );
    `);
  },
  async down(db) {
    await db.raw(`
      DROP TABLE meter_consumptions;
      DROP TABLE meter_usage;
      ALTER TABLE licenses DROP COLUMN meters;
    `);
  },
};
