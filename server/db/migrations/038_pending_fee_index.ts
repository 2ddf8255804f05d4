import type { Migration } from '../migration.js';

/**
 * A fee report job sends the developer's other pending fees with its own (billing/store.ts
 * PENDING_FEE_REPORTS_SQL): this index finds them, oldest first, however many settled fees the
 * developer's ledger holds.
 */
export const pendingFeeIndex: Migration = {
  name: '038_pending_fee_index',
  async up(db) {
    await db.raw(`CREATE INDEX license_fees_pending ON license_fees (developer_id, charged_at, license_id) WHERE report_status = 'pending'`);
  },
  async down(db) {
    await db.raw(`DROP INDEX license_fees_pending`);
  },
};
