import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import type { JobKind, JobPayloads, JobQueue } from '../jobs/queue.js';
import type { LicenseType } from '../licenses/rules.js';
import { insertFeeOnce, reopenUnbilledFees } from './store.js';

/** docs/contract.md: "Platform fee: 4 USD per license". */
export const LICENSE_FEE_USD = 4;
export const LICENSE_FEE_CENTS = LICENSE_FEE_USD * 100;
export const FEE_CURRENCY = 'usd';

/** docs/contract.md: "Trial and test licenses are never billed" (a test license is flagged apart, whatever its type). */
export const FEE_EXEMPT_LICENSE_TYPES: readonly LicenseType[] = ['trial'];

/** How a fee reaches the platform: one closed list (the table's CHECK matches). */
export const FEE_COLLECTIONS = ['usage_report', 'application_fee'] as const;
export type FeeCollection = (typeof FEE_COLLECTIONS)[number];

/**
 * The processor's idempotency keys are one namespace per account: the prefix keeps this event's key
 * from ever matching another request's that also names the license.
 */
export const feeIdempotencyKey = (licenseId: string) => `license_fee:${licenseId}`;

/**
 * The job that reports a charged fee to the payment processor. Processor outages are retried with
 * backoff (5 s doubling to 5 min): about half an hour in all.
 */
export const FEE_REPORT_JOB = { kind: 'report_license_fee', maxAttempts: 12 } as const satisfies { kind: JobKind; maxAttempts: number };
export const feeReportPayload = (licenseId: string): JobPayloads['report_license_fee'] => ({ license_id: licenseId });

export interface LicenseFeeRequest {
  licenseId: string;
  appId: string;
  developerId: string;
  /** The license's source: the channel that sold it. */
  source: string;
  /** The license's type once sold (a converted trial is no longer `trial`). */
  licenseType: LicenseType;
  /** A test license (a processor test-mode sale, a `test: true` event): never billed. */
  test?: boolean;
  /** `application_fee`: the processor already took the fee from the sale itself; it is recorded, not reported. */
  collectedBy?: FeeCollection;
}

/** `charged`: charged now; `already_charged`: by an earlier call; `exempt`: trial and test licenses never are. */
export type LicenseFeeOutcome = 'charged' | 'already_charged' | 'exempt';

/** The platform fee ledger: each license sold is charged once, whatever the route or the retries. */
export function createFeeLedger(deps: { queue: JobQueue; clock: Clock }) {
  const { queue, clock } = deps;

  return {
    /**
     * Charges the license's fee in `trx` (the transaction that sells the license), with the job that
     * reports it to the payment processor. Call `queue.wake()` after the commit to report it at once.
     */
    async recordLicenseFee(trx: Knex.Transaction, request: LicenseFeeRequest): Promise<LicenseFeeOutcome> {
      if (FEE_EXEMPT_LICENSE_TYPES.includes(request.licenseType) || request.test) return 'exempt';
      const collectedBy = request.collectedBy ?? 'usage_report';
      const byApplicationFee = collectedBy === 'application_fee';
      const charged = await insertFeeOnce(trx, {
        license_id: request.licenseId,
        developer_id: request.developerId,
        app_id: request.appId,
        amount_cents: LICENSE_FEE_CENTS,
        currency: FEE_CURRENCY,
        source: request.source,
        charged_at: clock.now(),
        report_idempotency_key: feeIdempotencyKey(request.licenseId),
        collected_by: collectedBy,
        ...(byApplicationFee && { report_status: 'not_reported', report_detail: 'collected by the processor as the sale\'s application fee' }),
      }, byApplicationFee ? undefined : { kind: FEE_REPORT_JOB.kind, payload: feeReportPayload(request.licenseId), maxAttempts: FEE_REPORT_JOB.maxAttempts });
      return charged ? 'charged' : 'already_charged';
    },

    /**
     * Reports, in `trx`, the developer's fees that could not be billed before they had a billing
     * customer (an operator-granted Pro, say). Each report keeps its license's idempotency key, so
     * a fee the processor already recorded is never billed twice.
     */
    async reportUnbilledFees(trx: Knex.Transaction, developerId: string): Promise<number> {
      const licenseIds = await reopenUnbilledFees(trx, developerId);
      for (const licenseId of licenseIds) {
        await queue.enqueue(trx, developerId, FEE_REPORT_JOB.kind, feeReportPayload(licenseId), { maxAttempts: FEE_REPORT_JOB.maxAttempts });
      }
      return licenseIds.length;
    },
  };
}

export type FeeLedger = ReturnType<typeof createFeeLedger>;
