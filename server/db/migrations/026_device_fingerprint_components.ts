import type { Migration } from '../migration.js';

/**
 * Component-tolerant device matching (docs/protocol.md, Fingerprint): beside its fingerprint hash,
 * each device keeps the salted hash of each component the SDK made it of, so a device that comes
 * back with a new network card or disk is recognised as the one on record instead of taking a seat.
 * Null for devices activated by SDKs that did not send them (they match by the whole hash only).
 */
export const deviceFingerprintComponents: Migration = {
  name: '026_device_fingerprint_components',
  async up(db) {
    await db.raw(`
      ALTER TABLE devices ADD COLUMN component_hashes jsonb
        CHECK (component_hashes IS NULL OR jsonb_typeof(component_hashes) = 'object');
    `);
  },
  async down(db) {
    await db.raw(`ALTER TABLE devices DROP COLUMN component_hashes`);
  },
};
