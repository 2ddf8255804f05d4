import type { Migration } from '../migration.js';

export const emailAndFees: Migration = {
  name: '007_email_and_fees',
  async up(db) {
    await db.raw(`
      -- Emails to send, written in the transaction of the change that needs them (a license and its
      -- delivery email commit together) and sent by the send_email job. Deleting the developer, the
      -- app or the license deletes its unsent mail: a deleted license's key is never mailed out.
      CREATE TABLE email_outbox (
        id text PRIMARY KEY,
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        app_id text NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        license_id text REFERENCES licenses(id) ON DELETE CASCADE,
        kind text NOT NULL CHECK (kind IN ('license_delivery')),
        recipient text NOT NULL,
        subject text NOT NULL,
        text_body text NOT NULL,
        html_body text NOT NULL,
        -- What makes two requests the same email (a license and an address): queued once whatever the retries.
        dedupe_key text NOT NULL UNIQUE,
        status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sent', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        last_error text,
        sent_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      -- For the cascade when a license is deleted.
      CREATE INDEX email_outbox_by_license ON email_outbox (license_id);

      -- The platform fee ledger: the primary key is docs/contract.md's "charged once per license, whatever the
      -- route or the retries". No foreign keys: a fee is money, and its record outlives the license,
      -- the app and the developer account.
      CREATE TABLE license_fees (
        license_id text PRIMARY KEY,
        developer_id text NOT NULL,
        app_id text NOT NULL,
        amount_cents integer NOT NULL CHECK (amount_cents > 0),
        currency text NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
        -- The license's source (api, checkout, ...): which channel sold it.
        source text NOT NULL,
        charged_at timestamptz NOT NULL,
        -- The usage event sent to the payment processor (report_license_fee job), idempotent under this key.
        report_status text NOT NULL DEFAULT 'pending' CHECK (report_status IN ('pending', 'reported', 'not_reported', 'failed')),
        report_idempotency_key text NOT NULL UNIQUE,
        report_detail text,
        reported_at timestamptz
      );
      CREATE INDEX license_fees_by_developer ON license_fees (developer_id, charged_at);
    `);
  },
  async down(db) {
    await db.raw(`DROP TABLE license_fees, email_outbox`);
  },
};
