import type { Clock } from '../clock.js';
import { RequestError } from '../errors.js';
import type { FulfilSession } from './fulfilment.js';
import { AccountAccessRevokedError, InvalidSignatureError, ProcessorUnavailableError, type PaymentProcessor } from './processor.js';
import { CheckoutSessionObject, ProcessorEvent } from './schemas.js';
import type { PaymentsStore } from './store.js';
import type { ApplyLicenseSubscriptionEvent } from './subscription-licenses.js';
import { parseObject, SUBSCRIPTION_EVENTS, type ApplySubscriptionEvent, type SubscriptionEventType } from './subscriptions.js';

/** Checkout events that mean the session is paid (card payments at once; bank debits later). */
const CHECKOUT_EVENTS = new Set(['checkout.session.completed', 'checkout.session.async_payment_succeeded']);
const isSubscriptionEvent = (type: string): type is SubscriptionEventType => (SUBSCRIPTION_EVENTS as readonly string[]).includes(type);

export interface WebhookReceipt {
  received: true;
  duplicate: boolean;
  outcome: string;
}

/** An event already processed (or being processed by a twin that committed first). */
const DUPLICATE: WebhookReceipt = { received: true, duplicate: true, outcome: 'duplicate' };

/**
 * `POST /v1/webhooks/payments`: the signature on the raw body first, then the event's shape, then
 * processing once per event id. A failure of the processor answers 503, so it delivers again.
 */
export function createWebhookHandler(deps: {
  processor: PaymentProcessor;
  store: PaymentsStore;
  clock: Clock;
  fulfilSession: FulfilSession;
  applySubscriptionEvent: ApplySubscriptionEvent;
  applyLicenseSubscriptionEvent: ApplyLicenseSubscriptionEvent;
  /** After a commit that may have queued an email: start it now (a fee's report waits: billing/store.ts FEE_REPORT_JOB). */
  afterCommit: () => void;
}) {
  const { processor, store, clock } = deps;

  return async function receive(rawBody: Buffer, signatureHeader: string | undefined): Promise<WebhookReceipt> {
    let payload: unknown;
    try {
      payload = processor.verifyEvent(rawBody, signatureHeader, clock.now()).payload;
    } catch (err) {
      if (err instanceof InvalidSignatureError) throw new RequestError('INVALID_WEBHOOK_SIGNATURE', err.message);
      throw err;
    }
    const event = parseObject(ProcessorEvent, payload);

    // Connected accounts' checkout sessions are read back from the processor (line items, its
    // payment link), outside the transaction: no row lock is held across a network call.
    const checkout = CHECKOUT_EVENTS.has(event.type) && event.account ? { account: event.account, id: parseObject(CheckoutSessionObject, event.data.object).id } : null;
    let session = null;
    // The account revoked this platform's access: its sales deliver nothing here, like a disconnected one's.
    let accessRevoked = false;
    if (checkout) {
      try {
        session = await processor.retrieveCheckoutSession(checkout.account, checkout.id);
      } catch (err) {
        if (err instanceof AccountAccessRevokedError) accessRevoked = true;
        else if (err instanceof ProcessorUnavailableError) throw new RequestError('PAYMENT_PROCESSOR_UNAVAILABLE', `${err.message}; deliver the event again later`);
        else throw err;
      }
    }

    const receipt = await store.transaction(async (trx): Promise<WebhookReceipt> => {
      // A session's sale claims and settles its event in its own statements (fulfilment.ts): fewer round trips.
      if (checkout && session) {
        const outcome = await deps.fulfilSession(trx, event, checkout.account, session);
        return outcome === 'duplicate' ? DUPLICATE : { received: true, duplicate: false, outcome };
      }
      if (!(await store.claimEvent(trx, event, clock.now()))) return DUPLICATE;
      let outcome: string;
      if (checkout) outcome = accessRevoked ? 'account_not_connected' : 'session_not_found';
      // The developer's own subscription lives on the platform account; a connected account's are its buyers', paying for licenses.
      else if (isSubscriptionEvent(event.type)) {
        const subscriptionEvent = { ...event, type: event.type };
        outcome = event.account ? await deps.applyLicenseSubscriptionEvent(trx, event.account, subscriptionEvent) : await deps.applySubscriptionEvent(trx, subscriptionEvent);
      } else outcome = 'ignored';
      await store.settleEvent(trx, event.id, outcome);
      return { received: true, duplicate: false, outcome };
    });
    if (!receipt.duplicate) deps.afterCommit();
    return receipt;
  };
}
