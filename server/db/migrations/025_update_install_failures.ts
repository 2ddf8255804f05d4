import type { Migration } from '../migration.js';

/**
 * A device reports an install of a pushed build that failed (`event: failed`, with a reason from
 * the runtime's closed list); the push's view counts it as Failed beside Installed and Skipped. The
 * reason is kept with the failed state only.
 */
export const updateInstallFailures: Migration = {
  name: '025_update_install_failures',
  async up(db) {
    await db.raw(`
      ALTER TABLE update_adoptions DROP CONSTRAINT update_adoptions_state_check;
      ALTER TABLE update_adoptions ADD CONSTRAINT update_adoptions_state_check CHECK (state IN ('installed', 'skipped', 'failed'));
      ALTER TABLE update_adoptions ADD COLUMN reason text
        CONSTRAINT update_adoptions_reason_check
        CHECK (reason IN ('download_failed', 'package_rejected', 'disk_failed', 'install_failed', 'rolled_back'));
      ALTER TABLE update_adoptions ADD CONSTRAINT update_adoptions_reason_with_failed CHECK ((state = 'failed') = (reason IS NOT NULL));
    `);
  },
  async down(db) {
    await db.raw(`
      DELETE FROM update_adoptions WHERE state = 'failed';
      ALTER TABLE update_adoptions DROP CONSTRAINT update_adoptions_reason_with_failed;
      ALTER TABLE update_adoptions DROP COLUMN reason;
      ALTER TABLE update_adoptions DROP CONSTRAINT update_adoptions_state_check;
      ALTER TABLE update_adoptions ADD CONSTRAINT update_adoptions_state_check CHECK (state IN ('installed', 'skipped'));
    `);
  },
};
