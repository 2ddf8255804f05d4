import type { Knex } from 'knex';
import { effectivePlanSqlAt, type Plan } from '../accounts/plan.js';
import { chargeFeeCtes, feeRecord, type NewLicenseFee } from '../billing/store.js';
import { hotQuery, type Db } from '../db/knex.js';
import { deliverableBuildsFromJson, newestDeliverableBuildsJsonSql, type DeliverableBuild, type DeliverableBuildJson } from '../delivery/deliverable-builds.js';
import { emailRecord, queueEmailCtes, type NewOutboxEmail } from '../email/store.js';
import { mintLicenseSql, soldLicenseRecord } from '../licenses/mint.js';

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

// A checkout sale runs once per notification: its statements are prepared (db/knex.ts hotQuery).

/** Records an event as processing, once per id ($1 id, $2 type, $3 now): a concurrent twin waits here for the first to commit, then records nothing. */
const CLAIM_EVENT_SQL = `INSERT INTO payment_events (id, type, outcome, received_at) VALUES ($1, $2, 'processing', $3) ON CONFLICT (id) DO NOTHING RETURNING id`;

/** Records what processing the event did; `id` and `outcome` are SQL (parameters, or an expression of the statement's rows). */
const settleEventSql = (id: string, outcome: string) => `UPDATE payment_events SET outcome = ${outcome} WHERE id = ${id}`;

/**
 * A checkout notification's first statement: its event claimed (CLAIM_EVENT_SQL's $1 to $3) and
 * what fulfilling the paid session reads, in one round trip: the owner of the connected account
 * ($4; unique, so one tenant at most) with its plan now ($3), and that developer's app behind the
 * sale with the newest deliverable build of each platform (server/delivery/deliverable-builds.ts).
 * The app is picked by its saved Price ID ($5), else by the session's `service_app_id` ($6): the
 * Price match is what docs/contract.md names as how the app is picked, metadata only when no Price
 * matches (`IS TRUE`: an app without a Price compares NULL, which would sort first). Never another
 * developer's app. One row; `id` null when no developer has the account.
 */
const CLAIM_SALE_SQL = `
  WITH claimed AS (${CLAIM_EVENT_SQL}),
  developer AS (
    SELECT id, payment_connection_generation, (${effectivePlanSqlAt('$3::timestamptz')}) AS plan FROM developers WHERE payment_account_id = $4
  ), app AS (
    SELECT apps.id, apps.developer_id, apps.name, apps.delivery_mode, apps.platforms, apps.default_device_limit
    FROM apps JOIN developer ON developer.id = apps.developer_id
    WHERE apps.price_id = ANY ($5::text[]) OR apps.id = $6::text
    ORDER BY (apps.price_id = ANY ($5::text[])) IS TRUE DESC
    LIMIT 1
  )
  SELECT EXISTS (SELECT 1 FROM claimed) AS claimed, developer.id, developer.payment_connection_generation, developer.plan, row_to_json(app) AS app,
    CASE WHEN app.id IS NOT NULL THEN ${newestDeliverableBuildsJsonSql('app.id', 'app.delivery_mode')} END AS builds
  FROM (SELECT 1) one LEFT JOIN developer ON true LEFT JOIN app ON true`;

/**
 * A checkout sale in one statement: the session's license ($1) minted once per session hash
 * (licenses/mint.ts), and only with it its fee ($2, or null when none is due; billing/store.ts,
 * once per license, with its report job) and its delivery email ($3, or null; email/store.ts,
 * once per dedupe key, with its send job); the event ($4) settled as $5 when it minted, else $6.
 * No row when the session already has a license (a retried or concurrent twin notification waits
 * on the first's insert, then finds it).
 */
const SELL_SESSION_SQL = `
  WITH license AS (${mintLicenseSql({ record: '$1::jsonb', once: 'payment_session' })}),
  ${chargeFeeCtes({ record: '$2::jsonb', from: 'license', where: '$2::jsonb IS NOT NULL' })},
  ${queueEmailCtes({ record: '$3::jsonb', from: 'license' })},
  settled AS (${settleEventSql('$4', 'CASE WHEN EXISTS (SELECT 1 FROM license) THEN $5::text ELSE $6::text END')})
  SELECT id, license_key FROM license`;

const SETTLE_EVENT_SQL = settleEventSql('$1', '$2');

/** What CLAIM_SALE_SQL reads of a paid session's seller. */
export interface SaleContext {
  developer: { id: string; payment_connection_generation: number; plan: Plan };
  /** Undefined when none of the developer's apps is the one sold. */
  app: SaleApp | undefined;
  /** The newest deliverable build of each platform of `app`. */
  builds: DeliverableBuild[];
}

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
    claimEvent: async (trx: Knex.Transaction, event: { id: string; type: string }, now: Date): Promise<boolean> =>
      (await hotQuery(trx, CLAIM_EVENT_SQL, [event.id, event.type, now], 'payments.claim_event')).length === 1,

    settleEvent: async (trx: Knex.Transaction, eventId: string, outcome: string): Promise<void> => {
      await hotQuery(trx, SETTLE_EVENT_SQL, [eventId, outcome], 'payments.settle_event');
    },

    /**
     * CLAIM_SALE_SQL: claims a checkout event in `trx` like `claimEvent` (`claimed` false when it was
     * already processed) and reads the connected account's owner, the app sold and its builds
     * (`sale` undefined when no developer has the account).
     */
    claimSale: async (
      trx: Knex.Transaction,
      event: { id: string; type: string },
      sale: { accountId: string; now: Date; priceIds: string[]; appId: string | undefined },
    ): Promise<{ claimed: boolean; sale: SaleContext | undefined }> => {
      const [row] = await hotQuery<{
        claimed: boolean;
        id: string | null;
        payment_connection_generation: number;
        plan: Plan;
        app: SaleApp | null;
        builds: DeliverableBuildJson[] | null;
      }>(trx, CLAIM_SALE_SQL, [event.id, event.type, sale.now, sale.accountId, sale.priceIds, sale.appId ?? null], 'payments.claim_sale');
      const { claimed, id, payment_connection_generation, plan, app, builds } = row!;
      return {
        claimed,
        sale: id === null ? undefined : { developer: { id, payment_connection_generation, plan }, app: app ?? undefined, builds: deliverableBuildsFromJson(builds ?? []) },
      };
    },

    /**
     * SELL_SESSION_SQL: mints the license of a session unless one exists, with its fee and delivery
     * email, and settles the event; answers the license, or undefined when the session already has one (a retried or twin
     * notification). A license-key collision (about one in 10^23) fails the delivery, and the
     * processor's retry mints with another key.
     */
    sellSessionLicense: async (
      trx: Knex.Transaction,
      sale: { license: SessionLicense; fee: NewLicenseFee | null; email: NewOutboxEmail | null },
      /** The event, settled with `sold` when the license is minted, else with `alreadySold`. */
      settle: { eventId: string; sold: string; alreadySold: string },
    ) =>
      (
        await hotQuery<{ id: string; license_key: string }>(
          trx,
          SELL_SESSION_SQL,
          [soldLicenseRecord(sale.license), sale.fee && feeRecord(sale.fee), emailRecord(sale.email), settle.eventId, settle.sold, settle.alreadySold],
          'payments.sell_session_license',
        )
      )[0],

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
