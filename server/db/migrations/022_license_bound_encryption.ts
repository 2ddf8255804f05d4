import type { Migration } from '../migration.js';

/** Protected builds encrypted under a content key released only to licensed devices (docs/protocol.md). */
export const licenseBoundEncryption: Migration = {
  name: '022_license_bound_encryption',
  async up(db) {
    await db.raw(`
      -- The build's content key, sealed under the master key (AES-256-GCM, bound to the build id);
      -- null for builds delivered without encryption.
      ALTER TABLE builds ADD COLUMN content_key_sealed text;
      -- What a build's protection_level says is what was applied: until processed nothing was
      -- (null); builds protected before encryption existed were not encrypted, so they say none.
      ALTER TABLE builds ALTER COLUMN protection_level DROP NOT NULL;
      UPDATE builds SET protection_level = CASE WHEN status IN ('QUEUED', 'PROCESSING') THEN NULL ELSE 'none' END;
      ALTER TABLE builds ADD CONSTRAINT builds_protection_level_check CHECK (protection_level IN ('none', 'encrypted', 'encrypted_hardened'));
      -- The device's X25519 public key (base64url), to which content keys are wrapped; set by
      -- activation and by a refresh with the license key, never by a refresh with a token alone.
      ALTER TABLE devices ADD COLUMN device_key text;
      -- Starts of modified copies of a protected build, as the runtime reports them under its license.
      ALTER TABLE licenses ADD COLUMN tamper_reports integer NOT NULL DEFAULT 0, ADD COLUMN last_tamper_report_at timestamptz;
    `);
  },
  async down(db) {
    await db.raw(`
      ALTER TABLE licenses DROP COLUMN tamper_reports, DROP COLUMN last_tamper_report_at;
      ALTER TABLE devices DROP COLUMN device_key;
      ALTER TABLE builds DROP CONSTRAINT builds_protection_level_check;
      UPDATE builds SET protection_level = 'none' WHERE protection_level IS NULL OR protection_level <> 'none';
      ALTER TABLE builds ALTER COLUMN protection_level SET NOT NULL;
      ALTER TABLE builds DROP COLUMN content_key_sealed;
    `);
  },
};
