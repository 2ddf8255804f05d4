import type { Knex } from 'knex';
import { effectivePlan, type Plan } from '../accounts/plan.js';
import type { Db } from '../db/knex.js';
import { mintSoldLicense } from '../licenses/mint.js';

export interface PaymentConnection {
  payment_account_id: string | null;
  payment_connected_at: Date | null;
  payment_connection_generation: number;
}

/** A developer's Pro subscription as the processor's invoice and subscription events left it. */
export interface SubscriptionState {
  id: string;
  email: string;
  company_name: string;
  plan: 'free' | 'pro';
  billing_customer_id: string | null;
  /** The current Latchkey subscription; after its deletion, the deleted one. */
  billing_subscription_id: string | null;
  /** Subscriptions deleted at the processor: their late events change nothing. */
  ended_billing_subscription_ids: string[];
  deactivated_at: Date | null;
  subscription_event_at: Date | null;
}

/** The app a paid checkout session bought, with what fulfilment needs of it and its owner. */
export interface SaleApp {
  id: string;
  developer_id: string;
  name: string;
  delivery_mode: string;
  platforms: string[];
  default_device_limit: number;
}

export interface SessionLicense {
  id: string;
  developer_id: string;
  app_id: string;
  license_key: string;
  license_type: 'perpetual' | 'subscription';
  device_limit: number;
  email: string | null;
  source: string;
  /** Shown in the portal: the session id with all but its end masked. */
  payment_session_id: string;
  payment_session_hash: string;
  /** Set for a subscription sale: the license runs to the paid period's end. */
  expires_at: Date | null;
  processor_subscription_id: string | null;
}

/** A license paid for by a buyer's subscription, as its subscription's events left it. */
export interface LicenseSubscriptionState {
  id: string;
  expires_at: Date | null;
  processor_subscription_event_at: Date | null;
}

export type SubscriptionChange = Partial<{
  plan: 'free' | 'pro';
  billing_customer_id: string;
  billing_subscription_id: string;
  /** A subscription deleted at the processor, added to `ended_billing_subscription_ids`. */
  ended_subscription_id: string;
  plan_period_end: Date | null;
  plan_grace_until: Date | null;
  subscription_metadata: Record<string, string>;
  /** Set when the subscription is deleted, cleared by a new one (accounts/deactivation.ts). */
  deactivated_at: Date | null;
}>;

const SUBSCRIPTION_COLUMNS = [
  'id',
  'email',
  'company_name',
  'plan',
  'billing_customer_id',
  'billing_subscription_id',
  'ended_billing_subscription_ids',
  'deactivated_at',
  'subscription_event_at',
];
const CONNECTION_COLUMNS = ['payment_account_id', 'payment_connected_at', 'payment_connection_generation'];

export function createPaymentsStore(db: Db) {
  return {
    transaction: <T>(work: (trx: Knex.Transaction) => Promise<T>) => db.transaction(work),

    connection: (developerId: string) => db('developers').where({ id: developerId }).first<PaymentConnection | undefined>(CONNECTION_COLUMNS),

    /**
     * Connects an account the developer proved by OAuth. Connecting (again) starts a new generation:
     * links made under an earlier one stay dead. Another developer's connection that was never proven
     * (an id typed in before OAuth) yields to the proof; a proven one keeps the account (unique index).
     */
    connect: (developerId: string, accountId: string, now: Date) =>
      db.transaction(async (trx) => {
        await trx('developers')
          .where({ payment_account_id: accountId, payment_account_proven: false })
          .whereNot({ id: developerId })
          .update({ payment_account_id: null, payment_connected_at: null });
        const [connected] = await trx('developers')
          .where({ id: developerId })
          .update({
            payment_account_id: accountId,
            payment_account_proven: true,
            payment_connected_at: now,
            payment_connection_generation: trx.raw('payment_connection_generation + 1'),
          })
          .returning(CONNECTION_COLUMNS);
        return connected as PaymentConnection;
      }),

    disconnect: (developerId: string) =>
      db('developers')
        .where({ id: developerId })
        .update({ payment_account_id: null, payment_account_proven: false, payment_connected_at: null })
        .returning(CONNECTION_COLUMNS)
        .then((r: PaymentConnection[]) => r[0]!),

    /** Records the event id in `trx`; false when it was already processed (a concurrent twin waits here for the first to commit). */
    claimEvent: async (trx: Knex.Transaction, event: { id: string; type: string }, now: Date): Promise<boolean> => {
      const rows = await trx('payment_events').insert({ id: event.id, type: event.type, outcome: 'processing', received_at: now }).onConflict('id').ignore().returning('id');
      return rows.length === 1;
    },

    settleEvent: (trx: Knex.Transaction, eventId: string, outcome: string) => trx('payment_events').where({ id: eventId }).update({ outcome }),

    /** The owner of a connected account; unique, so one tenant at most. */
    developerOfAccount: (trx: Knex.Transaction, accountId: string, now: Date) =>
      trx('developers')
        .where({ payment_account_id: accountId })
        .first<{ id: string; payment_connection_generation: number; plan: Plan } | undefined>('id', 'payment_connection_generation', effectivePlan(trx, now)),

    /** The developer's app behind a sale: by its saved Price ID, else by the session's `service_app_id`. Never another developer's. */
    saleApp: (trx: Knex.Transaction, developerId: string, by: { priceIds: string[]; appId: string | undefined }) =>
      trx('apps')
        .where({ developer_id: developerId })
        .where((q) => {
          q.whereIn('price_id', by.priceIds);
          if (by.appId) q.orWhere({ id: by.appId });
        })
        // The Price match is what docs/contract.md names as how the app is picked; metadata only when no Price matches.
        .orderByRaw('(price_id = ANY(?)) DESC', [by.priceIds])
        .first<SaleApp | undefined>('id', 'developer_id', 'name', 'delivery_mode', 'platforms', 'default_device_limit'),

    /**
     * Mints the license of a session unless one exists: answers it, or undefined when the session
     * already has one (a retried or twin notification). A license-key collision (about one in
     * 10^23) fails the delivery, and the processor's retry mints with another key.
     */
    mintSessionLicense: (trx: Knex.Transaction, row: SessionLicense) => mintSoldLicense(trx, row, 'payment_session'),

    /** The license of a session, if it was minted (by its session hash). */
    licenseOfSession: (q: Knex | Knex.Transaction, sessionHash: string) =>
      q('licenses').where({ payment_session_hash: sessionHash }).first<{ id: string; license_key: string } | undefined>('id', 'license_key'),

    /** The developer's customer on the platform account, where license fees are billed. */
    billingCustomerOf: (developerId: string) =>
      db('developers')
        .where({ id: developerId })
        .first<{ billing_customer_id: string | null } | undefined>('billing_customer_id')
        .then((r) => r?.billing_customer_id ?? null),

    /** Locks the subscription row for the event that changes it, so two events apply one after the other. */
    subscriptionByCustomer: (trx: Knex.Transaction, customerId: string) =>
      trx('developers').where({ billing_customer_id: customerId }).forUpdate().first<SubscriptionState | undefined>(SUBSCRIPTION_COLUMNS),

    subscriptionByDeveloper: (trx: Knex.Transaction, developerId: string) =>
      trx('developers').where({ id: developerId }).forUpdate().first<SubscriptionState | undefined>(SUBSCRIPTION_COLUMNS),

    applySubscription: (trx: Knex.Transaction, developerId: string, eventAt: Date, { ended_subscription_id, ...change }: SubscriptionChange) =>
      trx('developers')
        .where({ id: developerId })
        .update({
          ...change,
          ...(change.subscription_metadata && { subscription_metadata: JSON.stringify(change.subscription_metadata) }),
          ...(ended_subscription_id && { ended_billing_subscription_ids: trx.raw('array_append(ended_billing_subscription_ids, ?)', [ended_subscription_id]) }),
          subscription_event_at: eventAt,
        }),

    /** Locks the license a subscription on the connected account pays for; never another developer's. */
    subscriptionLicense: (trx: Knex.Transaction, accountId: string, subscriptionId: string) =>
      trx('licenses')
        .join('developers', 'developers.id', 'licenses.developer_id')
        .where({ 'licenses.processor_subscription_id': subscriptionId, 'developers.payment_account_id': accountId })
        .forUpdate('licenses')
        .first<LicenseSubscriptionState | undefined>('licenses.id', 'licenses.expires_at', 'licenses.processor_subscription_event_at'),

    applyLicenseSubscription: (trx: Knex.Transaction, licenseId: string, change: { expires_at: Date; processor_subscription_event_at: Date; updated_at: Date }) =>
      trx('licenses').where({ id: licenseId }).update(change),
  };
}

export type PaymentsStore = ReturnType<typeof createPaymentsStore>;
