import { RequestError } from '../errors.js';
import { defineRoute } from '../http/route.js';
import { escapeHtml, sendPage, type PageOptions } from '../pages/html-page.js';
import { CONNECT_CALLBACK_PATH, CONNECT_COOKIE, CONNECT_RESULT_PAGE, clearConnectCookie, setConnectCookie, type ProcessorConnect } from './connect.js';
import { PUBLIC_PRICING } from './pricing.js';
import * as s from './schemas.js';
import { connectionView, type PaymentsService } from './service.js';
import type { createWebhookHandler } from './webhook.js';

/** The callback's refusal for a person in a browser: what went wrong, and the way back. */
function connectRefusedPage(err: RequestError, portalUrl: string): PageOptions {
  return {
    title: 'Stripe account not connected',
    body: `<h1>Stripe account not connected</h1><p>${escapeHtml(err.message)}</p><p class="muted">${escapeHtml(err.code)}</p><p><a class="button" href="${escapeHtml(portalUrl)}">Back to the portal</a></p>`,
  };
}

export function paymentRoutes(payments: PaymentsService, connect: ProcessorConnect, publicBaseUrl: string, receiveWebhook: ReturnType<typeof createWebhookHandler> | null) {
  const tag = 'Payments';
  return [
    defineRoute({
      method: 'get',
      path: '/v1/payments/account',
      operationId: 'getPaymentAccount',
      scope: 'read',
      tag,
      auth: 'developer',
      rateLimit: 'general',
      summary: 'The connected payment processor account, if any',
      response: s.PaymentAccount,
      handler: async ({ actor }) => connectionView(await payments.connection(actor.developerId)),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/payments/account/connect',
      operationId: 'startPaymentAccountConnection',
      scope: 'session',
      tag,
      auth: 'developer',
      rateLimit: 'general',
      summary: 'Start connecting your Stripe account (Connect OAuth): answers the authorize URL to send your browser to',
      description:
        "Connecting proves you control the account: you approve this platform on Stripe's own page, signed in to Stripe, and Stripe sends " +
        'your browser back to `GET /v1/payments/account/callback`, which connects the account Stripe names. A signed-in session only ' +
        '(an API key answers 403 `SESSION_REQUIRED`). The answer sets an HttpOnly cookie scoped to the callback path: the callback must ' +
        'come back in the same browser, within 10 minutes, once, while that sign-in (and portal session) lasts. Connecting again (the ' +
        'same or another account) starts a new connection: payment links generated before stop delivering licenses until regenerated.',
      response: s.ConnectStart,
      errors: [503],
      handler: async ({ actor, ctx }) => {
        if (actor.via !== 'access_token') throw new RequestError('SESSION_REQUIRED', 'Connecting a processor account takes a signed-in session');
        const { browserSecret, ...started } = await connect.start(actor.developerId, actor.sessionId);
        setConnectCookie(ctx, browserSecret);
        return started;
      },
    }),
    defineRoute({
      method: 'get',
      path: CONNECT_CALLBACK_PATH,
      operationId: 'finishPaymentAccountConnection',
      tag,
      auth: 'none',
      rateLimit: 'auth',
      summary: "Where Stripe's Connect OAuth sends the browser back: connects the proven account, then redirects to the portal",
      description:
        'Spends the `state` (single use: of two concurrent callbacks one wins), exchanges the `code` at Stripe (`POST /oauth/token`) for ' +
        'the account it was issued for (`stripe_user_id`) and connects it, then answers 303 to the portal settings with `payments=connected` ' +
        '(`access_denied` when the person declined on Stripe, `declined` for another Stripe error; nothing is connected). A state that is ' +
        'unknown, expired or used (400 `PAYMENT_CONNECT_STATE_INVALID`), or that another browser, account or ended sign-in started (403 ' +
        "`PAYMENT_CONNECT_STATE_MISMATCH`), or whose developer's account was deactivated since (403 `ACCOUNT_DEACTIVATED`), changes nothing. An account another developer has connected is refused (409 " +
        '`PAYMENT_ACCOUNT_IN_USE`); a code Stripe refuses answers 400 `PAYMENT_AUTHORIZATION_FAILED`. Refusals are the standard error ' +
        'body, or an HTML page with the same status when the browser asks for HTML.',
      query: s.ConnectCallbackQuery,
      status: 303,
      errors: [400, 403, 409, 503],
      fileResponse: { description: 'A redirect (303, `Location`) to the portal settings with the result; no body', contentType: 'text/html' },
      handler: async ({ query, ctx }) => {
        ctx.set('Referrer-Policy', 'no-referrer');
        ctx.set('Cache-Control', 'no-store');
        try {
          const done = await connect.complete(query, ctx.cookies.get(CONNECT_COOKIE));
          clearConnectCookie(ctx);
          ctx.redirect(`${publicBaseUrl}${CONNECT_RESULT_PAGE}?payments=${done.result}`);
          ctx.status = 303;
        } catch (err) {
          if (!(err instanceof RequestError) || ctx.accepts('application/json', 'text/html') !== 'text/html') throw err;
          sendPage(ctx, err.status, connectRefusedPage(err, `${publicBaseUrl}${CONNECT_RESULT_PAGE}`));
        }
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/payments/account',
      operationId: 'disconnectPaymentAccount',
      scope: 'admin',
      securesAccount: true,
      tag,
      auth: 'developer',
      rateLimit: 'general',
      summary: 'Disconnect the processor account; licenses already sold keep working',
      response: s.PaymentAccount,
      handler: async ({ actor }) => connectionView(await payments.disconnect(actor.developerId)),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/webhooks/payments',
      operationId: 'receivePaymentEvent',
      tag,
      auth: 'none',
      // Deliveries come from the processor's few addresses: the per-process guard, not the per-address API limit.
      rateLimit: 'runtime',
      summary: 'Payment processor notifications (Stripe events), signed in the Stripe-Signature header',
      rawBody: { description: 'A Stripe event, exactly as signed' },
      response: s.WebhookReceipt,
      errors: [400, 503],
      handler: async ({ ctx }) => {
        if (!receiveWebhook) throw payments.notConfigured();
        return receiveWebhook(ctx.state.rawBody as Buffer, ctx.get('stripe-signature') || undefined);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/public/pricing',
      operationId: 'getPricing',
      tag: 'Public',
      auth: 'none',
      rateLimit: 'general',
      summary: 'Platform prices in USD',
      response: s.PublicPricing,
      handler: async () => PUBLIC_PRICING,
    }),
  ];
}
