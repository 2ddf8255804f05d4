import type { Migration } from '../migration.js';

/**
 * A count of each license's devices kept beside its limit, so claiming a slot is one UPDATE whose
 * condition PostgreSQL re-checks on the latest row after any lock wait: concurrent activations
 * (in any process) never exceed the limit, without a separate lock-then-count transaction.
 */
export const deviceSlots: Migration = {
  name: '003_device_slots',
  async up(db) {
    await db.raw(`
      ALTER TABLE licenses ADD COLUMN device_count integer NOT NULL DEFAULT 0 CHECK (device_count >= 0);
      UPDATE licenses SET device_count = (SELECT count(*) FROM devices WHERE devices.license_id = licenses.id);
    `);
  },
  async down(db) {
    await db.raw(`ALTER TABLE licenses DROP COLUMN device_count`);
  },
};
