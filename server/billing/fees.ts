import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import type { JobQueue } from '../jobs/queue.js';
import type { LicenseType } from '../licenses/rules.js';
import { feeDue, type FeeCollection } from './fee-rule.js';
import { FEE_REPORT_JOB, feeReportPayload, insertFeeOnce, reopenUnbilledFees } from './store.js';

// The rule's names the ledger's callers also read (the rule itself is fee-rule.ts's).
export { feeIdempotencyKey, LICENSE_FEE_CENTS } from './fee-rule.js';

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
     * reports it to the payment processor a second or two later (FEE_REPORT_JOB in store.ts): no
     * need to wake the job runner for it.
     */
    async recordLicenseFee(trx: Knex.Transaction, request: LicenseFeeRequest): Promise<LicenseFeeOutcome> {
      const fee = feeDue(request);
      if (!fee) return 'exempt';
      const charged = await insertFeeOnce(trx, { ...fee, developer_id: request.developerId, app_id: request.appId, source: request.source, charged_at: clock.now() });
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
