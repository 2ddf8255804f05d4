import { defineRoute } from '../http/route.js';
import { PUBLIC_PRICING } from './pricing.js';
import * as s from './schemas.js';
import { connectionView, type PaymentsService } from './service.js';
import type { createWebhookHandler } from './webhook.js';

export function paymentRoutes(payments: PaymentsService, receiveWebhook: ReturnType<typeof createWebhookHandler> | null) {
  const tag = 'Payments';
  return [
    defineRoute({
      method: 'get', path: '/v1/payments/account', operationId: 'getPaymentAccount', scope: 'read', tag, auth: 'developer', rateLimit: 'general',
      summary: 'The connected payment processor account, if any', response: s.PaymentAccount,
      handler: async ({ actor }) => connectionView(await payments.connection(actor.developerId)),
    }),
    defineRoute({
      method: 'put', path: '/v1/payments/account', operationId: 'connectPaymentAccount', scope: 'admin', tag, auth: 'developer', rateLimit: 'general',
      summary: 'Connect your Stripe account (acct_...); verified with the processor',
      description:
        'Connecting again (the same or another account) starts a new connection: payment links generated before stop delivering licenses until regenerated.',
      body: s.ConnectAccountBody, response: s.PaymentAccount, errors: [400, 409, 503],
      handler: async ({ actor, body }) => connectionView(await payments.connect(actor.developerId, body.account_id)),
    }),
    defineRoute({
      method: 'delete', path: '/v1/payments/account', operationId: 'disconnectPaymentAccount', scope: 'admin', tag, auth: 'developer', rateLimit: 'general',
      summary: 'Disconnect the processor account; licenses already sold keep working',
      response: s.PaymentAccount,
      handler: async ({ actor }) => connectionView(await payments.disconnect(actor.developerId)),
    }),
    defineRoute({
      method: 'post', path: '/v1/webhooks/payments', operationId: 'receivePaymentEvent', tag, auth: 'none',
      // Deliveries come from the processor's few addresses: the per-process guard, not the per-address API limit.
      rateLimit: 'runtime',
      summary: 'Payment processor notifications (Stripe events), signed in the Stripe-Signature header',
      rawBody: { description: 'A Stripe event, exactly as signed' },
      response: s.WebhookReceipt, errors: [400, 503],
      handler: async ({ ctx }) => {
        if (!receiveWebhook) throw payments.notConfigured();
        return receiveWebhook(ctx.state.rawBody as Buffer, ctx.get('stripe-signature') || undefined);
      },
    }),
    defineRoute({
      method: 'get', path: '/v1/public/pricing', operationId: 'getPricing', tag: 'Public', auth: 'none', rateLimit: 'general',
      summary: 'Platform prices in USD', response: s.PublicPricing,
      handler: async () => PUBLIC_PRICING,
    }),
  ];
}
