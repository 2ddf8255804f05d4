import type { Knex } from 'knex';
import { hotQuery, type Db } from '../db/knex.js';
import type { JobKind, JobPayloads } from '../jobs/queue.js';
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

/** The job that reports a fee to the payment processor, inserted with the fee. */
export interface FeeReportJob {
  kind: JobKind;
  payload: JobPayloads[JobKind];
  maxAttempts: number;
}

/**
 * Charges the license (and queues `job`, when given, with it) in one statement: once a license is
 * sold, on every sale. Concurrent inserts of one license wait on each other's primary key, then all
 * but one do nothing, their job included. True when this call charged the license.
 */
const INSERT_FEE_ONCE_SQL = `
  WITH fee AS (
    INSERT INTO license_fees (license_id, developer_id, app_id, amount_cents, currency, source, charged_at, report_idempotency_key, collected_by, report_status, report_detail)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, COALESCE($10::text, 'pending'), $11)
    ON CONFLICT (license_id) DO NOTHING
    RETURNING license_id
  ), job AS (
    INSERT INTO jobs (developer_id, kind, payload, max_attempts) SELECT $2, $12::text, $13::jsonb, $14::integer FROM fee WHERE $12::text IS NOT NULL
  )
  SELECT license_id FROM fee`;

export async function insertFeeOnce(trx: Knex.Transaction, fee: NewLicenseFee, job?: FeeReportJob): Promise<boolean> {
  const rows = await hotQuery(
    trx,
    INSERT_FEE_ONCE_SQL,
    [
      fee.license_id, fee.developer_id, fee.app_id, fee.amount_cents, fee.currency, fee.source, fee.charged_at, fee.report_idempotency_key,
      fee.collected_by, fee.report_status ?? null, fee.report_detail ?? null, job?.kind ?? null, job ? JSON.stringify(job.payload) : null, job?.maxAttempts ?? null,
    ],
    'fees.insert_once',
  );
  return rows.length > 0;
}

// The fee report job runs once per license sold: its two statements are prepared (hotQuery).

export async function findPendingFeeReport(db: Db, licenseId: string): Promise<PendingFeeReport | undefined> {
  const rows = await hotQuery<PendingFeeReport>(
    db,
    `SELECT license_id, developer_id, amount_cents, currency, report_idempotency_key FROM license_fees WHERE license_id = $1 AND report_status = 'pending'`,
    [licenseId],
    'fees.find_pending_report',
  );
  return rows[0];
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
  await hotQuery(
    db,
    `UPDATE license_fees SET report_status = $2, report_detail = $3, reported_at = $4 WHERE license_id = $1 AND report_status = 'pending'`,
    [licenseId, status, detail, status === 'reported' ? at : null],
    'fees.settle_report',
  );
}
