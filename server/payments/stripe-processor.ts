import Stripe from 'stripe';
import {
  AccountAccessRevokedError,
  InvalidSignatureError,
  ProcessorUnavailableError,
  type PaymentProcessor,
  type ProcessorCheckoutSession,
  type ProcessorPrice,
} from './processor.js';

/** Stripe's default tolerance for the signature timestamp: older deliveries are refused as replays. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export interface StripeSettings {
  secretKey: string;
  webhookSecret: string | undefined;
  /** Tests: a local fake of the Stripe API (which then answers Connect OAuth too, as the `stripe` package sends it there). */
  apiBase: URL | undefined;
  /** The platform's Connect client id (ca_...), for Connect OAuth. */
  connectClientId?: string | undefined;
}

/** Where Connect OAuth's authorize page lives: Stripe's, or the fake standing in for every Stripe host. */
const CONNECT_BASE = 'https://connect.stripe.com';

/** Stripe answered that the object does not exist (on that account): data, not a failure. */
function isMissing(err: unknown): boolean {
  return err instanceof Stripe.errors.StripeInvalidRequestError && (err.statusCode === 404 || err.code === 'resource_missing');
}

/** Stripe's answer to a request on an account that no longer grants this platform access (HTTP 403). */
const isAccessRevoked = (err: unknown) => err instanceof Stripe.errors.StripeError && err.code === 'account_invalid';

/** Missing objects read as null; every other failure is the processor's, never a 500 of ours. */
async function orNullWhenMissing<T>(request: Promise<T>): Promise<T | null> {
  try {
    return await request;
  } catch (err) {
    if (isMissing(err)) return null;
    if (isAccessRevoked(err)) throw new AccountAccessRevokedError('Stripe: the account no longer grants this platform access');
    const message = err instanceof Stripe.errors.StripeError ? `${err.type}${err.statusCode ? ` ${err.statusCode}` : ''}` : 'request failed';
    throw new ProcessorUnavailableError(`Stripe: ${message}`);
  }
}

/** For creations: a missing Price or account here is the processor refusing, not data. */
async function orThrowUnavailable<T>(request: Promise<T>): Promise<T> {
  const result = await orNullWhenMissing(request);
  if (result === null) throw new ProcessorUnavailableError('Stripe: the Price or account is no longer there');
  return result;
}

const idOf = (value: string | { id: string } | null | undefined) => (typeof value === 'string' ? value : (value?.id ?? null));

/** The official client, pointed at the fake API in tests; shared by the processor and the fee reporter. */
export function createStripeClient(settings: StripeSettings): Stripe {
  const base = settings.apiBase;
  return new Stripe(settings.secretKey, {
    // Webhook deliveries retry on a 503 of ours; no retries stacked inside one request.
    maxNetworkRetries: 0,
    timeout: 10_000,
    ...(base && {
      host: base.hostname,
      port: Number(base.port || (base.protocol === 'https:' ? 443 : 80)),
      protocol: base.protocol === 'http:' ? 'http' : 'https',
    }),
  });
}

/** The processor interface on the official `stripe` package; connected accounts through the Stripe-Account header. */
export function createStripeProcessor(settings: StripeSettings, stripe: Stripe = createStripeClient(settings)): PaymentProcessor {
  return {
    authorizeUrl({ state, redirectUri }) {
      if (!settings.connectClientId) throw new Error('authorizeUrl needs LATCHKEY_STRIPE_CONNECT_CLIENT_ID');
      const base = settings.apiBase ? settings.apiBase.href.replace(/\/+$/, '') : CONNECT_BASE;
      const query = new URLSearchParams({ response_type: 'code', client_id: settings.connectClientId, scope: 'read_write', state, redirect_uri: redirectUri });
      return `${base}/oauth/authorize?${query}`;
    },

    async exchangeAuthorizationCode(code) {
      try {
        const answer = await stripe.oauth.token({ grant_type: 'authorization_code', code });
        if (!answer.stripe_user_id) throw new ProcessorUnavailableError('Stripe: the token answer names no account');
        return { accountId: answer.stripe_user_id };
      } catch (err) {
        // invalid_grant: the code is unknown, expired, used, or another platform's; data, not an outage.
        if (err instanceof Stripe.errors.StripeInvalidGrantError) return null;
        if (err instanceof ProcessorUnavailableError) throw err;
        throw new ProcessorUnavailableError(`Stripe: ${err instanceof Stripe.errors.StripeError ? err.type : 'request failed'}`);
      }
    },

    async deauthorize(accountId) {
      if (!settings.connectClientId) return;
      try {
        await stripe.oauth.deauthorize({ client_id: settings.connectClientId, stripe_user_id: accountId });
      } catch (err) {
        // invalid_client: this platform is not connected to the account (any more): as good as done.
        if (err instanceof Stripe.errors.StripeInvalidClientError) return;
        throw new ProcessorUnavailableError(`Stripe: ${err instanceof Stripe.errors.StripeError ? err.type : 'request failed'}`);
      }
    },

    async retrievePrice(accountId, priceId): Promise<ProcessorPrice | null> {
      const price = await orNullWhenMissing(stripe.prices.retrieve(priceId, {}, { stripeAccount: accountId }));
      if (!price) return null;
      return {
        id: price.id,
        active: price.active,
        type: price.type,
        billingScheme: price.billing_scheme,
        unitAmount: price.unit_amount ?? null,
        currency: price.currency,
        recurring: price.recurring ? { interval: price.recurring.interval, usageType: price.recurring.usage_type } : null,
      };
    },

    async retrieveCheckoutSession(accountId, sessionId): Promise<ProcessorCheckoutSession | null> {
      const session = await orNullWhenMissing(
        stripe.checkout.sessions.retrieve(sessionId, { expand: ['line_items', 'payment_link', 'subscription'] }, { stripeAccount: accountId }),
      );
      if (!session) return null;
      const link = typeof session.payment_link === 'object' ? session.payment_link : null;
      const subscription = typeof session.subscription === 'object' ? session.subscription : null;
      // The period is per item on current API versions; the subscription is paid until its last item's ends.
      const periodEnds = subscription?.items.data.map((item) => item.current_period_end) ?? [];
      return {
        id: session.id,
        livemode: session.livemode,
        mode: session.mode,
        paymentStatus: session.payment_status,
        customerEmail: session.customer_details?.email ?? session.customer_email ?? null,
        priceIds: (session.line_items?.data ?? []).map((item) => idOf(item.price)).filter((id): id is string => id !== null),
        metadata: session.metadata ?? {},
        paymentLinkId: idOf(session.payment_link),
        applicationFeeAmount: link?.application_fee_amount ?? null,
        paymentLinkApplication: idOf(link?.application ?? null),
        currency: session.currency ?? null,
        subscription: subscription && periodEnds.length > 0 ? { id: subscription.id, currentPeriodEnd: new Date(Math.max(...periodEnds) * 1000) } : null,
      };
    },

    async createPaymentLink(accountId, link) {
      const created = await orThrowUnavailable(
        stripe.paymentLinks.create(
          {
            line_items: [{ price: link.priceId, quantity: 1 }],
            // Stripe copies a payment link's metadata to each of its checkout sessions.
            metadata: { service_app_id: link.appId },
            ...(link.applicationFeeCents !== null && { application_fee_amount: link.applicationFeeCents }),
            after_completion: { type: 'redirect', redirect: { url: link.redirectUrl } },
          },
          { stripeAccount: accountId },
        ),
      );
      return { id: created.id, url: created.url };
    },

    async deactivatePaymentLink(accountId, linkId) {
      // A link already gone at the processor is as good as deactivated.
      await orNullWhenMissing(stripe.paymentLinks.update(linkId, { active: false }, { stripeAccount: accountId }));
    },

    async createCheckoutSession(accountId, session) {
      const created = await orThrowUnavailable(
        stripe.checkout.sessions.create(
          {
            mode: session.mode,
            line_items: [{ price: session.priceId, quantity: 1 }],
            metadata: session.metadata,
            success_url: session.successUrl,
            expires_at: Math.floor(session.expiresAt.getTime() / 1000),
          },
          { stripeAccount: accountId },
        ),
      );
      if (!created.url) throw new ProcessorUnavailableError('Stripe: the checkout session has no URL');
      return { id: created.id, url: created.url };
    },

    verifyEvent(rawBody, signatureHeader, receivedAt) {
      if (!settings.webhookSecret) throw new InvalidSignatureError('No webhook signing secret is configured (LATCHKEY_STRIPE_WEBHOOK_SECRET)');
      if (!signatureHeader) throw new InvalidSignatureError('The Stripe-Signature header is missing');
      try {
        // Only the signature is Stripe's to check; the payload is validated by our own schemas after.
        // `receivedAt` in milliseconds, as the SDK reads it: the server's clock judges the age.
        stripe.webhooks.constructEvent(rawBody, signatureHeader, settings.webhookSecret, SIGNATURE_TOLERANCE_SECONDS, undefined, receivedAt.getTime());
      } catch {
        throw new InvalidSignatureError('The Stripe-Signature header does not match the body, or is too old');
      }
      try {
        return { payload: JSON.parse(rawBody.toString('utf8')) as unknown };
      } catch {
        throw new InvalidSignatureError('The signed body is not JSON');
      }
    },
  };
}
