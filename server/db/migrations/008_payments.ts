import type { Migration } from '../migration.js';

export const payments: Migration = {
  name: '008_payments',
  async up(db) {
    await db.raw(`
      ALTER TABLE developers
        -- The connected processor account (acct_...). One developer per account, so a notification
        -- from an account names one tenant.
        ADD COLUMN payment_account_id text,
        ADD COLUMN payment_connected_at timestamptz,
        -- Bumped on every connect: a payment link made under an earlier connection delivers nothing.
        ADD COLUMN payment_connection_generation integer NOT NULL DEFAULT 0,
        -- The developer's own Pro subscription on the platform account (cus_...), learnt from the
        -- first invoice.paid carrying metadata developer_id.
        ADD COLUMN billing_customer_id text,
        ADD COLUMN plan_period_end timestamptz,
        ADD COLUMN plan_grace_until timestamptz,
        ADD COLUMN subscription_metadata jsonb NOT NULL DEFAULT '{}',
        -- Creation time of the latest subscription event applied: an older one arriving late is skipped.
        ADD COLUMN subscription_event_at timestamptz;
      CREATE UNIQUE INDEX developers_payment_account_key ON developers (payment_account_id) WHERE payment_account_id IS NOT NULL;
      CREATE UNIQUE INDEX developers_billing_customer_key ON developers (billing_customer_id) WHERE billing_customer_id IS NOT NULL;

      -- SHA-256 of the checkout session id (the session id is a secret: it unlocks the entitlement).
      -- Unique: one license per session, whatever the retries.
      ALTER TABLE licenses ADD COLUMN payment_session_hash text;
      CREATE UNIQUE INDEX licenses_payment_session_key ON licenses (payment_session_hash) WHERE payment_session_hash IS NOT NULL;

      -- Processor notifications already processed, by event id: replays change nothing.
      CREATE TABLE payment_events (
        id text PRIMARY KEY,
        type text NOT NULL,
        outcome text NOT NULL,
        received_at timestamptz NOT NULL
      );
    `);
  },
  async down(db) {
    await db.raw(`
      DROP TABLE payment_events;
      DROP INDEX licenses_payment_session_key;
      ALTER TABLE licenses DROP COLUMN payment_session_hash;
      DROP INDEX developers_billing_customer_key;
      DROP INDEX developers_payment_account_key;
      ALTER TABLE developers
        DROP COLUMN payment_account_id, DROP COLUMN payment_connected_at, DROP COLUMN payment_connection_generation,
        DROP COLUMN billing_customer_id, DROP COLUMN plan_period_end, DROP COLUMN plan_grace_until,
        DROP COLUMN subscription_metadata, DROP COLUMN subscription_event_at;
    `);
  },
};
