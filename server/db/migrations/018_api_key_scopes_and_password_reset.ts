import type { Migration } from '../migration.js';

/** API keys with names, scopes and their last use, several per account; password reset; sessions the portal can end. */
export const apiKeyScopesAndPasswordReset: Migration = {
  name: '018_api_key_scopes_and_password_reset',
  async up(db) {
    await db.raw(`
      -- Keys from before scopes keep what they could do: admin, everything an API key may do.
      ALTER TABLE api_keys
        ADD COLUMN name text NOT NULL DEFAULT 'API key',
        ADD COLUMN scopes text[] NOT NULL DEFAULT '{admin}'
          CHECK (cardinality(scopes) > 0 AND scopes <@ ARRAY['read', 'licenses', 'builds', 'admin']),
        -- Written at most once a minute per key, not on every request.
        ADD COLUMN last_used_at timestamptz;
      ALTER TABLE api_keys ALTER COLUMN name DROP DEFAULT, ALTER COLUMN scopes DROP DEFAULT;
      DROP INDEX api_keys_one_active;
      CREATE INDEX api_keys_active_by_developer ON api_keys (developer_id, created_at) WHERE revoked_at IS NULL;

      -- Ending every session of a developer (a password change or reset, 2FA turned on).
      CREATE INDEX refresh_tokens_live_by_developer ON refresh_tokens (developer_id) WHERE revoked_at IS NULL;
      -- The sign-in session (refresh-token family) a portal session acts with, so ending that one ends it.
      ALTER TABLE portal_sessions ADD COLUMN session_id text;

      -- Emailed password reset links, by the SHA-256 of their token: 15 minutes, single use.
      CREATE TABLE password_resets (
        token_hash text PRIMARY KEY,
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        expires_at timestamptz NOT NULL,
        used_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX password_resets_by_developer ON password_resets (developer_id);

      -- Bodies that carry a credential (a reset link) are sealed under the master key until sent.
      ALTER TABLE email_outbox ADD COLUMN sealed boolean NOT NULL DEFAULT false;
      ALTER TABLE email_outbox DROP CONSTRAINT email_outbox_kind_check;
      ALTER TABLE email_outbox ADD CONSTRAINT email_outbox_kind_check
        CHECK (kind IN ('license_delivery', 'plan_payment_failed', 'two_factor_locked', 'password_reset', 'password_changed'));
    `);
  },
  async down(db) {
    await db.raw(`
      DELETE FROM email_outbox WHERE kind IN ('password_reset', 'password_changed');
      ALTER TABLE email_outbox DROP CONSTRAINT email_outbox_kind_check;
      ALTER TABLE email_outbox ADD CONSTRAINT email_outbox_kind_check CHECK (kind IN ('license_delivery', 'plan_payment_failed', 'two_factor_locked'));
      ALTER TABLE email_outbox DROP COLUMN sealed;
      DROP TABLE password_resets;
      ALTER TABLE portal_sessions DROP COLUMN session_id;
      DROP INDEX refresh_tokens_live_by_developer;
      DROP INDEX api_keys_active_by_developer;
      -- One active key per developer again: the newest stays.
      UPDATE api_keys k SET revoked_at = now()
        WHERE revoked_at IS NULL AND EXISTS (
          SELECT 1 FROM api_keys newer WHERE newer.developer_id = k.developer_id AND newer.revoked_at IS NULL
            AND (newer.created_at, newer.id) > (k.created_at, k.id));
      CREATE UNIQUE INDEX api_keys_one_active ON api_keys (developer_id) WHERE revoked_at IS NULL;
      ALTER TABLE api_keys DROP COLUMN name, DROP COLUMN scopes, DROP COLUMN last_used_at;
    `);
  },
};
