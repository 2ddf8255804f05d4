import type { Migration } from '../migration.js';

/** Emails to developers themselves (a failed Pro renewal): about no app, of a new kind. */
export const developerEmails: Migration = {
  name: '011_developer_emails',
  async up(db) {
    await db.raw(`
      ALTER TABLE email_outbox ALTER COLUMN app_id DROP NOT NULL;
      ALTER TABLE email_outbox DROP CONSTRAINT email_outbox_kind_check;
      ALTER TABLE email_outbox ADD CONSTRAINT email_outbox_kind_check CHECK (kind IN ('license_delivery', 'plan_payment_failed'));
    `);
  },
  async down(db) {
    await db.raw(`
      DELETE FROM email_outbox WHERE kind = 'plan_payment_failed';
      ALTER TABLE email_outbox DROP CONSTRAINT email_outbox_kind_check;
      ALTER TABLE email_outbox ADD CONSTRAINT email_outbox_kind_check CHECK (kind IN ('license_delivery'));
      ALTER TABLE email_outbox ALTER COLUMN app_id SET NOT NULL;
    `);
  },
};
