import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Db } from '../db/knex.js';
import type { JobHandler } from '../jobs/runner.js';
import { findPendingFeeReport, settleFeeReport } from './store.js';
import type { FeeUsageReporter } from './usage-reporter.js';

/**
 * The `report_license_fee` job: sends a charged fee's usage event to the payment processor and
 * records the outcome. Run again after a crash, it sends the same idempotency key, so the processor
 * records the event once; a report already settled is not sent again.
 */
export function reportLicenseFeeJob(deps: { db: Db; reporter: FeeUsageReporter; clock: Clock; log: Logger }): JobHandler<'report_license_fee'> {
  const { db, reporter, clock, log } = deps;

  return {
    kind: 'report_license_fee',

    async run({ license_id }) {
      const fee = await findPendingFeeReport(db, license_id);
      if (!fee) return;
      const outcome = await reporter.reportLicenseFee({
        licenseId: fee.license_id,
        developerId: fee.developer_id,
        amountCents: fee.amount_cents,
        currency: fee.currency,
        idempotencyKey: fee.report_idempotency_key,
        billingCustomerId: fee.billing_customer_id,
      });
      if (outcome.status === 'reported') {
        await settleFeeReport(db, license_id, 'reported', null, clock.now());
        return;
      }
      await settleFeeReport(db, license_id, 'not_reported', outcome.reason, clock.now());
      log.info({ license: license_id, reason: outcome.reason }, 'license fee kept in the ledger, not reported to a processor');
    },

    async giveUp({ license_id }, reason) {
      await settleFeeReport(db, license_id, 'failed', reason, clock.now());
      log.error({ license: license_id, reason }, 'license fee usage event not reported after every attempt');
    },
  };
}
