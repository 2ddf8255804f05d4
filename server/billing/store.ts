import type { Knex } from 'knex';
import { hotQuery, type Db } from '../db/knex.js';
import { insertJobsSql, type JobKind, type JobPayloads } from '../jobs/queue.js';
import type { LicenseFee } from './fee-rule.js';

/** Where a fee's usage event to the payment processor stands: one closed list (the table's CHECK matches). */
export const FEE_REPORT_STATUSES = ['pending', 'reported', 'not_reported', 'failed'] as const;
export type FeeReportStatus = (typeof FEE_REPORT_STATUSES)[number];

/** A fee as the ledger keeps it: the rule's values (fee-rule.ts) and the sale's license, tenant, channel and time. */
export interface NewLicenseFee extends LicenseFee {
  developer_id: string;
  app_id: string;
  source: string;
  charged_at: Date;
}

export interface PendingFeeReport {
  license_id: string;
  developer_id: string;
  amount_cents: number;
  currency: string;
  report_idempotency_key: string;
  /** The developer's customer on the platform account, where the fee is billed; null before their first Pro payment. */
  billing_customer_id: string | null;
}

/**
 * The job that reports a charged fee to the payment processor. Processor outages are retried with
 * backoff (5 s doubling to 5 min): about half an hour in all.
 */
export const FEE_REPORT_JOB = { kind: 'report_license_fee', maxAttempts: 12 } as const satisfies { kind: JobKind; maxAttempts: number };
export const feeReportPayload = (licenseId: string): JobPayloads['report_license_fee'] => ({ license_id: licenseId });

const FEE_COLUMNS = [
  'license_id',
  'developer_id',
  'app_id',
  'amount_cents',
  'currency',
  'source',
  'charged_at',
  'report_idempotency_key',
  'collected_by',
  'report_status',
  'report_detail',
];

/**
 * The one text that charges a fee, as two CTEs of a statement: `fee` inserts the ledger row (once
 * per license: concurrent inserts of one license wait on each other's primary key, then all but one
 * do nothing) and `fee_job` the job that reports it, when it is reported. `record` is the SQL of a
 * jsonb NewLicenseFee (a parameter, or one completed from `from`'s columns); `from` and `where`
 * name the statement's rows it is charged for, when it sells the license itself. The job's payload
 * is feeReportPayload's, built from the row.
 */
export const chargeFeeCtes = (fee: { record: string; from?: string; where?: string }) => `
  fee AS (
    INSERT INTO license_fees (${FEE_COLUMNS.join(', ')})
    SELECT ${FEE_COLUMNS.map((c) => `f.${c}`).join(', ')}
    FROM ${fee.from ? `${fee.from}, ` : ''}jsonb_populate_record(NULL::license_fees, ${fee.record}) f
    ${fee.where ? `WHERE ${fee.where}` : ''}
    ON CONFLICT (license_id) DO NOTHING
    RETURNING license_id, developer_id, report_status
  ), fee_job AS (
    ${insertJobsSql(`fee WHERE report_status = 'pending'`, {
      developerId: 'developer_id',
      kind: `'${FEE_REPORT_JOB.kind}'`,
      payload: `jsonb_build_object('license_id', license_id)`,
      maxAttempts: String(FEE_REPORT_JOB.maxAttempts),
    })}
  )`;

/** The fee as `chargeFeeCtes`'s `record` parameter takes it. */
export const feeRecord = (fee: NewLicenseFee) => JSON.stringify(fee);

const INSERT_FEE_ONCE_SQL = `WITH ${chargeFeeCtes({ record: '$1::jsonb' })} SELECT license_id FROM fee`;

/** Charges the license, with its report job, in one statement (chargeFeeCtes); true when this call charged it. */
export async function insertFeeOnce(trx: Knex.Transaction, fee: NewLicenseFee): Promise<boolean> {
  const rows = await hotQuery(trx, INSERT_FEE_ONCE_SQL, [feeRecord(fee)], 'fees.insert_once');
  return rows.length > 0;
}

// The fee report job runs once per license sold: its two statements are prepared (hotQuery), and the
// first reads the developer's billing customer with the fee, so a report costs no third round trip.

export async function findPendingFeeReport(db: Db, licenseId: string): Promise<PendingFeeReport | undefined> {
  const rows = await hotQuery<PendingFeeReport>(
    db,
    `SELECT f.license_id, f.developer_id, f.amount_cents, f.currency, f.report_idempotency_key, d.billing_customer_id
     FROM license_fees f JOIN developers d ON d.id = f.developer_id WHERE f.license_id = $1 AND f.report_status = 'pending'`,
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
