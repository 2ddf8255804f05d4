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

export type SubscriptionOutcome = 'applied' | 'stale_skipped' | 'developer_not_found';

/** Validates the event's object after the signature check: a signed but malformed event is still a 400. */
export function parseObject<T>(schema: z.ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw new RequestError('VALIDATION_FAILED', `data.object.${issue.path.map(String).join('.')}: ${issue.message}`);
}

const developerIdOf = (invoice: InvoiceObject) =>
  invoice.metadata.developer_id ?? invoice.parent?.subscription_details?.metadata.developer_id ?? invoice.subscription_details?.metadata.developer_id;

/** The end of the paid period: the latest line's, else the invoice's own. */
export function periodEnd(invoice: InvoiceObject): Date | null {
  const ends = (invoice.lines?.data ?? []).map((line) => line.period.end);
  const end = ends.length > 0 ? Math.max(...ends) : invoice.period_end;
  return end === undefined ? null : new Date(end * 1000);
}

/**
 * The developer's own Pro subscription, driven by the platform account's events. The developer is
 * found by the stored customer id; the first invoice.paid links the customer to the developer named
 * in its metadata `developer_id`. Events apply in their creation order: an older one arriving after
 * a newer one is recorded and skipped, so a late renewal never resurrects a deleted subscription.
 * Deleting the subscription deactivates the account (accounts/deactivation.ts says what that stops);
 * a new one, paid (`invoice.paid`) or running (created or updated as active or trialing),
 * reactivates it.
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
    // A developer already billed under another customer is not re-linked by someone's metadata.
    return named && (named.billing_customer_id === null || named.billing_customer_id === customerId) ? named : undefined;
  }

  return async function applySubscriptionEvent(trx: Knex.Transaction, event: ProcessorEvent & { type: SubscriptionEventType }): Promise<SubscriptionOutcome> {
    const eventAt = new Date(event.created * 1000);
    let customerId: string;
    let developerId: string | undefined;
    let change: SubscriptionChange;
    switch (event.type) {
      case 'invoice.paid': {
        const invoice = parseObject(InvoiceObject, event.data.object);
        customerId = invoice.customer;
        developerId = developerIdOf(invoice);
        change = { plan: 'pro', billing_customer_id: customerId, plan_period_end: periodEnd(invoice), plan_grace_until: null, deactivated_at: null };
        break;
      }
      case 'invoice.payment_failed': {
        customerId = parseObject(InvoiceObject, event.data.object).customer;
        change = { plan_grace_until: graceEnd(eventAt) };
        break;
      }
      case 'customer.subscription.created':
      case 'customer.subscription.updated': {
        const subscription = parseObject(SubscriptionObject, event.data.object);
        customerId = subscription.customer;
        change = { subscription_metadata: { ...subscription.metadata, status: subscription.status } };
        if (LIVE_STATUSES.has(subscription.status)) change.deactivated_at = null;
        break;
      }
      case 'customer.subscription.deleted':
        customerId = parseObject(SubscriptionObject, event.data.object).customer;
        change = { plan: 'free', plan_period_end: null, plan_grace_until: null, deactivated_at: eventAt };
        break;
    }

    const developer = await subscriberOf(trx, customerId, developerId);
    if (!developer) return 'developer_not_found';
    if (developer.subscription_event_at && developer.subscription_event_at.getTime() > eventAt.getTime()) return 'stale_skipped';
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
    return 'applied';
  };
}

export type ApplySubscriptionEvent = ReturnType<typeof createSubscriptions>;
