import type { Migration } from '../migration.js';

/**
 * Each chunk of a resumable upload is stored under a key of its own attempt
 * (`uploads/<id>/<offset>-<random>`), recorded in `part_keys` in order: object storage writes a
 * chunk straight to its key while it arrives, so two attempts at one offset must not share one.
 * Chunks stored before keep their keys, `uploads/<id>/<offset padded to 15 digits>`.
 */
export const uploadPartKeys: Migration = {
  name: '037_upload_part_keys',
  async up(db) {
    await db.raw(`
      ALTER TABLE upload_sessions ADD COLUMN part_keys text[] NOT NULL DEFAULT '{}';
      UPDATE upload_sessions SET part_keys = ARRAY(
        SELECT 'uploads/' || id || '/' || lpad(o::text, 15, '0') FROM unnest(part_offsets) WITH ORDINALITY AS p(o, n) ORDER BY n
      );
      ALTER TABLE upload_sessions DROP COLUMN part_offsets;
    `);
  },
  async down(db) {
    await db.raw(`
      ALTER TABLE upload_sessions ADD COLUMN part_offsets bigint[] NOT NULL DEFAULT '{}';
      -- Sessions with chunks under keys of this version cannot be read by the one before.
      DELETE FROM upload_sessions WHERE cardinality(part_keys) > 0;
      ALTER TABLE upload_sessions DROP COLUMN part_keys;
    `);
  },
};
