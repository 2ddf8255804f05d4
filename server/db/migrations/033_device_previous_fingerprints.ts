import type { Migration } from '../migration.js';

/**
 * A device whose record another installation of the same machine renamed (component-tolerant
 * matching, docs/protocol.md, Fingerprint) keeps the fingerprints it was known by, the newest last
 * and at most 8: a runtime still holding a token for one of them moves that token to the record
 * when its reading now matches the record by the rule, instead of being told it is not activated.
 */
export const devicePreviousFingerprints: Migration = {
  name: '033_device_previous_fingerprints',
  async up(db) {
    await db.raw(`
      ALTER TABLE devices ADD COLUMN previous_fingerprints text[] NOT NULL DEFAULT '{}'
        CHECK (cardinality(previous_fingerprints) <= 8);
    `);
  },
  async down(db) {
    await db.raw(`ALTER TABLE devices DROP COLUMN previous_fingerprints`);
  },
};
