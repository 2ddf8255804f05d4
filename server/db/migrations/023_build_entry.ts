import type { Migration } from '../migration.js';

/**
 * The entry a build's upload names (issue 19 item 3): the file the app starts from when npm's rules
 * (`bin`, `main`, `exports`, index.js) do not pick the one wanted. Kept on the build for its job, and
 * on a resumable upload session until it becomes a build.
 */
export const buildEntry: Migration = {
  name: '023_build_entry',
  async up(db) {
    await db.raw(`
      ALTER TABLE builds ADD COLUMN entry text;
      ALTER TABLE upload_sessions ADD COLUMN entry text;
    `);
  },
  async down(db) {
    await db.raw(`
      ALTER TABLE builds DROP COLUMN entry;
      ALTER TABLE upload_sessions DROP COLUMN entry;
    `);
  },
};
