import type { Migration } from '../migration.js';

/**
 * A store license's download allowance counted in bytes served (docs/contract.md's 10 downloads per
 * build offered): a full file's worth of one build is one download, whatever headers asked for it
 * (Range, If-Range, several ranges, a resumed transfer).
 */
export const downloadBytes: Migration = {
  name: '019_download_bytes',
  async up(db) {
    await db.raw(`
      -- Bytes of one build served to one store license, and that build's size when they were
      -- served (a signed package can replace it later): bytes_served / size_bytes downloads. The
      -- downloads counted whole until now stay in store_licenses.downloads_used and add to these.
      CREATE TABLE store_license_downloads (
        store_license_id text NOT NULL REFERENCES store_licenses (id) ON DELETE CASCADE,
        build_id text NOT NULL,
        size_bytes bigint NOT NULL CHECK (size_bytes > 0),
        bytes_served bigint NOT NULL CHECK (bytes_served >= 0),
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (store_license_id, build_id, size_bytes)
      );
    `);
  },
  async down(db) {
    await db.raw('DROP TABLE store_license_downloads');
  },
};
