import type { Migration } from '../migration.js';

/**
 * The seat model of licenses a channel creates (docs/contract.md, Apps and Redemption): an app says
 * what its sales mint (checkout, the entitlement webhook, marketplace provisioning; trials stay
 * node_locked), and a redemption batch what its codes mint. As on licenses, a floating model
 * carries its seats and lease life and a node-locked one neither; a batch keeps its seats in
 * `device_limit`, as a floating license does.
 */
export const soldSeatModels: Migration = {
  name: '032_sold_seat_models',
  async up(db) {
    await db.raw(`
      ALTER TABLE apps
        ADD COLUMN sold_seat_model text NOT NULL DEFAULT 'node_locked' CHECK (sold_seat_model IN ('node_locked', 'floating')),
        ADD COLUMN sold_max_concurrent integer CHECK (sold_max_concurrent BETWEEN 1 AND 10000),
        ADD COLUMN sold_lease_ttl_minutes integer CHECK (sold_lease_ttl_minutes BETWEEN 3 AND 1440),
        ADD CONSTRAINT apps_sold_seats_floating CHECK (
          (sold_seat_model = 'floating') = (sold_max_concurrent IS NOT NULL) AND (sold_seat_model = 'floating') = (sold_lease_ttl_minutes IS NOT NULL));

      ALTER TABLE redemption_batches
        ADD COLUMN seat_model text NOT NULL DEFAULT 'node_locked' CHECK (seat_model IN ('node_locked', 'floating')),
        ADD COLUMN lease_ttl_minutes integer CHECK (lease_ttl_minutes BETWEEN 3 AND 1440),
        ADD CONSTRAINT redemption_batches_lease_ttl_floating CHECK ((seat_model = 'floating') = (lease_ttl_minutes IS NOT NULL));
    `);
  },
  async down(db) {
    await db.raw(`
      ALTER TABLE redemption_batches DROP CONSTRAINT redemption_batches_lease_ttl_floating, DROP COLUMN lease_ttl_minutes, DROP COLUMN seat_model;
      ALTER TABLE apps DROP CONSTRAINT apps_sold_seats_floating, DROP COLUMN sold_lease_ttl_minutes, DROP COLUMN sold_max_concurrent, DROP COLUMN sold_seat_model;
    `);
  },
};
