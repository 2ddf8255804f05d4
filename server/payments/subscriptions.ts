import type { Knex } from 'knex';
import type { z } from 'zod';
import type { Logger } from 'pino';
import type { FeeLedger } from '../billing/fees.js';
import type { EmailOutbox } from '../email/outbox.js';
import { RequestError } from '../errors.js';
import { InvoiceObject, SubscriptionObject, type ProcessorEvent } from './schemas.js';
import type { PaymentsStore, SubscriptionChange, SubscriptionState } from './store.js';

/** After a failed renewal the developer keeps Pro this long while the processor retries the charge. */
export const PLAN_GRACE_DAYS = 7;
const DAY_MS = 86_400_000;
const graceEnd = (failedAt: Date) => new Date(failedAt.getTime() + PLAN_GRACE_DAYS * DAY_MS);

export const SUBSCRIPTION_EVENTS = [
  'invoice.paid',
  'invoice.payment_failed',
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
] as const;
export type SubscriptionEventType = (typeof SUBSCRIPTION_EVENTS)[number];

/** Statuses of a subscription that is running: a new one in either reactivates a deactivated account. */
const LIVE_STATUSES = new Set(['active', 'trialing']);

/**
 * `ended_subscription_skipped`: about a subscription deleted before; `other_subscription_skipped`:
 * about one that is not the current one; `other_subscription_ended`: a replaced subscription's
 * deletion, recorded without deactivating the account.
 */
export type SubscriptionOutcome = 'applied' | 'stale_skipped' | 'developer_not_found' | 'ended_subscription_skipped' | 'other_subscription_skipped' | 'other_subscription_ended';

/** Validates the event's object after the signature check: a signed but malformed event is still a 400. */
export function parseObject<T>(schema: z.ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw new RequestError('VALIDATION_FAILED', `data.object.${issue.path.map(String).join('.')}: ${issue.message}`);
}

const developerIdOf = (invoice: InvoiceObject) =>
  invoice.metadata.developer_id ?? invoice.parent?.subscription_details?.metadata.developer_id ?? invoice.subscription_details?.metadata.developer_id;

/** The subscription an invoice bills: under `parent` since API version 2025-03-31.basil, at the top before. */
const subscriptionIdOf = (invoice: InvoiceObject) => invoice.parent?.subscription_details?.subscription ?? invoice.subscription ?? undefined;

/** The end of the paid period: the latest line's, else the invoice's own. */
export function periodEnd(invoice: InvoiceObject): Date | null {
  const ends = (invoice.lines?.data ?? []).map((line) => line.period.end);
  const end = ends.length > 0 ? Math.max(...ends) : invoice.period_end;
  return end === undefined ? null : new Date(end * 1000);
}

/**
 * The developer's own Pro subscription, driven by the platform account's events. The developer is
 * found by the stored customer id; the first invoice.paid (or subscription created or updated)
 * links the customer to the developer named in its metadata `developer_id`, and so does one under a
 * new customer for a deactivated developer, who re-subscribes. Events apply in their creation
 * order: an older one arriving after a newer one is recorded and skipped.
 *
 * Events are tied to a subscription: the developer's current one (`billing_subscription_id`) is the
 * latest created or paid. Deleting it deactivates the account (accounts/deactivation.ts says what
 * that stops) and ends it; deleting another one (replaced by a plan switch) only ends that one.
 * Nothing about an ended subscription changes the account again, so the final usage invoice of a
 * deleted subscription neither reactivates it nor restores Pro. A new subscription, paid
 * (`invoice.paid`) or running (created as active or trialing), or the current one updated as
 * running, reactivates it. An event without a subscription id is taken as about the current one.
 */
export function createSubscriptions(deps: {
  store: PaymentsStore;
  outbox: Pick<EmailOutbox, 'queuePaymentFailedEmail'>;
  fees: Pick<FeeLedger, 'reportUnbilledFees'>;
  log: Logger;
}) {
  const { store } = deps;

  async function subscriberOf(trx: Knex.Transaction, customerId: string, developerId: string | undefined): Promise<SubscriptionState | undefined> {
    const known = await store.subscriptionByCustomer(trx, customerId);
    if (known || !developerId) return known;
    const named = await store.subscriptionByDeveloper(trx, developerId);
    // A developer billed under another customer is not re-linked by someone's metadata, unless their
    // subscription there was deleted: a deactivated developer may subscribe again as a new customer.
    const relinkable = named && (named.billing_customer_id === null || named.billing_customer_id === customerId || named.deactivated_at !== null);
    return relinkable ? named : undefined;
  }

  return async function applySubscriptionEvent(trx: Knex.Transaction, event: ProcessorEvent & { type: SubscriptionEventType }): Promise<SubscriptionOutcome> {
    const eventAt = new Date(event.created * 1000);
    let about: { customerId: string; developerId?: string | undefined; subscriptionId: string | undefined };
    let invoice: InvoiceObject | undefined;
    let subscription: SubscriptionObject | undefined;
    if (event.type === 'invoice.paid' || event.type === 'invoice.payment_failed') {
      invoice = parseObject(InvoiceObject, event.data.object);
      about = { customerId: invoice.customer, developerId: developerIdOf(invoice), subscriptionId: subscriptionIdOf(invoice) };
    } else {
      subscription = parseObject(SubscriptionObject, event.data.object);
      about = { customerId: subscription.customer, developerId: subscription.metadata.developer_id, subscriptionId: subscription.id };
    }

    const developer = await subscriberOf(trx, about.customerId, about.developerId);
    if (!developer) return 'developer_not_found';
    if (developer.subscription_event_at && developer.subscription_event_at.getTime() > eventAt.getTime()) return 'stale_skipped';
    const { subscriptionId } = about;
    if (subscriptionId && developer.ended_billing_subscription_ids.includes(subscriptionId)) return 'ended_subscription_skipped';
    const isCurrent = subscriptionId === undefined || developer.billing_subscription_id === null || subscriptionId === developer.billing_subscription_id;
    const becomesCurrent = subscriptionId ? { billing_subscription_id: subscriptionId } : {};
    const linked = { billing_customer_id: about.customerId };

    let change: SubscriptionChange;
    switch (event.type) {
      case 'invoice.paid':
        change = { plan: 'pro', ...linked, ...becomesCurrent, plan_period_end: periodEnd(invoice!), plan_grace_until: null, deactivated_at: null };
        break;
      case 'invoice.payment_failed':
        // Only the current subscription's renewal failing puts Pro in its grace period.
        if (!isCurrent) return 'other_subscription_skipped';
        change = { plan_grace_until: graceEnd(eventAt) };
        break;
      case 'customer.subscription.created':
        change = { ...linked, ...becomesCurrent, subscription_metadata: { ...subscription!.metadata, status: subscription!.status } };
        if (LIVE_STATUSES.has(subscription!.status)) change.deactivated_at = null;
        break;
      case 'customer.subscription.updated':
        if (!isCurrent) return 'other_subscription_skipped';
        change = { ...linked, subscription_metadata: { ...subscription!.metadata, status: subscription!.status } };
        if (LIVE_STATUSES.has(subscription!.status)) change.deactivated_at = null;
        break;
      case 'customer.subscription.deleted':
        change = isCurrent ? { plan: 'free', plan_period_end: null, plan_grace_until: null, deactivated_at: eventAt } : {};
        if (subscriptionId) change.ended_subscription_id = subscriptionId;
        break;
    }

    await store.applySubscription(trx, developer.id, eventAt, change);
    if (developer.billing_customer_id === null && change.billing_customer_id) {
      // The developer can be billed now: fees kept in the ledger for want of a customer are reported.
      const reported = await deps.fees.reportUnbilledFees(trx, developer.id);
      if (reported > 0) deps.log.info({ developer_id: developer.id, fees: reported }, 'earlier unbilled license fees queued for reporting');
    }
    if (event.type === 'invoice.payment_failed') {
      const graceUntil = graceEnd(eventAt);
      await deps.outbox.queuePaymentFailedEmail(trx, { developerId: developer.id, recipient: developer.email, companyName: developer.company_name, graceUntil, eventId: event.id });
      deps.log.warn({ developer_id: developer.id, grace_until: graceUntil }, 'Pro subscription payment failed; grace period started, developer notified');
    }
    return event.type === 'customer.subscription.deleted' && !isCurrent ? 'other_subscription_ended' : 'applied';
  };
}

export type ApplySubscriptionEvent = ReturnType<typeof createSubscriptions>;
