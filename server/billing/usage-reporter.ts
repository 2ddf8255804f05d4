/** One license's platform fee, as the payment processor receives it as a usage event. */
export interface LicenseFeeUsage {
  licenseId: string;
  developerId: string;
  amountCents: number;
  /** ISO 4217, lower case (`usd`). */
  currency: string;
  /** The same on every attempt for a license: the processor must record the event once per key. */
  idempotencyKey: string;
  /** The developer's customer on the platform account as the fee was read (null: none yet, nothing to bill). */
  billingCustomerId: string | null;
}

export type FeeReportOutcome =
  | { status: 'reported' }
  /** Nothing to report to (no processor, or none connected for this developer): the ledger row is the record. */
  | { status: 'not_reported'; reason: string };

/**
 * Sends fee usage events to the payment processor. Throw to have the report retried (with
 * backoff); the same idempotency key comes back each time.
 */
export interface FeeUsageReporter {
  reportLicenseFee(usage: LicenseFeeUsage): Promise<FeeReportOutcome>;
}

/**
 * The reporter when no payment processor is configured: it reports nothing and says so. Each fee is
 * kept in the ledger (`license_fees`) and marked `not_reported` with this reason, never shown as
 * billed when it was not.
 */
export const ledgerOnlyFeeReporter: FeeUsageReporter = {
  async reportLicenseFee() {
    return { status: 'not_reported', reason: 'no payment processor is configured for usage reporting; the fee is in the ledger only' };
  },
};
