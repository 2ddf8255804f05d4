import type { Migration } from '../migration.js';

/**
 * The developer's current Latchkey subscription and the ones that ended (docs/contract.md, Billing
 * events): the platform account's events change the account only when they are about the current
 * subscription or a new one, so deleting a replaced subscription, or the final invoice of a deleted
 * one, changes nothing (server/payments/subscriptions.ts).
 */
export const billingSubscriptionId: Migration = {
  name: '035_billing_subscription_id',
  async up(db) {
    await db.raw(`ALTER TABLE developers ADD COLUMN billing_subscription_id text, ADD COLUMN ended_billing_subscription_ids text[] NOT NULL DEFAULT '{}'`);
  },
  async down(db) {
    await db.raw(`ALTER TABLE developers DROP COLUMN billing_subscription_id, DROP COLUMN ended_billing_subscription_ids`);
  },
};
