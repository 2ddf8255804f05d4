import type { Migration } from '../migration.js';

/**
 * The metered features of licenses a channel creates (docs/contract.md, Apps and Redemption), as
 * `licenses.meters` (migration 031): an app says what its sales mint (checkout, the entitlement
 * webhook, marketplace provisioning, trials included), and a redemption batch what its codes mint
 * (NULL: the app's sold meters at redemption). Copied to each license when it is minted: changing
 * them later leaves licenses already sold alone.
 */
export const soldMeters: Migration = {
  name: '036_sold_meters',
  async up(db) {
    await db.raw(`
      ALTER TABLE apps ADD COLUMN sold_meters jsonb NOT NULL DEFAULT '{}'::jsonb;
      ALTER TABLE redemption_batches ADD COLUMN meters jsonb;
    `);
  },
  async down(db) {
    await db.raw(`
      ALTER TABLE redemption_batches DROP COLUMN meters;
      ALTER TABLE apps DROP COLUMN sold_meters;
    `);
  },
};
