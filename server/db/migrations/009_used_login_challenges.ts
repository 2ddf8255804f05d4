import type { Migration } from '../migration.js';

export const usedLoginChallenges: Migration = {
  name: '009_used_login_challenges',
  async up(db) {
    await db.raw(`
      -- 2FA login challenges that completed a login, by the SHA-256 of the token: a challenge
      -- completes one login only. Kept until the token has expired anyway; the developer's next
      -- verify deletes their expired rows.
      CREATE TABLE used_login_challenges (
        token_hash text PRIMARY KEY,
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX used_login_challenges_by_developer ON used_login_challenges (developer_id, expires_at);
    `);
  },
  async down(db) {
    await db.raw('DROP TABLE used_login_challenges');
  },
};
