import type Stripe from 'stripe';
import type { FeeUsageReporter } from '../billing/usage-reporter.js';

/**
 * The Billing Meter the platform account bills license fees on. Its events are summed in cents,
 * so the meter's Price is 1 cent per unit, billed with the developer's Pro subscription.
 */
export const LICENSE_FEE_METER_EVENT = 'latchkey_license_fee';

/**
 * Reports each license fee as a Billing Meter Event on the platform account, for the developer's
 * billing customer. Stripe records one event per `identifier`, and the same Idempotency-Key
 * replays the first answer: a retried job never bills twice.
 */
export function createStripeFeeReporter(deps: { stripe: Stripe }): FeeUsageReporter {
  return {
    async reportLicenseFee(usage) {
      const customer = usage.billingCustomerId;
      if (!customer) return { status: 'not_reported', reason: 'the developer has no billing customer (no Pro subscription paid yet) to bill the fee to' };
      // A failure throws: the job retries with backoff, under the same key.
      await deps.stripe.billing.meterEvents.create(
        {
          event_name: LICENSE_FEE_METER_EVENT,
          identifier: usage.idempotencyKey,
          payload: { stripe_customer_id: customer, value: String(usage.amountCents) },
        },
        { idempotencyKey: usage.idempotencyKey },
      );
      return { status: 'reported' };
    },
  };
}
