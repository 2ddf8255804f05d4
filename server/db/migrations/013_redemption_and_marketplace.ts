import type { Migration } from '../migration.js';

/** Redemption batches and their codes, and the marketplace order that provisioned a license. */
export const redemptionAndMarketplace: Migration = {
  name: '013_redemption_and_marketplace',
  async up(db) {
    await db.raw(`
      -- A batch of single-use codes a developer sells through a marketplace. The license each code
      -- mints is described here (type, device limit, expiry in days, features).
      CREATE TABLE redemption_batches (
        id text PRIMARY KEY,
        -- Denormalised from apps (an app never changes owner): every tenant-scoped query is one index.
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        app_id text NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        channel text NOT NULL,
        label text NOT NULL DEFAULT '',
        quantity integer NOT NULL CHECK (quantity BETWEEN 1 AND 10000),
        device_limit integer NOT NULL CHECK (device_limit >= 1),
        -- 0: the licenses are perpetual; otherwise they expire this many days after redemption.
        license_expiry_days integer NOT NULL CHECK (license_expiry_days >= 0),
        license_type text NOT NULL CHECK (license_type IN ('perpetual', 'subscription', 'trial')),
        features jsonb NOT NULL DEFAULT '{}',
        -- Codes not redeemed by then are Expired (computed at read time, never stored).
        codes_expire_at timestamptz,
        created_at timestamptz NOT NULL
      );
      CREATE INDEX redemption_batches_by_app ON redemption_batches (app_id, created_at, id);

      -- One row per code, by the SHA-256 of its canonical form: the plain code is shown once, at
      -- generation, and a database leak gives no redeemable code.
      CREATE TABLE redemption_codes (
        code_hash text PRIMARY KEY CHECK (code_hash ~ '^[0-9a-f]{64}$'),
        batch_id text NOT NULL REFERENCES redemption_batches(id) ON DELETE CASCADE,
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        -- Stored transitions only; Expired is computed from the batch's codes_expire_at.
        status text NOT NULL DEFAULT 'available' CHECK (status IN ('available', 'redeemed', 'revoked')),
        -- Deferred: redemption claims the code naming the license it then inserts, in one transaction.
        license_id text REFERENCES licenses(id) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED,
        redeemed_email text,
        redeemed_at timestamptz,
        revoked_at timestamptz
      );
      CREATE INDEX redemption_codes_by_batch ON redemption_codes (batch_id, status);
      CREATE INDEX redemption_codes_by_license ON redemption_codes (license_id) WHERE license_id IS NOT NULL;

      -- The marketplace order a license was provisioned for: one license per order and app, however
      -- often (or concurrently) the marketplace calls.
      ALTER TABLE licenses ADD COLUMN marketplace_order_id text;
      CREATE UNIQUE INDEX licenses_marketplace_order_key ON licenses (app_id, marketplace_order_id) WHERE marketplace_order_id IS NOT NULL;
    `);
  },
  async down(db) {
    await db.raw(`
      DROP INDEX licenses_marketplace_order_key;
      ALTER TABLE licenses DROP COLUMN marketplace_order_id;
      DROP TABLE redemption_codes, redemption_batches;
    `);
  },
};
