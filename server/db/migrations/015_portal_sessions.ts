import type { Migration } from '../migration.js';

export const portalSessions: Migration = {
  name: '015_portal_sessions',
  async up(db) {
    await db.raw(`
      -- Signed-in developer portal sessions. The browser holds only a random id in an HttpOnly
      -- cookie; the row is found by the id's SHA-256, and the API token pair it acts with is
      -- sealed under the master key (AES-256-GCM, bound to the row), so a database leak gives
      -- neither a usable cookie nor a usable token.
      CREATE TABLE portal_sessions (
        id_hash text PRIMARY KEY,
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        access_token_sealed text NOT NULL,
        refresh_token_sealed text NOT NULL,
        access_expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        -- Idle expiry, pushed forward as the session is used; never past absolute_expires_at.
        expires_at timestamptz NOT NULL,
        absolute_expires_at timestamptz NOT NULL
      );
      CREATE INDEX portal_sessions_by_developer ON portal_sessions (developer_id);
      CREATE INDEX portal_sessions_by_expiry ON portal_sessions (expires_at);
    `);
  },
  async down(db) {
    await db.raw('DROP TABLE portal_sessions');
  },
};
