import type { Migration } from '../migration.js';

/** Limits on two-factor guessing: per login challenge, and per account with a lockout and its notice. */
export const twoFactorAttempts: Migration = {
  name: '017_two_factor_attempts',
  async up(db) {
    await db.raw(`
      -- Every 2FA login challenge someone tried, by the SHA-256 of its token: how many codes were
      -- sent with it (at most 5 are checked) and when it completed its one login. The rows until
      -- now were challenges that completed one.
      ALTER TABLE used_login_challenges RENAME TO login_challenges;
      ALTER TABLE login_challenges RENAME CONSTRAINT used_login_challenges_pkey TO login_challenges_pkey;
      ALTER INDEX used_login_challenges_by_developer RENAME TO login_challenges_by_developer;
      ALTER TABLE login_challenges ADD COLUMN attempts integer NOT NULL DEFAULT 1, ADD COLUMN used_at timestamptz;
      UPDATE login_challenges SET used_at = now();
      ALTER TABLE login_challenges ALTER COLUMN attempts SET DEFAULT 0;

      -- Second-factor codes tried for the account in the window that started at
      -- two_factor_failures_since (checks under way count until they succeed); too many lock
      -- second-factor checks until two_factor_locked_until.
      ALTER TABLE developers
        ADD COLUMN two_factor_failures integer NOT NULL DEFAULT 0,
        ADD COLUMN two_factor_failures_since timestamptz,
        ADD COLUMN two_factor_locked_until timestamptz;

      ALTER TABLE email_outbox DROP CONSTRAINT email_outbox_kind_check;
      ALTER TABLE email_outbox ADD CONSTRAINT email_outbox_kind_check CHECK (kind IN ('license_delivery', 'plan_payment_failed', 'two_factor_locked'));
    `);
  },
  async down(db) {
    await db.raw(`
      DELETE FROM email_outbox WHERE kind = 'two_factor_locked';
      ALTER TABLE email_outbox DROP CONSTRAINT email_outbox_kind_check;
      ALTER TABLE email_outbox ADD CONSTRAINT email_outbox_kind_check CHECK (kind IN ('license_delivery', 'plan_payment_failed'));
      ALTER TABLE developers DROP COLUMN two_factor_failures, DROP COLUMN two_factor_failures_since, DROP COLUMN two_factor_locked_until;
      DELETE FROM login_challenges WHERE used_at IS NULL;
      ALTER TABLE login_challenges DROP COLUMN attempts, DROP COLUMN used_at;
      ALTER INDEX login_challenges_by_developer RENAME TO used_login_challenges_by_developer;
      ALTER TABLE login_challenges RENAME CONSTRAINT login_challenges_pkey TO used_login_challenges_pkey;
      ALTER TABLE login_challenges RENAME TO used_login_challenges;
    `);
  },
};
