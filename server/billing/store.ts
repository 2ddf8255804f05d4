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
 * The job that reports a charged fee to the payment processor: one per fee, so every fee has its
 * retries. A report is not urgent (the processor bills it with the month's subscription), so a
 * fee's job is due a second after the sale and nothing wakes the runner for it: the runner's next
 * look finds the fees sold meanwhile, and the first of their jobs reports them all
 * (`findPendingFeeReports`), instead of four round trips to the database per sale. Processor
 * outages are retried with backoff (5 s doubling to 5 min): about half an hour in all.
 */
export const FEE_REPORT_JOB = { kind: 'report_license_fee', maxAttempts: 12, delaySeconds: 1 } as const satisfies {
  kind: JobKind;
  maxAttempts: number;
  delaySeconds: number;
};

/** The most fees one report job sends: about 20 s of a processor answering in 200 ms, well within its lease. */
export const FEE_REPORT_BATCH = 100;

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
      runAfter: `now() + interval '${FEE_REPORT_JOB.delaySeconds} seconds'`,
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

/**
 * A report job's batch: the pending fee of license $1 first, then the same developer's other
 * pending fees, oldest first, $2 in all (the partial index license_fees_pending finds them
 * however long the ledger); none when the job's own fee is settled (its siblings have jobs of their
 * own). Each with the developer's billing customer, so a report costs no further round trip.
 */
const PENDING_FEE_REPORTS_SQL = `
  WITH own AS (SELECT license_id, developer_id FROM license_fees WHERE license_id = $1 AND report_status = 'pending')
  SELECT f.license_id, f.developer_id, f.amount_cents, f.currency, f.report_idempotency_key, d.billing_customer_id
  FROM (
    SELECT f.license_id, f.developer_id, f.amount_cents, f.currency, f.report_idempotency_key, f.charged_at, 0 AS rank
    FROM license_fees f JOIN own USING (license_id)
    UNION ALL
    (SELECT f.license_id, f.developer_id, f.amount_cents, f.currency, f.report_idempotency_key, f.charged_at, 1
     FROM license_fees f JOIN own ON f.developer_id = own.developer_id
     WHERE f.report_status = 'pending' AND f.license_id <> own.license_id
     ORDER BY f.charged_at, f.license_id LIMIT $2::int - 1)
  ) f JOIN developers d ON d.id = f.developer_id
  ORDER BY f.rank, f.charged_at, f.license_id`;

export async function findPendingFeeReports(db: Db, licenseId: string, limit: number): Promise<PendingFeeReport[]> {
  return hotQuery<PendingFeeReport>(db, PENDING_FEE_REPORTS_SQL, [licenseId, limit], 'fees.find_pending_reports');
}

/** A report's outcome, as the ledger records it. */
export interface FeeSettlement {
  license_id: string;
  status: Exclude<FeeReportStatus, 'pending'>;
  detail: string | null;
}

/**
 * Settles pending reports only (a report settled by an earlier attempt keeps its outcome), and
 * removes the report jobs of those fees that no runner holds: their work is done.
 * A job a runner holds (the one settling, or one another runner took meanwhile) is left to finish:
 * it finds its fee settled.
 */
const SETTLE_FEE_REPORTS_SQL = `
  WITH outcome AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS o(license_id text, status text, detail text)),
  settled AS (
    UPDATE license_fees f SET report_status = o.status, report_detail = o.detail, reported_at = CASE WHEN o.status = 'reported' THEN $2::timestamptz END
    FROM outcome o WHERE f.license_id = o.license_id AND f.report_status = 'pending')
  DELETE FROM jobs j USING outcome o JOIN license_fees f ON f.license_id = o.license_id
  WHERE j.developer_id = f.developer_id AND j.kind = '${FEE_REPORT_JOB.kind}' AND j.payload->>'license_id' = o.license_id
    AND (j.locked_until IS NULL OR j.locked_until < now())`;

export async function settleFeeReports(db: Db, settlements: FeeSettlement[], at: Date): Promise<void> {
  if (settlements.length === 0) return;
  await hotQuery(db, SETTLE_FEE_REPORTS_SQL, [JSON.stringify(settlements), at], 'fees.settle_reports');
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
