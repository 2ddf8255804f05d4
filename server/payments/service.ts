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

    /** The account must exist on the processor, and belong to nobody else here. */
    async connect(developerId: string, accountId: string): Promise<PaymentConnection> {
      const processor = requireProcessor(deps.processor);
      if (!(await askProcessor(() => processor.accountExists(accountId)))) {
        throw new RequestError('PAYMENT_ACCOUNT_NOT_FOUND', `The processor has no account ${accountId} connected to this platform`);
      }
      try {
        return await store.connect(developerId, accountId, clock.now());
      } catch (err) {
        if (isUniqueViolation(err, 'developers_payment_account_key')) {
          throw new RequestError('PAYMENT_ACCOUNT_IN_USE', 'This processor account is connected to another developer');
        }
        throw err;
      }
    },

    /** Licenses already sold keep working; sales stop delivering until an account is connected again. */
    disconnect: (developerId: string) => store.disconnect(developerId),

    /** docs/contract.md's price rules, checked against the developer's connected account when a Price ID is saved. */
    async checkPriceId(developerId: string, priceId: string): Promise<void> {
      const processor = requireProcessor(deps.processor);
      const { payment_account_id: accountId } = await connection(developerId);
      if (!accountId) {
        throw new RequestError('PAYMENT_ACCOUNT_NOT_CONNECTED', 'Connect your payment processor account (PUT /v1/payments/account) before saving a Price ID');
      }
      const price = await askProcessor(() => processor.retrievePrice(accountId, priceId));
      if (!price) throw new RequestError('PRICE_NOT_FOUND', `Your connected account ${accountId} has no Price ${priceId}`);
      const refusal = priceRefusal(price);
      if (refusal) throw new RequestError('PRICE_NOT_SUPPORTED', refusal);
    },
  };
}

export type PaymentsService = ReturnType<typeof createPaymentsService>;
