import type { Knex } from 'knex';
import type { Db } from '../db/knex.js';
import { DIRECT_PAYMENT_SOURCE } from '../payments/fulfilment.js';
import { COMMERCE_PLATFORM_SOURCE } from './rules.js';

/** A customer's license with what the delivery page and the entitlement endpoint show of it. */
export interface EntitledLicense {
  id: string;
  developer_id: string;
  app_id: string;
  app_name: string;
  /** The app's developer's company name. */
  seller_name: string;
  delivery_mode: string;
  /** The app's platforms: one download each. */
  platforms: string[];
  license_key: string;
  email: string | null;
  status: string;
  /** When the license was sold: its download links' 7-day windows count from here (a refresh shows the same link). */
  created_at: Date;
}

const LICENSE_COLUMNS = [
  'licenses.id',
  'licenses.developer_id',
  'licenses.app_id',
  'apps.name as app_name',
  'developers.company_name as seller_name',
  'apps.delivery_mode',
  'apps.platforms',
  'licenses.license_key',
  'licenses.email',
  'licenses.status',
  'licenses.created_at',
];

/** Reads for the customer-facing delivery surfaces; every lookup is scoped to the app named. */
export function createEntitlementStore(db: Db) {
  const licenses = (q: Knex | Knex.Transaction) => q('licenses').join('apps', 'apps.id', 'licenses.app_id').join('developers', 'developers.id', 'apps.developer_id');

  return {
    transaction: <T>(work: (trx: Knex.Transaction) => Promise<T>) => db.transaction(work),

    appExists: (q: Knex | Knex.Transaction, appId: string) => q('apps').where({ id: appId }).first<{ id: string } | undefined>('id'),

    /** An app's name and its seller (its developer's company name), as the hosted pages name them. */
    appProduct: (appId: string) =>
      db('apps')
        .join('developers', 'developers.id', 'apps.developer_id')
        .where({ 'apps.id': appId })
        .first<{ appName: string; seller: string } | undefined>('apps.name as appName', 'developers.company_name as seller'),

    /**
     * The license fulfilment minted for a session, only for the app that sold it: the session's
     * connected account was checked then (fulfilment mints only for the owner of that account).
     */
    licenseOfSession: (q: Knex | Knex.Transaction, appId: string, sessionHash: string) =>
      licenses(q).where({ 'licenses.payment_session_hash': sessionHash, 'licenses.app_id': appId }).first<EntitledLicense | undefined>(LICENSE_COLUMNS),

    /**
     * The newest live license of an app bought with an address (case-insensitively), and whether it
     * was sold within `recentMs` (by the database's clock, which stamped the sale). Licenses that
     * have a secret of their own to be shown by are never found by an address: a processor
     * checkout's (its session id) and a commerce platform store's (its delivery page's token).
     */
    latestLicenseForEmail: (q: Knex | Knex.Transaction, appId: string, email: string, recentMs: number) =>
      licenses(q)
        .where({ 'licenses.app_id': appId })
        .whereNot({ 'licenses.status': 'REVOKED' })
        .whereNotIn('licenses.source', [DIRECT_PAYMENT_SOURCE, COMMERCE_PLATFORM_SOURCE])
        .whereRaw('lower(licenses.email) = lower(?)', [email])
        .orderBy('licenses.created_at', 'desc')
        .first<(EntitledLicense & { recent: boolean }) | undefined>([
          ...LICENSE_COLUMNS,
          q.raw('licenses.created_at > now() - make_interval(secs => ?) as recent', [recentMs / 1000]),
        ]),
  };
}

export type EntitlementStore = ReturnType<typeof createEntitlementStore>;
