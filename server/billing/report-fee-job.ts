import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Db } from '../db/knex.js';
import type { JobHandler } from '../jobs/runner.js';
import { FEE_REPORT_BATCH, findPendingFeeReports, settleFeeReports, type FeeSettlement } from './store.js';
import type { FeeUsageReporter } from './usage-reporter.js';

/**
 * The `report_license_fee` job: sends its fee's usage event to the payment processor, with those of
 * the developer's other pending fees (FEE_REPORT_JOB in store.ts says why), and records the
 * outcomes in one statement that also removes the jobs of the fees it settled. Run again after a
 * crash, it sends the same idempotency keys, so the processor records each event once; a report
 * already settled is not sent again.
 *
 * The first failure stops the batch: the processor is likely down for the rest too. The outcomes
 * so far are recorded; the job is retried (with backoff) only when its own fee, always the first,
 * is the one that failed. A later fee keeps its own job and that job's retries.
 */
export function reportLicenseFeeJob(deps: { db: Db; reporter: FeeUsageReporter; clock: Clock; log: Logger }): JobHandler<'report_license_fee'> {
  const { db, reporter, clock, log } = deps;

  return {
    kind: 'report_license_fee',

    async run({ license_id }, { signal }) {
      const fees = await findPendingFeeReports(db, license_id, FEE_REPORT_BATCH);
      const settled: FeeSettlement[] = [];
      let failure: unknown;
      for (const fee of fees) {
        // Stopping (a deploy): past the job's own fee, the rest is left to the fees' own jobs.
        if (signal.aborted && settled.length > 0) break;
        try {
          const outcome = await reporter.reportLicenseFee({
            licenseId: fee.license_id,
            developerId: fee.developer_id,
            amountCents: fee.amount_cents,
            currency: fee.currency,
            idempotencyKey: fee.report_idempotency_key,
            billingCustomerId: fee.billing_customer_id,
          });
          settled.push(
            outcome.status === 'reported'
              ? { license_id: fee.license_id, status: 'reported', detail: null }
              : { license_id: fee.license_id, status: 'not_reported', detail: outcome.reason },
          );
        } catch (err) {
          failure = err;
          break;
        }
      }
      await settleFeeReports(db, settled, clock.now());
      const keptFor = new Map<string | null, string[]>();
      for (const s of settled) {
        if (s.status !== 'not_reported') continue;
        const licenses = keptFor.get(s.detail) ?? [];
        keptFor.set(s.detail, licenses);
        licenses.push(s.license_id);
      }
      for (const [reason, licenses] of keptFor) log.info({ licenses, reason }, 'license fees kept in the ledger, not reported to a processor');
      if (settled.length === 0 && failure !== undefined) throw failure;
    },

    async giveUp({ license_id }, reason) {
      await settleFeeReports(db, [{ license_id, status: 'failed', detail: reason }], clock.now());
      log.error({ license: license_id, reason }, 'license fee usage event not reported after every attempt');
    },
  };
}
