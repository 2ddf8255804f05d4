import type { Knex } from 'knex';
import { effectivePlan, type Plan } from '../accounts/plan.js';
import type { Db } from '../db/knex.js';
import { EFFECTIVE_STATUS_SQL, type LicenseStatus, type LicenseType } from '../licenses/rules.js';

/** What selling an app needs: its Price, the owner's plan and connected account. */
export interface SalesSetup {
  app_id: string;
  price_id: string | null;
  plan: Plan;
  payment_account_id: string | null;
  payment_connection_generation: number;
}

export interface PaymentLinkRow {
  id: string;
  app_id: string;
  developer_id: string;
  account_id: string;
  url: string;
  connection_generation: number;
  created_at: Date;
  deactivated_at: Date | null;
}

/** A license a buyer may pay for through Route B, with its app's sales setup. */
export interface PurchasableLicense extends SalesSetup {
  license_id: string;
  license_type: LicenseType;
  effective_status: LicenseStatus;
}

const setupColumns = (q: Knex, now: Date) => [
  'apps.id as app_id',
  'apps.price_id',
  effectivePlan(q, now),
  'developers.payment_account_id',
  'developers.payment_connection_generation',
];

/** Queries of Route A's payment links and Route B's purchase sessions; every developer query is scoped by developer. */
export function createLinksStore(db: Db) {
  return {
    transaction: <T>(work: (trx: Knex.Transaction) => Promise<T>) => db.transaction(work),

    /** Locks the app row: two regenerations of one app's link run one after the other. */
    lockSalesSetup: (trx: Knex.Transaction, developerId: string, appId: string, now: Date) =>
      trx('apps')
        .join('developers', 'developers.id', 'apps.developer_id')
        .where({ 'apps.id': appId, 'apps.developer_id': developerId })
        .forUpdate('apps')
        .first<SalesSetup | undefined>(setupColumns(trx, now)),

    connectionGeneration: (developerId: string) =>
      db('developers')
        .where({ id: developerId })
        .first<{ g: number }>('payment_connection_generation as g')
        .then((r) => r!.g),

    appExists: (developerId: string, appId: string) => db('apps').where({ id: appId, developer_id: developerId }).first<{ id: string } | undefined>('id'),

    currentLink: (appId: string, q: Knex | Knex.Transaction = db) => q('payment_links').where({ app_id: appId }).whereNull('deactivated_at').first<PaymentLinkRow | undefined>(),

    deactivateLink: (trx: Knex.Transaction, linkId: string, now: Date) => trx('payment_links').where({ id: linkId }).update({ deactivated_at: now }),

    insertLink: (trx: Knex.Transaction, row: Omit<PaymentLinkRow, 'deactivated_at'>) => trx('payment_links').insert(row),

    /** A link this service created, by the processor's id; undefined for links developers built themselves (Route C). */
    linkById: (trx: Knex.Transaction, linkId: string) => trx('payment_links').where({ id: linkId }).first<PaymentLinkRow | undefined>(),

    purchasableLicense: (developerId: string, licenseId: string, now: Date) =>
      db('licenses')
        .join('apps', 'apps.id', 'licenses.app_id')
        .join('developers', 'developers.id', 'licenses.developer_id')
        .where({ 'licenses.id': licenseId, 'licenses.developer_id': developerId })
        .first<PurchasableLicense | undefined>([
          ...setupColumns(db, now),
          'licenses.id as license_id',
          'licenses.license_type',
          db.raw(`(${EFFECTIVE_STATUS_SQL}) AS effective_status`, [now]),
        ]),

    insertPurchaseSession: (row: { session_hash: string; license_id: string; developer_id: string; expires_at: Date; created_at: Date }) =>
      db('license_purchase_sessions').insert(row),

    /**
     * Marks a purchase session completed and answers its license, once: a twin delivery waits on
     * the row lock, then finds it completed. Undefined when the session is not a purchase session
     * (or not the developer's); `completed: true` when an earlier delivery completed it.
     */
    completePurchaseSession: async (trx: Knex.Transaction, developerId: string, sessionHash: string, now: Date) => {
      const row = await trx('license_purchase_sessions')
        .where({ session_hash: sessionHash, developer_id: developerId })
        .forUpdate()
        .first<{ license_id: string; completed_at: Date | null } | undefined>('license_id', 'completed_at');
      if (!row) return undefined;
      if (row.completed_at) return { licenseId: row.license_id, completed: true };
      await trx('license_purchase_sessions').where({ session_hash: sessionHash }).update({ completed_at: now });
      return { licenseId: row.license_id, completed: false };
    },

    /** A paid license now: active, of the type the buyer paid for, no expiry, the session recorded. */
    convertPurchasedLicense: (
      trx: Knex.Transaction,
      licenseId: string,
      change: {
        license_type: LicenseType;
        email: string | null;
        payment_session_id: string;
        payment_session_hash: string;
        expires_at: Date | null;
        processor_subscription_id: string | null;
        now: Date;
      },
    ) =>
      trx('licenses')
        .where({ id: licenseId })
        .update({
          status: 'ACTIVE',
          license_type: change.license_type,
          expires_at: change.expires_at,
          email: trx.raw('COALESCE(email, ?)', [change.email]),
          payment_session_id: change.payment_session_id,
          payment_session_hash: change.payment_session_hash,
          processor_subscription_id: change.processor_subscription_id,
          updated_at: change.now,
        })
        .returning(['id', 'license_key'])
        .then((r: { id: string; license_key: string }[]) => r[0]),
  };
}

export type LinksStore = ReturnType<typeof createLinksStore>;
