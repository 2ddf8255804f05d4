import type { Knex } from 'knex';
import type { Db } from '../db/knex.js';
import type { FeeCollection } from './fees.js';

/** Where a fee's usage event to the payment processor stands: one closed list (the table's CHECK matches). */
export const FEE_REPORT_STATUSES = ['pending', 'reported', 'not_reported', 'failed'] as const;
export type FeeReportStatus = (typeof FEE_REPORT_STATUSES)[number];

export interface NewLicenseFee {
  license_id: string;
  developer_id: string;
  app_id: string;
  amount_cents: number;
  currency: string;
  source: string;
  charged_at: Date;
  report_idempotency_key: string;
  collected_by: FeeCollection;
  /** Set only for a fee that is never reported (collected as an application fee). */
  report_status?: 'not_reported';
  report_detail?: string;
}

export interface PendingFeeReport {
  license_id: string;
  developer_id: string;
  amount_cents: number;
  currency: string;
  report_idempotency_key: string;
}

/** Knex queries of the fee ledger; each runs on the connection it is given. */

/** True when this call charged the license; false when it had been charged before. */
export async function insertFeeOnce(trx: Knex.Transaction, fee: NewLicenseFee): Promise<boolean> {
  // Concurrent inserts of one license wait on each other's primary key, then all but one do nothing.
  const rows = await trx('license_fees').insert(fee).onConflict('license_id').ignore().returning('license_id');
  return rows.length > 0;
}

export async function findPendingFeeReport(db: Db, licenseId: string): Promise<PendingFeeReport | undefined> {
  return db('license_fees')
    .where({ license_id: licenseId, report_status: 'pending' })
    .first('license_id', 'developer_id', 'amount_cents', 'currency', 'report_idempotency_key');
}

/**
 * Makes the developer's fees that were kept in the ledger for want of a billing customer pending
 * again (fees the processor took as application fees stay settled); answers their licenses.
 */
export async function reopenUnbilledFees(trx: Knex.Transaction, developerId: string): Promise<string[]> {
  const rows: { license_id: string }[] = await trx('license_fees')
    .where({ developer_id: developerId, collected_by: 'usage_report', report_status: 'not_reported' })
    .update({ report_status: 'pending', report_detail: null })
    .returning('license_id');
  return rows.map((r) => r.license_id);
}

/** Settles a pending report only: a report settled by an earlier attempt keeps its outcome. */
export async function settleFeeReport(db: Db, licenseId: string, status: Exclude<FeeReportStatus, 'pending'>, detail: string | null, at: Date): Promise<void> {
  await db('license_fees')
    .where({ license_id: licenseId, report_status: 'pending' })
    .update({ report_status: status, report_detail: detail, reported_at: status === 'reported' ? at : null });
}
