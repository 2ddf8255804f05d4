import type { EntitlementDecision } from './broker.js';

/**
 * A commerce platform's app-subscription notification, in the shape Shopify's
 * `app_subscriptions/update` topic uses (the fields a broker needs). Other platforms map the same way.
 */
export interface SubscriptionNotification {
  app_subscription: {
    admin_graphql_api_id?: string;
    name?: string;
    status: string;
    admin_graphql_api_shop_id?: string;
    trial_days?: number;
    created_at?: string;
    updated_at?: string;
    test?: boolean;
  };
}

/** Platform statuses under which the merchant keeps the app (the rest end it). */
const ENTITLED_STATUSES = new Set(['ACTIVE', 'ACCEPTED']);

const DAY_MS = 86_400_000;

/**
 * The normalized decision for Latchkey. The platform's webhook id is the event id (its retries
 * repeat it, so Latchkey answers them `duplicate`); the time it was triggered orders the events.
 */
export function decisionFromSubscription(
  notification: SubscriptionNotification,
  context: { productKey: string; shop: string; webhookId: string; triggeredAt: string; topic?: string; customerEmail?: string },
): EntitlementDecision {
  const sub = notification.app_subscription;
  const status = sub.status.toUpperCase();
  const trialEnds = sub.created_at && sub.trial_days ? Date.parse(sub.created_at) + sub.trial_days * DAY_MS : undefined;
  const inTrial = trialEnds !== undefined && trialEnds > Date.parse(context.triggeredAt);
  return {
    app: context.productKey,
    shop: context.shop,
    entitled: ENTITLED_STATUSES.has(status),
    event_id: context.webhookId,
    occurred_at: new Date(context.triggeredAt).toISOString(),
    topic: context.topic ?? 'app_subscriptions/update',
    status,
    subscription_name: sub.name,
    trial: inTrial,
    test: sub.test === true,
    ...(context.customerEmail ? { customer_email: context.customerEmail } : {}),
    ...(sub.admin_graphql_api_id ? { subscription_gid: sub.admin_graphql_api_id } : {}),
    ...(sub.admin_graphql_api_shop_id ? { shop_gid: sub.admin_graphql_api_shop_id } : {}),
    source: 'app_store',
  };
}
