import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import { InvoiceObject, LicenseSubscriptionObject, type ProcessorEvent } from './schemas.js';
import type { PaymentsStore } from './store.js';
import { parseObject, periodEnd, type SubscriptionEventType } from './subscriptions.js';

/**
 * A subscription license stays valid this long past the period paid: the renewal's invoice.paid
 * arrives after the period turns (the processor charges then, and may retry or deliver late), and
 * the buyer should not be locked out in between.
 */
export const LICENSE_RENEWAL_GRACE_DAYS = 3;
const DAY_MS = 86_400_000;

/** When a subscription license paid until `paidUntil` expires. */
export const subscriptionLicenseExpiry = (paidUntil: Date) => new Date(paidUntil.getTime() + LICENSE_RENEWAL_GRACE_DAYS * DAY_MS);

export type LicenseSubscriptionOutcome = 'applied' | 'stale_skipped' | 'ignored';

/**
 * Subscription licenses sold through a developer's connected account, driven by that account's
 * events: `invoice.paid` extends the license to the new period's end (never shortens it);
 * `customer.subscription.deleted` ends it at once, because the processor sends it when the
 * subscription has ended (at the period end for a cancellation at period end, or when the seller
 * cancels it now), so no paid period is left. A license is found by its subscription id and the
 * sending account together: one developer's account never reaches another's licenses. Events apply
 * in their creation order, as the developer's own subscription's do.
 */
export function createSubscriptionLicenses(deps: { store: PaymentsStore; clock: Clock }) {
  const { store } = deps;

  return async function applyLicenseSubscriptionEvent(
    trx: Knex.Transaction,
    accountId: string,
    event: ProcessorEvent & { type: SubscriptionEventType },
  ): Promise<LicenseSubscriptionOutcome> {
    let subscriptionId: string | null | undefined;
    let paidUntil: Date | null = null;
    switch (event.type) {
      case 'invoice.paid': {
        const invoice = parseObject(InvoiceObject, event.data.object);
        subscriptionId = invoice.parent?.subscription_details?.subscription;
        paidUntil = periodEnd(invoice);
        if (!paidUntil) return 'ignored';
        break;
      }
      case 'customer.subscription.deleted':
        subscriptionId = parseObject(LicenseSubscriptionObject, event.data.object).id;
        break;
      // A failed renewal changes nothing yet: the license runs out unless a later invoice is paid.
      default:
        return 'ignored';
    }
    if (!subscriptionId) return 'ignored';

    const license = await store.subscriptionLicense(trx, accountId, subscriptionId);
    if (!license) return 'ignored';
    const eventAt = new Date(event.created * 1000);
    if (license.processor_subscription_event_at && license.processor_subscription_event_at.getTime() > eventAt.getTime()) return 'stale_skipped';

    const now = deps.clock.now();
    const current = license.expires_at?.getTime();
    const expiresAt = paidUntil ? new Date(Math.max(current ?? 0, subscriptionLicenseExpiry(paidUntil).getTime())) : new Date(Math.min(current ?? Infinity, now.getTime()));
    await store.applyLicenseSubscription(trx, license.id, { expires_at: expiresAt, processor_subscription_event_at: eventAt, updated_at: now });
    return 'applied';
  };
}

export type ApplyLicenseSubscriptionEvent = ReturnType<typeof createSubscriptionLicenses>;
