import type { Knex } from 'knex';
import type { Db } from '../db/knex.js';
import { countHitCte } from '../http/rate-limit.js';
import { EFFECTIVE_STATUS_SQL } from '../licenses/rules.js';
import type { LicenseRead } from '../licenses/store.js';
import type { DeviceReport } from './schemas.js';

/** A license with the settings of its app that activation applies. */
export interface LicenseForRuntime extends LicenseRead {
  offline_grace_hours: number;
  trials_per_computer: number;
}

/** Its one binding is the current time (EFFECTIVE_STATUS_SQL's). */
const RUNTIME_LICENSE = `
  SELECT licenses.*, (${EFFECTIVE_STATUS_SQL}) AS effective_status, apps.offline_grace_hours, apps.trials_per_computer
  FROM licenses JOIN apps ON apps.id = licenses.app_id`;

/**
 * Records a launch of a known device. Fields the runtime did not report stay as they were (an
 * older SDK that omits one does not erase it). Bindings: `reportBindings`, then the license id if
 * `licenseIdSql` is a placeholder, then the fingerprint hash.
 */
const touchDeviceSql = (licenseIdSql: string) => `
  UPDATE devices SET last_seen_at = ?, platform = coalesce(?, platform),
    engine_version = coalesce(?, engine_version), app_version = coalesce(?, app_version)
  WHERE license_id = ${licenseIdSql} AND fingerprint_hash = ? RETURNING 1`;

const reportBindings = (report: DeviceReport, now: Date) => [now, report.platform ?? null, report.engine_version ?? null, report.app_version ?? null];

async function rowsOf<T>(q: Knex, sql: string, bindings: unknown[]): Promise<T[]> {
  return (await q.raw<{ rows: T[] }>(sql, bindings as Knex.RawBinding[])).rows;
}

/** Runtime reads and writes: not scoped by developer, the license key (or a signed token) is the credential. */
export function createActivationsStore(db: Db) {
  return {
    /**
     * The license of a key, counting this activation in the license's velocity window by the same
     * round trip (`velocity_hits`; null when there is no such license).
     */
    findByKeyCountingActivation: async (licenseKey: string, now: Date, velocity: { bucketPrefix: string; windowStart: Date }) =>
      (
        await rowsOf<LicenseForRuntime & { velocity_hits: number | null }>(
          db,
          `WITH lic AS (${RUNTIME_LICENSE} WHERE licenses.license_key = ?),
           hit AS (${countHitCte({ bucket: '?::text || lic.id', windowStart: '?::timestamptz', from: 'lic' })})
           SELECT lic.*, (SELECT hits FROM hit) AS velocity_hits FROM lic`,
          [now, licenseKey, velocity.bucketPrefix, velocity.windowStart],
        )
      )[0],

    findById: async (id: string, now: Date) => (await rowsOf<LicenseForRuntime>(db, `${RUNTIME_LICENSE} WHERE licenses.id = ?`, [now, id]))[0],

    /** The license of a runtime credential and, in the same round trip, a launch of the device if it is activated. */
    findTouchingDevice: async (by: { id: string } | { key: string }, fingerprintHash: string, report: DeviceReport, now: Date) =>
      (
        await rowsOf<LicenseForRuntime & { device_known: boolean }>(
          db,
          `WITH lic AS (${RUNTIME_LICENSE} WHERE ${'id' in by ? 'licenses.id' : 'licenses.license_key'} = ?),
           touched AS (${touchDeviceSql('(SELECT id FROM lic)')})
           SELECT lic.*, EXISTS (SELECT 1 FROM touched) AS device_known FROM lic`,
          [now, 'id' in by ? by.id : by.key, ...reportBindings(report, now), fingerprintHash],
        )
      )[0],

    transaction: <T>(work: (trx: Knex.Transaction) => Promise<T>) => db.transaction(work),

    /** Records a launch of a known device; false when the device is not activated on the license. */
    touchDevice: async (licenseId: string, fingerprintHash: string, report: DeviceReport, now: Date, q: Knex = db) =>
      (await rowsOf(q, touchDeviceSql('?'), [...reportBindings(report, now), licenseId, fingerprintHash])).length === 1,

    /**
     * One statement: a known device is touched; a new one takes a slot if the license has one and is
     * not revoked. The slot UPDATE's condition is re-checked on the latest row after any lock wait,
     * so concurrent claims in any process never exceed the limit. Two claims of the same new device
     * race to the primary key: the loser's statement fails whole (unique violation), slot included.
     */
    claimDevice: async (licenseId: string, fingerprintHash: string, report: DeviceReport, now: Date, q: Knex = db) =>
      (
        await rowsOf<{ known: boolean; added: boolean }>(
          q,
          `WITH touched AS (${touchDeviceSql('?')}),
           slot AS (
             UPDATE licenses SET device_count = device_count + 1
             WHERE id = ? AND status <> 'REVOKED' AND device_count < device_limit AND NOT EXISTS (SELECT 1 FROM touched)
             RETURNING id),
           added AS (
             INSERT INTO devices (license_id, fingerprint_hash, platform, engine_version, app_version, first_seen_at, last_seen_at)
             SELECT id, ?, ?, ?, ?, ?, ? FROM slot RETURNING 1)
           SELECT EXISTS (SELECT 1 FROM touched) AS known, EXISTS (SELECT 1 FROM added) AS added`,
          [
            ...reportBindings(report, now),
            licenseId,
            fingerprintHash,
            licenseId,
            fingerprintHash,
            report.platform ?? null,
            report.engine_version ?? null,
            report.app_version ?? null,
            now,
            now,
          ],
        )
      )[0]!,

    /** Starts the no-commitment trial clock once (the first activation wins); the license as it now reads. */
    startTrialClock: (trx: Knex.Transaction, id: string, expiresAt: Date, now: Date) =>
      rowsOf<LicenseRead>(
        trx,
        `UPDATE licenses SET expires_at = coalesce(expires_at, ?), updated_at = ? WHERE id = ?
         RETURNING licenses.*, (${EFFECTIVE_STATUS_SQL}) AS effective_status`,
        [expiresAt, now, id, now],
      ).then((r) => r[0]!),

    /**
     * Serialises trial starts of one computer for one app until the transaction ends: two different
     * trial licenses activated at once on the same machine cannot both pass the count.
     */
    lockTrialSlot: (trx: Knex.Transaction, appId: string, fingerprintHash: string) =>
      trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [`trial:${appId}:${fingerprintHash}`]),

    /** Trials this computer started for the app under licenses other than this one. */
    countOtherTrials: (trx: Knex.Transaction, appId: string, fingerprintHash: string, licenseId: string) =>
      trx('trial_starts')
        .where({ app_id: appId, fingerprint_hash: fingerprintHash })
        .whereNot({ license_id: licenseId })
        .count<{ count: string }[]>('* as count')
        .then((r) => Number(r[0]!.count)),

    recordTrialStart: (trx: Knex.Transaction, appId: string, fingerprintHash: string, licenseId: string, now: Date) =>
      trx('trial_starts')
        .insert({ app_id: appId, fingerprint_hash: fingerprintHash, license_id: licenseId, started_at: now })
        .onConflict(['app_id', 'fingerprint_hash', 'license_id'])
        .ignore(),
  };
}

export type ActivationsStore = ReturnType<typeof createActivationsStore>;
