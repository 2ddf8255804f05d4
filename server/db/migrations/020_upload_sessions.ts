import type { Migration } from '../migration.js';

/**
 * Resumable uploads (issue 18 item 5): an upload session receives an artifact in chunks, each
 * stored as it arrives (`uploads/<id>/<offset>`), so an interrupted upload resumes at the last
 * chunk stored instead of starting again; completing it checks the declared SHA-256 and makes the build.
 */
export const uploadSessions: Migration = {
  name: '020_upload_sessions',
  async up(db) {
    await db.raw(`
      CREATE TABLE upload_sessions (
        id text PRIMARY KEY,
        developer_id text NOT NULL REFERENCES developers (id) ON DELETE CASCADE,
        app_id text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
        filename text NOT NULL,
        platform text NOT NULL,
        python_version text,
        version text,
        size_bytes bigint NOT NULL CHECK (size_bytes > 0),
        sha256 text NOT NULL,
        -- Bytes stored so far, in chunks starting at these offsets (in order).
        received_bytes bigint NOT NULL DEFAULT 0 CHECK (received_bytes >= 0 AND received_bytes <= size_bytes),
        part_offsets bigint[] NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX upload_sessions_by_expiry ON upload_sessions (expires_at);
      CREATE INDEX upload_sessions_by_app ON upload_sessions (app_id);
    `);
  },
  async down(db) {
    await db.raw('DROP TABLE upload_sessions');
  },
};
