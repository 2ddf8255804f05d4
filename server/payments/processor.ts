/**
 * What the service needs from a payment processor, in its own words, so the rules never touch the
 * Stripe SDK and the SDK's shapes stay in one file (stripe-processor.ts).
 */

/**
 * A Price as the price rules judge it. Enumerations stay open strings, as Stripe types them: a
 * value added later reads as unsupported rather than failing.
 */
export interface ProcessorPrice {
  id: string;
  active: boolean;
  /** `one_time` or `recurring`. */
  type: string;
  /** `per_unit` or `tiered`. */
  billingScheme: string;
  /** Minor units (cents for USD); null for tiered and custom-amount prices. */
  unitAmount: number | null;
  currency: string;
  /** `usageType`: `licensed` or `metered`. */
  recurring: { interval: string; usageType: string } | null;
}

/** A checkout session of a connected account, as fulfilment reads it back from the processor. */
export interface ProcessorCheckoutSession {
  id: string;
  /** False for a test-mode sale: its license is never billed. */
  livemode: boolean;
  /** `payment`, `subscription` or `setup`. */
  mode: string;
  /** `paid`, `unpaid` or `no_payment_required`. */
  paymentStatus: string;
  customerEmail: string | null;
  priceIds: string[];
  metadata: Record<string, string>;
  /** The payment link it came from, when it came from one. */
  paymentLinkId: string | null;
  /** The Connect application (`ca_...`) that made that payment link, which its application fee goes to; null for a link the account made itself. */
  paymentLinkApplication: string | null;
  /** The fixed fee set on that payment link (Route A's), in the session's currency; null when none. */
  applicationFeeAmount: number | null;
  /** The three-letter currency the buyer paid in, lowercase (`usd`). */
  currency: string | null;
  /** The subscription a `subscription` session started, with the end of its paid period; else null. */
  subscription: { id: string; currentPeriodEnd: Date } | null;
}

/** Route A: a reusable link selling one Price, quantity 1, on a connected account. */
export interface NewPaymentLink {
  priceId: string;
  /** Copied into each session's metadata: names the app when no Price matches. */
  appId: string;
  /** The platform fee taken on each sale by the processor (one-time prices only), or null. */
  applicationFeeCents: number | null;
  /** Where the buyer lands after paying, `{CHECKOUT_SESSION_ID}` literal: the processor fills it in. */
  redirectUrl: string;
}

/** Route B: a one-off checkout for an existing license. */
export interface NewCheckoutSession {
  priceId: string;
  mode: 'payment' | 'subscription';
  metadata: Record<string, string>;
  successUrl: string;
  expiresAt: Date;
}

/** A notification whose signature checked out; its payload is still unvalidated JSON. */
export interface VerifiedEvent {
  payload: unknown;
}

export interface PaymentProcessor {
  /**
   * Connect OAuth: where the developer's browser is sent to authorize this platform on their
   * account; the processor sends it back to `redirectUri` with `code` (or `error`) and `state`.
   */
  authorizeUrl(request: { state: string; redirectUri: string }): string;
  /** Connect OAuth: the account an authorization code was issued for (the code is spent), or null when the processor refuses the code. */
  exchangeAuthorizationCode(code: string): Promise<{ accountId: string } | null>;
  /** Connect OAuth: revokes this platform's access to the account; an account already disconnected is not a failure. */
  deauthorize(accountId: string): Promise<void>;
  /** The Price on the connected account, or null when it has no such Price. */
  retrievePrice(accountId: string, priceId: string): Promise<ProcessorPrice | null>;
  /** The session on the connected account with its line items, payment link and subscription, or null. */
  retrieveCheckoutSession(accountId: string, sessionId: string): Promise<ProcessorCheckoutSession | null>;
  createPaymentLink(accountId: string, link: NewPaymentLink): Promise<{ id: string; url: string }>;
  /** Stops the link taking payments (its URL shows the processor's "no longer active" page). */
  deactivatePaymentLink(accountId: string, linkId: string): Promise<void>;
  createCheckoutSession(accountId: string, session: NewCheckoutSession): Promise<{ id: string; url: string }>;
  /** Checks the signature header against the raw body; throws InvalidSignatureError when it fails. */
  verifyEvent(rawBody: Buffer, signatureHeader: string | undefined, receivedAt: Date): VerifiedEvent;
}

/** The notification is not from the processor (missing, tampered, wrong secret, outside the tolerance). */
export class InvalidSignatureError extends Error {}

/** The processor could not answer (network, outage, its own 5xx): the caller answers 503, and the processor retries. */
export class ProcessorUnavailableError extends Error {}

/**
 * The processor refuses this platform any access to the account: it revoked the connection (or was
 * disconnected here). Callers that can do without the account say so; the others answer it as an outage.
 */
export class AccountAccessRevokedError extends ProcessorUnavailableError {}
