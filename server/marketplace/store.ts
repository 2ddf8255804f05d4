import type { Knex } from 'knex';
import type { Db } from '../db/knex.js';
import { channelApp } from '../delivery/store.js';

export function createMarketplaceStore(db: Db) {
  return {
    transaction: <T>(work: (trx: Knex.Transaction) => Promise<T>) => db.transaction(work),

    app: channelApp,

    /** The license an earlier call provisioned for the order. */
    licenseOfOrder: (trx: Knex.Transaction, appId: string, orderId: string) =>
      trx('licenses').where({ app_id: appId, marketplace_order_id: orderId }).first<{ id: string; license_key: string; status: string } | undefined>('id', 'license_key', 'status'),
  };
}

export type MarketplaceStore = ReturnType<typeof createMarketplaceStore>;
