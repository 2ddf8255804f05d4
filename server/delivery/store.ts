import type { Knex } from 'knex';
import { effectivePlan, type Plan } from '../accounts/plan.js';
import type { LicenseRow } from '../licenses/store.js';

/** The developer's app a channel sells, with what selling needs of it and its owner's plan now. */
export interface ChannelApp {
  id: string;
  developer_id: string;
  name: string;
  delivery_mode: string;
  platforms: string[];
  default_device_limit: number;
  plan: Plan;
}

/** The developer's app; never another developer's. */
export const channelApp = (q: Knex, developerId: string, appId: string, now: Date) =>
  q('apps')
    .join('developers', 'developers.id', 'apps.developer_id')
    .where({ 'apps.id': appId, 'apps.developer_id': developerId })
    .first<ChannelApp | undefined>('apps.id', 'apps.developer_id', 'apps.name', 'apps.delivery_mode', 'apps.platforms', 'apps.default_device_limit', effectivePlan(q, now));

/** A license sold through a channel (marketplace provisioning, code redemption). */
export type NewSoldLicense = Pick<
  LicenseRow,
  'id' | 'developer_id' | 'app_id' | 'license_key' | 'license_type' | 'device_limit' | 'email' | 'expires_at' | 'features' | 'source'
> & {
  /** Set by marketplace provisioning: one license per order and app. */
  marketplace_order_id: string | null;
};

/**
 * Inserts the license unless its app already has one for the same marketplace order: answers the
 * new row, or undefined for an order already provisioned (a retried or concurrent twin call waits
 * here for the first to commit). Without an order id nothing can conflict.
 */
export const insertSoldLicense = (trx: Knex.Transaction, row: NewSoldLicense) =>
  trx
    .raw(
      `INSERT INTO licenses (id, developer_id, app_id, license_key, license_type, device_limit, email, expires_at, features, source, marketplace_order_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (app_id, marketplace_order_id) WHERE marketplace_order_id IS NOT NULL DO NOTHING
       RETURNING id, license_key`,
      [
        row.id, row.developer_id, row.app_id, row.license_key, row.license_type, row.device_limit, row.email, row.expires_at,
        JSON.stringify(row.features), row.source, row.marketplace_order_id,
      ],
    )
    .then((r: { rows: { id: string; license_key: string }[] }) => r.rows[0]);
