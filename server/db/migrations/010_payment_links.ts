import type { Migration } from '../migration.js';

export const paymentLinks: Migration = {
  name: '010_payment_links',
  async up(db) {
    await db.raw(`
      -- Route A: the payment links this service created on developers' connected accounts, kept
      -- after they are replaced or paused, so a sale through an old one is recognised and refused.
      -- A link delivers only while it is its app's current one (deactivated_at null) and was made
      -- under the developer's current connection generation.
      CREATE TABLE payment_links (
        id text PRIMARY KEY,
        app_id text NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        account_id text NOT NULL,
        url text NOT NULL,
        connection_generation integer NOT NULL,
        created_at timestamptz NOT NULL,
        deactivated_at timestamptz
      );
      CREATE UNIQUE INDEX payment_links_current_per_app ON payment_links (app_id) WHERE deactivated_at IS NULL;

      -- Route B: checkout sessions made to pay for an existing license, by the SHA-256 of the
      -- session id (a secret). completed_at set once: a second completion changes nothing.
      CREATE TABLE license_purchase_sessions (
        session_hash text PRIMARY KEY,
        license_id text NOT NULL REFERENCES licenses(id) ON DELETE CASCADE,
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL,
        completed_at timestamptz
      );
      CREATE INDEX license_purchase_sessions_by_license ON license_purchase_sessions (license_id);

      -- How the platform fee is collected: the processor's application fee on the sale itself
      -- (a Route A one-time link), or a usage event reported to the developer's subscription.
      ALTER TABLE license_fees
        ADD COLUMN collected_by text NOT NULL DEFAULT 'usage_report' CHECK (collected_by IN ('usage_report', 'application_fee'));
    `);
  },
  async down(db) {
    await db.raw(`
      ALTER TABLE license_fees DROP COLUMN collected_by;
      DROP TABLE license_purchase_sessions, payment_links;
    `);
  },
};
