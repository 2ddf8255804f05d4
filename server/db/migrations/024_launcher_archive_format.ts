import type { Migration } from '../migration.js';

/**
 * macOS builds are delivered as `launcher_archive`: a .tar.gz with the vendor-signed Node runtime
 * unmodified, the protected script and a launcher (native/deliverable), no longer a `.mjs` that
 * needs Node installed.
 */
export const launcherArchiveFormat: Migration = {
  name: '024_launcher_archive_format',
  async up(db) {
    await db.raw(`
      ALTER TABLE builds DROP CONSTRAINT builds_package_format_check;
      ALTER TABLE builds ADD CONSTRAINT builds_package_format_check
        CHECK (package_format IN ('single_executable', 'launcher_archive', 'javascript_bundle', 'as_uploaded'));
    `);
  },
  async down(db) {
    await db.raw(`
      UPDATE builds SET package_format = 'javascript_bundle' WHERE package_format = 'launcher_archive';
      ALTER TABLE builds DROP CONSTRAINT builds_package_format_check;
      ALTER TABLE builds ADD CONSTRAINT builds_package_format_check
        CHECK (package_format IN ('single_executable', 'javascript_bundle', 'as_uploaded'));
    `);
  },
};
