import type { Migration } from '../migration.js';

/**
 * Account deactivation (docs/contract.md, Billing events): set when the developer's own subscription
 * is deleted, cleared by a new one. While it is set the developer may sign in and read, but makes no
 * change (server/accounts/deactivation.ts); their customers' licenses are not affected.
 */
export const developerDeactivation: Migration = {
  name: '034_developer_deactivation',
  async up(db) {
    await db.raw(`ALTER TABLE developers ADD COLUMN deactivated_at timestamptz`);
  },
  async down(db) {
    await db.raw(`ALTER TABLE developers DROP COLUMN deactivated_at`);
  },
};
