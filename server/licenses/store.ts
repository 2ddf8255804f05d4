import type { Knex } from 'knex';
import { effectivePlan, type Plan } from '../accounts/plan.js';
import type { Db } from '../db/knex.js';
import type { Page } from '../http/pagination.js';
import { listDeactivations, removeAllDevices } from './deactivation-history.js';
import type { Meters } from './meters/schemas.js';
import { EFFECTIVE_STATUS_SQL, type LicenseStatus, type LicenseType, type SeatModel } from './rules.js';
import type { ListLicensesFilter, LicenseStatusFilter } from './schemas.js';

export interface LicenseRow {
  id: string;
  developer_id: string;
  app_id: string;
  license_key: string;
  status: LicenseStatus;
  license_type: LicenseType;
  /** Floating: the concurrent seats (`max_concurrent`). */
  device_limit: number;
  seat_model: SeatModel;
  /** Floating only. */
  lease_ttl_minutes: number | null;
  email: string | null;
  expires_at: Date | null;
  features: Record<string, unknown>;
  /** Metered features (meters/): feature → uses_per_period and period. */
  meters: Meters;
  source: string;
  payment_session_id: string | null;
  download_limit: number | null;
  revoked_at: Date | null;
  /** Starts of modified copies of its protected builds, reported by the runtime. */
  tamper_reports: number;
  last_tamper_report_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** A license as read at a moment: the stored row plus the status it has at that moment. */
export interface LicenseRead extends LicenseRow {
  effective_status: LicenseStatus;
}

export interface DeviceRow {
  license_id: string;
  fingerprint_hash: string;
  platform: string | null;
  engine_version: string | null;
  app_version: string | null;
  first_seen_at: Date;
  last_seen_at: Date;
}

export type NewLicense = Omit<LicenseRow, 'status' | 'revoked_at' | 'tamper_reports' | 'last_tamper_report_at' | 'created_at' | 'updated_at'>;

/** `licenses.*` and `effective_status` at `now`: for SELECT lists and RETURNING clauses alike. */
export function licenseColumns(q: Knex, now: Date): Knex.Raw[] {
  return [q.raw('licenses.*'), q.raw(`(${EFFECTIVE_STATUS_SQL}) AS effective_status`, [now])];
}

function whereStatus(query: Knex.QueryBuilder, status: LicenseStatusFilter, now: Date): void {
  query.whereRaw(`(${EFFECTIVE_STATUS_SQL}) = ?`, [now, status.toUpperCase()]);
}

/** Developer operations on licenses; every query is scoped by developer, so another tenant's license is not found. */
export function createLicensesStore(db: Db) {
  return {
    /** The app a license is created for, with what creation needs to know about it and its owner. */
    findAppForCreation: (developerId: string, appId: string, now: Date) =>
      db('apps')
        .join('developers', 'developers.id', 'apps.developer_id')
        .where({ 'apps.id': appId, 'apps.developer_id': developerId })
        .first<{ default_device_limit: number; plan: Plan } | undefined>('apps.default_device_limit', effectivePlan(db, now)),

    insert: (row: NewLicense, now: Date) =>
      db('licenses')
        .insert({ ...row, features: JSON.stringify(row.features), meters: JSON.stringify(row.meters) })
        .returning(licenseColumns(db, now))
        .then((r: LicenseRead[]) => r[0]!),

    /** One round trip: the page and, through a window function, the total. */
    async list(developerId: string, filter: ListLicensesFilter, now: Date): Promise<{ rows: LicenseRead[]; total: number }> {
      const scoped = () => {
        const q = db('licenses').where('licenses.developer_id', developerId);
        if (filter.app_id) q.where('licenses.app_id', filter.app_id);
        if (filter.status) whereStatus(q, filter.status, now);
        if (filter.q) {
          const term = filter.q;
          const like = `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
          q.where((w) => w.where('licenses.license_key', term.toUpperCase()).orWhere('licenses.id', term).orWhereRaw('licenses.email ILIKE ?', [like]));
        }
        return q;
      };
      const rows: (LicenseRead & { total: number })[] = await scoped()
        .select(...licenseColumns(db, now), db.raw('count(*) OVER () AS total'))
        .orderBy([{ column: 'licenses.created_at' }, { column: 'licenses.id' }])
        .limit(filter.limit)
        .offset(filter.offset);
      if (rows.length > 0) return { rows, total: rows[0]!.total };
      const counted = await scoped().count<{ count: string }[]>('* as count');
      return { rows, total: Number(counted[0]!.count) };
    },

    find: (developerId: string, id: string, now: Date) => db('licenses').where({ id, developer_id: developerId }).first<LicenseRead | undefined>(licenseColumns(db, now)),

    /** A floating license's live leases at `now`: the copies running on it. */
    seatsInUse: (licenseId: string, now: Date) =>
      db('license_leases')
        .where({ license_id: licenseId })
        .where('expires_at', '>', now)
        .count<{ count: string }[]>('* as count')
        .then((r) => Number(r[0]!.count)),

    listDevices: (licenseId: string) =>
      db<DeviceRow>('devices')
        .where({ license_id: licenseId })
        .select('license_id', 'fingerprint_hash', 'platform', 'engine_version', 'app_version', 'first_seen_at', 'last_seen_at')
        .orderBy([{ column: 'first_seen_at' }, { column: 'fingerprint_hash' }]),

    /** The license with its download limit set (null: the default allowance); undefined when it is not the developer's. */
    setDownloadLimit: (developerId: string, id: string, downloadLimit: number | null, now: Date) =>
      db('licenses')
        .where({ id, developer_id: developerId })
        .update({ download_limit: downloadLimit, updated_at: now })
        .returning(licenseColumns(db, now))
        .then((r: LicenseRead[]) => r[0]),

    /** A floating license with its seats and lease TTL set (an omitted TTL unchanged); undefined when it is not the developer's or is node-locked. */
    setSeats: (developerId: string, id: string, seats: { max_concurrent: number; lease_ttl_minutes?: number | undefined }, now: Date) =>
      db('licenses')
        .where({ id, developer_id: developerId, seat_model: 'floating' })
        .update({
          device_limit: seats.max_concurrent,
          lease_ttl_minutes: seats.lease_ttl_minutes ?? db.raw('lease_ttl_minutes'),
          updated_at: now,
        })
        .returning(licenseColumns(db, now))
        .then((r: LicenseRead[]) => r[0]),

    /** Idempotent: revoking a revoked license keeps its first revocation time. */
    revoke: (developerId: string, id: string, now: Date) =>
      db('licenses')
        .where({ id, developer_id: developerId })
        .update({ status: 'REVOKED', revoked_at: db.raw('coalesce(revoked_at, ?)', [now]), updated_at: now })
        .returning(licenseColumns(db, now))
        .then((r: LicenseRead[]) => r[0]),

    /**
     * Deactivates every device of the license, each recorded in its history as the developer's;
     * undefined when the license is not the developer's. Takes the license's row lock, like
     * activation and deactivation from the app, so none of them interleave.
     */
    removeDevices: (developerId: string, id: string, now: Date) =>
      db.transaction(async (trx) => {
        const license = await trx('licenses').where({ id, developer_id: developerId }).forUpdate().first('id');
        if (!license) return undefined;
        return removeAllDevices(trx, id, 'developer', now);
      }),

    /** The license's deactivation history, newest first (deactivation-history.ts). */
    listDeactivations: (licenseId: string, page: Page) => listDeactivations(db, licenseId, page),
  };
}

export type LicensesStore = ReturnType<typeof createLicensesStore>;
