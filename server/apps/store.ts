import type { Knex } from 'knex';
import { hotQuery, type Db } from '../db/knex.js';
import type { Page } from '../http/pagination.js';
import type { CreateAppInput, UpdateAppInput } from './schemas.js';

export interface AppRow extends Required<Omit<CreateAppInput, 'price_id' | 'product_key' | 'download_limit' | 'sold_max_concurrent' | 'sold_lease_ttl_minutes'>> {
  id: string;
  sold_max_concurrent: number | null;
  sold_lease_ttl_minutes: number | null;
  developer_id: string;
  price_id: string | null;
  product_key: string | null;
  download_limit: number | null;
  fingerprint_salt: string;
  created_at: Date;
  updated_at: Date;
}

/**
 * Every column of AppRow, named: prepared statements must not `SELECT *`, as a column a migration
 * adds would fail them in running processes ("cached plan must not change result type"). The
 * `satisfies` keeps the list in step with AppRow.
 */
const APP_COLUMNS = Object.keys({
  id: true,
  developer_id: true,
  name: true,
  platforms: true,
  protection_level: true,
  price_id: true,
  delivery_mode: true,
  product_key: true,
  trials_per_computer: true,
  default_device_limit: true,
  offline_grace_hours: true,
  download_limit: true,
  app_deactivations_per_30_days: true,
  sold_seat_model: true,
  sold_max_concurrent: true,
  sold_lease_ttl_minutes: true,
  sold_meters: true,
  fingerprint_salt: true,
  created_at: true,
  updated_at: true,
} satisfies Record<keyof AppRow, true>).join(', ');

/** The page and, through a window function, the total; prepared: every GET /v1/apps runs it. */
const LIST_SQL = `SELECT ${APP_COLUMNS}, count(*) OVER () AS total FROM apps WHERE developer_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3`;

/** The stored settings an update changes (`release_current` is an instruction, not a setting). */
export type AppPatch = Omit<UpdateAppInput, 'release_current'>;

/** Every query is scoped by developer: another tenant's app is simply not found. */
export function createAppsStore(db: Db) {
  return {
    insert: (row: Omit<AppRow, 'created_at' | 'updated_at'>) =>
      db('apps')
        .insert(row)
        .returning('*')
        .then((r: AppRow[]) => r[0]!),

    /** One round trip: the page and, through a window function, the total. */
    async list(developerId: string, page: Page): Promise<{ rows: AppRow[]; total: number }> {
      const rows = await hotQuery<AppRow & { total: number }>(db, LIST_SQL, [developerId, page.limit, page.offset], 'apps.list');
      if (rows.length > 0) return { rows, total: rows[0]!.total };
      const counted = await db('apps').where({ developer_id: developerId }).count<{ count: string }[]>('* as count');
      return { rows, total: Number(counted[0]!.count) };
    },

    find: (developerId: string, id: string) => db<AppRow>('apps').where({ id, developer_id: developerId }).first(),

    transaction: <T>(work: (trx: Knex.Transaction) => Promise<T>) => db.transaction(work),

    update: (q: Knex, developerId: string, id: string, patch: AppPatch) =>
      q('apps')
        .where({ id, developer_id: developerId })
        .update({ ...patch, updated_at: q.fn.now() })
        .returning('*')
        .then((r: AppRow[]) => r[0]),

    /** Builds, licenses and everything under them go with the app (ON DELETE CASCADE). */
    remove: async (developerId: string, id: string, q: Knex | Knex.Transaction = db) => (await q('apps').where({ id, developer_id: developerId }).delete()) === 1,
  };
}

export type AppsStore = ReturnType<typeof createAppsStore>;
