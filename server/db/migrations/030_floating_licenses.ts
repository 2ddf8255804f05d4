import type { Migration } from '../migration.js';

/**
 * Floating (concurrent) licenses (docs/protocol.md, Floating licenses). A floating license's
 * `device_limit` counts its concurrent seats (`max_concurrent` in the API) rather than the devices
 * ever activated, so the per-seat runtime limits scale with it unchanged. A seat is a lease row:
 * live while `expires_at` is ahead, renewed by each refresh (the SDK's heartbeat), deleted by a
 * check-in; a crashed app's lease simply expires. One lease per device of a license.
 */
export const floatingLicenses: Migration = {
  name: '030_floating_licenses',
  async up(db) {
    await db.raw(`
      ALTER TABLE licenses
        ADD COLUMN seat_model text NOT NULL DEFAULT 'node_locked' CHECK (seat_model IN ('node_locked', 'floating')),
        ADD COLUMN lease_ttl_minutes integer CHECK (lease_ttl_minutes BETWEEN 3 AND 1440),
        ADD CONSTRAINT licenses_lease_ttl_floating CHECK ((seat_model = 'floating') = (lease_ttl_minutes IS NOT NULL));

      CREATE TABLE license_leases (
        license_id text NOT NULL REFERENCES licenses(id) ON DELETE CASCADE,
        fingerprint_hash text NOT NULL,
        checked_out_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (license_id, fingerprint_hash)
      );
    `);
  },
  async down(db) {
    await db.raw(`
      DROP TABLE license_leases;
      ALTER TABLE licenses DROP CONSTRAINT licenses_lease_ttl_floating, DROP COLUMN lease_ttl_minutes, DROP COLUMN seat_model;
    `);
  },
};
