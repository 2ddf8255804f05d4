import type { Migration } from '../migration.js';

/** A subscription license follows the processor subscription it was sold with. */
export const licenseSubscriptions: Migration = {
  name: '012_license_subscriptions',
  async up(db) {
    await db.raw(`
      -- The subscription on the developer's connected account that pays for the license: its
      -- renewals extend expires_at, its deletion ends it. One license per subscription.
      ALTER TABLE licenses
        ADD COLUMN processor_subscription_id text,
        -- The creation time of the last subscription event applied: an older one arriving later is skipped.
        ADD COLUMN processor_subscription_event_at timestamptz;
      CREATE UNIQUE INDEX licenses_processor_subscription_id ON licenses (processor_subscription_id);
    `);
  },
  async down(db) {
    await db.raw(`
      DROP INDEX licenses_processor_subscription_id;
      ALTER TABLE licenses DROP COLUMN processor_subscription_event_at, DROP COLUMN processor_subscription_id;
    `);
  },
};
