import type { Migration } from '../migration.js';

/**
 * Deactivation from the app (issue 22, item 1): the runtime frees its own device's seat. Each
 * device taken off a license is a row of its history, by the app (`app`, counted against the app's
 * `app_deactivations_per_30_days` per license), by the developer's reset (`developer`), the store's
 * reset (`store_reset`) or the store's revocation (`revoked`), these not counted. A row outlives its device: the history is what the developer reads.
 */
export const deviceDeactivations: Migration = {
  name: '029_device_deactivations',
  async up(db) {
    await db.raw(`
      ALTER TABLE apps ADD COLUMN app_deactivations_per_30_days integer NOT NULL DEFAULT 3
        CHECK (app_deactivations_per_30_days BETWEEN 1 AND 1000);
      CREATE TABLE device_deactivations (
        id bigserial PRIMARY KEY,
        license_id text NOT NULL REFERENCES licenses(id) ON DELETE CASCADE,
        fingerprint_hash text NOT NULL,
        source text NOT NULL CHECK (source IN ('app', 'developer', 'store_reset', 'revoked')),
        deactivated_at timestamptz NOT NULL
      );
      CREATE INDEX device_deactivations_by_license ON device_deactivations (license_id, deactivated_at DESC, id DESC);
    `);
  },
  async down(db) {
    await db.raw(`
      DROP TABLE device_deactivations;
      ALTER TABLE apps DROP COLUMN app_deactivations_per_30_days;
    `);
  },
};
