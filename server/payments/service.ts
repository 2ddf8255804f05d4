import type { Clock } from '../clock.js';
import { isUniqueViolation } from '../db/knex.js';
import { RequestError } from '../errors.js';
import { priceRefusal } from './price-rules.js';
import { ProcessorUnavailableError, type PaymentProcessor } from './processor.js';
import type { PaymentConnection, PaymentsStore } from './store.js';

/** No Stripe key configured: every commerce operation says so instead of failing. */
const notConfigured = () => new RequestError('PAYMENTS_NOT_CONFIGURED', 'Payments are not configured on this server (LATCHKEY_STRIPE_SECRET_KEY is unset)');

export function requireProcessor(processor: PaymentProcessor | null): PaymentProcessor {
  if (!processor) throw notConfigured();
  return processor;
}

/** A processor outage is the caller's to retry, never a 500. */
export async function askProcessor<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (err) {
    if (err instanceof ProcessorUnavailableError) throw new RequestError('PAYMENT_PROCESSOR_UNAVAILABLE', `${err.message}; try again later`);
    throw err;
  }
}

export const connectionView = (c: PaymentConnection) => ({
  connected: c.payment_account_id !== null,
  account_id: c.payment_account_id,
  connected_at: c.payment_connected_at?.toISOString() ?? null,
});

/** Connecting the developer's processor account, and the price rules a saved Price ID answers to. */
export function createPaymentsService(deps: { store: PaymentsStore; processor: PaymentProcessor | null; clock: Clock }) {
  const { store, clock } = deps;

  async function connection(developerId: string): Promise<PaymentConnection> {
    const found = await store.connection(developerId);
    if (!found) throw new RequestError('DEVELOPER_NOT_FOUND', 'No such developer');
    return found;
  }

  return {
    connection,
    notConfigured,

    /**
     * Stores the account a Connect OAuth authorization proved the developer controls (connect.ts),
     * unless another developer here has it; never an id the developer typed.
     */
    async connect(developerId: string, accountId: string): Promise<PaymentConnection> {
      try {
        return await store.connect(developerId, accountId, clock.now());
      } catch (err) {
        if (isUniqueViolation(err, 'developers_payment_account_key')) {
          throw new RequestError('PAYMENT_ACCOUNT_IN_USE', 'This processor account is connected to another developer');
        }
        throw err;
      }
    },

    /**
     * Revokes this platform's access at the processor first (an outage: 503, nothing changes), then
     * forgets the account. Licenses already sold keep working; sales stop delivering until an
     * account is connected again. With no processor configured any more, only the local record goes.
     */
    async disconnect(developerId: string): Promise<PaymentConnection> {
      const { payment_account_id: accountId } = await connection(developerId);
      const processor = deps.processor;
      if (accountId && processor) await askProcessor(() => processor.deauthorize(accountId));
      return store.disconnect(developerId);
    },

    /** docs/contract.md's price rules, checked against the developer's connected account when a Price ID is saved. */
    async checkPriceId(developerId: string, priceId: string): Promise<void> {
      const processor = requireProcessor(deps.processor);
      const { payment_account_id: accountId } = await connection(developerId);
      if (!accountId) {
        throw new RequestError(
          'PAYMENT_ACCOUNT_NOT_CONNECTED',
          'Connect your payment processor account (POST /v1/payments/account/connect, or Settings in the portal) before saving a Price ID',
        );
      }
      const price = await askProcessor(() => processor.retrievePrice(accountId, priceId));
      if (!price) throw new RequestError('PRICE_NOT_FOUND', `Your connected account ${accountId} has no Price ${priceId}`);
      const refusal = priceRefusal(price);
      if (refusal) throw new RequestError('PRICE_NOT_SUPPORTED', refusal);
    },
  };
}

export type PaymentsService = ReturnType<typeof createPaymentsService>;
