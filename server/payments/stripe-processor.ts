import Stripe from 'stripe';
import {
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
  /** Tests: a local fake of the Stripe API. */
  apiBase: URL | undefined;
}

/** Stripe answered that the object does not exist (on that account): data, not a failure. */
function isMissing(err: unknown): boolean {
  return err instanceof Stripe.errors.StripeInvalidRequestError && (err.statusCode === 404 || err.code === 'resource_missing');
}

/** Missing objects read as null; every other failure is the processor's, never a 500 of ours. */
async function orNullWhenMissing<T>(request: Promise<T>): Promise<T | null> {
  try {
    return await request;
  } catch (err) {
    if (isMissing(err)) return null;
    const message = err instanceof Stripe.errors.StripeError ? `${err.type}${err.statusCode ? ` ${err.statusCode}` : ''}` : 'request failed';
    throw new ProcessorUnavailableError(`Stripe: ${message}`);
  }
}

const idOf = (value: string | { id: string } | null | undefined) => (typeof value === 'string' ? value : (value?.id ?? null));

/** The processor interface on the official `stripe` package; connected accounts through the Stripe-Account header. */
export function createStripeProcessor(settings: StripeSettings): PaymentProcessor {
  const base = settings.apiBase;
  const stripe = new Stripe(settings.secretKey, {
    // Webhook deliveries retry on a 503 of ours; no retries stacked inside one request.
    maxNetworkRetries: 0,
    timeout: 10_000,
    ...(base && {
      host: base.hostname,
      port: Number(base.port || (base.protocol === 'https:' ? 443 : 80)),
      protocol: base.protocol === 'http:' ? 'http' : 'https',
    }),
  });

  return {
    async accountExists(accountId) {
      return (await orNullWhenMissing(stripe.accounts.retrieve(accountId))) !== null;
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
        stripe.checkout.sessions.retrieve(sessionId, { expand: ['line_items', 'payment_link'] }, { stripeAccount: accountId }),
      );
      if (!session) return null;
      const link = typeof session.payment_link === 'object' ? session.payment_link : null;
      return {
        id: session.id,
        livemode: session.livemode,
        mode: session.mode,
        paymentStatus: session.payment_status,
        customerEmail: session.customer_details?.email ?? session.customer_email ?? null,
        priceIds: (session.line_items?.data ?? []).map((item) => idOf(item.price)).filter((id): id is string => id !== null),
        metadata: session.metadata ?? {},
        paymentLinkId: idOf(session.payment_link),
        applicationFeePercent: link?.application_fee_percent ?? null,
      };
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
