import type { Migration } from '../migration.js';

/**
 * The build a device last said it runs (update check or report), so that an update check that
 * sends only the license key and the fingerprint hash (docs/contract.md push rule 9) still knows
 * whether the device runs the pushed build. No foreign key: a deleted build leaves the label.
 */
export const deviceRunningBuild: Migration = {
  name: '028_device_running_build',
  async up(db) {
    await db.raw(`ALTER TABLE devices ADD COLUMN build_id text`);
  },
  async down(db) {
    await db.raw(`ALTER TABLE devices DROP COLUMN build_id`);
  },
};
