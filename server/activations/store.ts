import type { Knex } from 'knex';
import { MACHINE_ID, type ComponentHashes } from '@latchkey/runtime-sdk/protocol';
import { hotQuery, isUniqueViolation, type Db } from '../db/knex.js';
import { countHitCte, type LicenseLimitWindow } from '../http/license-limits.js';
import { effectiveStatusSqlAt } from '../licenses/rules.js';
import type { LicenseRead } from '../licenses/store.js';
import type { DeviceReport } from './schemas.js';

/** What the runtime reads of a license: what its rules and the token need. */
export type RuntimeLicense = Pick<
  LicenseRead,
  'id' | 'app_id' | 'license_type' | 'features' | 'device_limit' | 'expires_at' | 'effective_status' | 'seat_model' | 'lease_ttl_minutes'
>;

/** A license with the settings of its app that activation applies. */
export interface LicenseForRuntime extends RuntimeLicense {
  offline_grace_hours: number;
  trials_per_computer: number;
}

/** The license of an activation, what the same statement found and did, and its velocity count. */
export interface ActivationLookup extends LicenseForRuntime {
  build_known: boolean;
  velocity_hits: number;
  /** The device was activated already: its launch is recorded. */
  device_known: boolean;
  /** The device took a free slot. */
  device_added: boolean;
}

// Every statement here binds the current time as $1; those about a device bind it as $2-$5 (`deviceBindings`).
// The hot ones are prepared statements (parsed and planned once per connection): they name their
// columns, as a `*` that a migration widens would fail them ("cached plan must not change result type").
const STATUS_AT_$1 = effectiveStatusSqlAt('$1');

const LICENSE_COLUMNS = `licenses.id, licenses.app_id, licenses.license_type, licenses.features, licenses.device_limit,
  licenses.expires_at, (${STATUS_AT_$1}) AS effective_status, licenses.seat_model, licenses.lease_ttl_minutes`;

const runtimeLicenseSql = (extraColumns = '') => `
  SELECT ${LICENSE_COLUMNS}, apps.offline_grace_hours, apps.trials_per_computer${extraColumns}
  FROM licenses JOIN apps ON apps.id = licenses.app_id`;

const deviceBindings = (fingerprintHash: string, report: DeviceReport, now: Date) => [
  now,
  fingerprintHash,
  report.platform ?? null,
  report.engine_version ?? null,
  report.app_version ?? null,
];

/**
 * Records a launch of a known device of the license `licenseId` (an SQL expression). Fields the
 * runtime did not report stay as they were (an older SDK that omits one does not erase it).
 */
const touchDeviceSql = (licenseId: string) => `
  UPDATE devices SET last_seen_at = $1, platform = coalesce($3, platform),
    engine_version = coalesce($4, engine_version), app_version = coalesce($5, app_version)
  WHERE license_id = ${licenseId} AND fingerprint_hash = $2 RETURNING 1`;

/**
 * A new device takes a slot of the license `licenseId` if it has one and is neither revoked nor expired (at $1), unless
 * CTE `touched` found the device known. The UPDATE's condition is re-checked on the latest row
 * after any lock wait, so concurrent claims in any process never exceed the limit. Two claims of
 * the same new device race to the primary key: the loser's statement fails whole (unique
 * violation), slot included. Defines CTEs `slot` and `added`.
 */
const claimSlotSql = (licenseId: string) => `
  slot AS (
    UPDATE licenses SET device_count = device_count + 1
    WHERE id = ${licenseId} AND (${STATUS_AT_$1}) NOT IN ('REVOKED', 'EXPIRED') AND device_count < device_limit AND NOT EXISTS (SELECT 1 FROM touched)
    RETURNING id
  ), added AS (
    INSERT INTO devices (license_id, fingerprint_hash, platform, engine_version, app_version, first_seen_at, last_seen_at)
    SELECT id, $2, $3, $4, $5, $1, $1 FROM slot RETURNING 1
  )`;

/**
 * Activation in one round trip. $6 license key, $7/$8 velocity bucket prefix and window, $9 the
 * velocity limit, $10 build id or null. The key's license with `build_known` (null, or a build of
 * the license's app in any status: an installed copy stays valid); the request counted
 * in the license's velocity window; then, only for a usable node-locked non-trial license of a known
 * build within the velocity limit, the device is touched if known or takes a slot. A floating
 * license's device checks out a lease instead (CHECKOUT_SQL). What refused the
 * request (rules in docs/contract.md's order) the service reads from the row. Trials, which also spend a
 * computer's trial allowance, claim in a transaction of their own.
 */
const ACTIVATE_SQL = `
  WITH lic AS (
    ${runtimeLicenseSql(`, ($10::text IS NULL OR EXISTS (SELECT 1 FROM builds WHERE builds.id = $10 AND builds.app_id = licenses.app_id)) AS build_known`)}
    WHERE licenses.license_key = $6
  ), hit AS (
    ${countHitCte({ bucket: '$7::text || lic.id', windowStart: '$8::timestamptz', from: 'lic' })}
  ), claimable AS (
    SELECT lic.id FROM lic, hit
    WHERE lic.effective_status NOT IN ('REVOKED', 'EXPIRED') AND lic.build_known AND hit.hits <= $9 AND lic.license_type <> 'trial'
      AND lic.seat_model = 'node_locked'
  ), touched AS (${touchDeviceSql('(SELECT id FROM claimable)')}
  ), ${claimSlotSql('(SELECT id FROM claimable)')}
  SELECT lic.*, (SELECT hits FROM hit) AS velocity_hits,
    EXISTS (SELECT 1 FROM touched) AS device_known, EXISTS (SELECT 1 FROM added) AS device_added
  FROM lic`;

/** Claims a slot of license $6 for the device (or touches it when known). */
const CLAIM_SQL = `
  WITH touched AS (${touchDeviceSql('$6')}), ${claimSlotSql('$6')}
  SELECT EXISTS (SELECT 1 FROM touched) AS known, EXISTS (SELECT 1 FROM added) AS added`;

/** The end of a lease of license `lic` taken or renewed at $1, in whole seconds like the token's `exp` that carries it. */
const LEASE_END = `date_trunc('second', $1::timestamptz + lic.lease_ttl_minutes * interval '1 minute')`;

/**
 * Refresh in one round trip. $6 license id or key, $7/$8 refresh bucket prefix and window, $9 the
 * refresh limit per seat. The license, the request counted in its refresh window and, within the
 * limit, a launch of the device if it is activated. For a usable floating license, the device's
 * live lease is renewed too (`lease_expires_at`, null when it holds none: then CHECKOUT_SQL). A
 * renewal never changes how many leases are live, so it needs no lock; one racing a checkout that
 * deletes the same lease as expired waits for that delete and then renews nothing.
 */
const refreshSql = (by: 'id' | 'license_key') => `
  WITH lic AS (${runtimeLicenseSql()} WHERE licenses.${by} = $6
  ), hit AS (
    ${countHitCte({ bucket: '$7::text || lic.id', windowStart: '$8::timestamptz', from: 'lic' })}
  ), touched AS (${touchDeviceSql('(SELECT lic.id FROM lic, hit WHERE hit.hits <= $9::bigint * lic.device_limit)')}
  ), renewed AS (
    UPDATE license_leases SET expires_at = ${LEASE_END} FROM lic
    WHERE license_leases.license_id = lic.id AND license_leases.fingerprint_hash = $2 AND license_leases.expires_at > $1
      AND lic.seat_model = 'floating' AND lic.effective_status NOT IN ('REVOKED', 'EXPIRED') AND EXISTS (SELECT 1 FROM touched)
    RETURNING license_leases.expires_at
  )
  SELECT lic.*, (SELECT hits FROM hit) AS refresh_hits, EXISTS (SELECT 1 FROM touched) AS device_known,
    (SELECT expires_at FROM renewed) AS lease_expires_at FROM lic`;
const REFRESH_BY_ID = refreshSql('id');
const REFRESH_BY_KEY = refreshSql('license_key');

/**
 * A floating license's seat for device $2, taken at $1 under the license's row lock (the caller's
 * transaction, after CHECKOUT_LOCK_SQL and CLEAR_EXPIRED_LEASES_SQL, so this statement's snapshot
 * sees every lease committed before it): the device's own lease renewed, or a new one while the
 * other live leases are fewer than the seats. No row: every seat is taken.
 */
const CHECKOUT_SQL = `
  WITH lic AS (SELECT id, device_limit, lease_ttl_minutes FROM licenses WHERE id = $3)
  INSERT INTO license_leases (license_id, fingerprint_hash, checked_out_at, expires_at)
  SELECT lic.id, $2, $1, ${LEASE_END} FROM lic
  WHERE (SELECT count(*) FROM license_leases l WHERE l.license_id = lic.id AND l.fingerprint_hash <> $2) < lic.device_limit
  ON CONFLICT (license_id, fingerprint_hash) DO UPDATE SET expires_at = excluded.expires_at
  RETURNING expires_at`;

/** Serialises the checkouts of license $1 until the transaction ends (renewals and check-ins need no lock). */
const CHECKOUT_LOCK_SQL = `SELECT 1 FROM licenses WHERE id = $1 FOR UPDATE`;

/**
 * A device this request renames (its fingerprint changed: $2 on record, $3 now) keeps its lease of
 * license $1: the lease goes with it, so its seat is its own and not another device's. If the new
 * fingerprint holds one too, the old one goes.
 */
const DROP_RENAMED_LEASE_SQL = `DELETE FROM license_leases WHERE license_id = $1 AND fingerprint_hash = $2
  AND EXISTS (SELECT 1 FROM license_leases l WHERE l.license_id = $1 AND l.fingerprint_hash = $3)`;
const MOVE_RENAMED_LEASE_SQL = `UPDATE license_leases SET fingerprint_hash = $3 WHERE license_id = $1 AND fingerprint_hash = $2`;

/**
 * Renames device $2 of license $1 to fingerprint $3 with components $4, keeping $2 among its previous
 * fingerprints (the last 8).
 */
const RENAME_DEVICE_SQL = `UPDATE devices SET fingerprint_hash = $3, component_hashes = $4,
    previous_fingerprints = (array_append(previous_fingerprints, $2::text))[greatest(1, cardinality(previous_fingerprints) - 6):]
  WHERE license_id = $1 AND fingerprint_hash = $2 RETURNING 1`;

/** Whether device $2 of license $1 is on record, held until the transaction ends (a rename or removal waits). */
const DEVICE_ON_RECORD_SQL = `SELECT 1 FROM devices WHERE license_id = $1 AND fingerprint_hash = $2 FOR KEY SHARE`;

/** A floating checkout that takes no seat, thrown to roll its transaction back (a renamed record, a moved lease) and answered. */
class CheckoutRefused extends Error {
  constructor(readonly outcome: { earliestExpiry: Date } | { notOnRecord: true }) {
    super('checkout refused');
  }
}

/** How a floating checkout treats the device's record. */
export interface SeatCheckout {
  /** A changed device's record (fingerprint `from`) renamed to the checked-out fingerprint first, its live lease with it. */
  rename?: { from: string; components: ComponentHashes };
  /**
   * The device (renamed, if so) must be on record: a refresh's. A reset or deactivation that removed
   * it meanwhile, or a rename that found it gone or its new name taken, takes no seat.
   */
  onRecord: boolean;
}

/** Expired leases of license $1 at $2 are gone, so they neither count nor get renewed (a crashed app's seat frees itself). */
const CLEAR_EXPIRED_LEASES_SQL = `DELETE FROM license_leases WHERE license_id = $1 AND expires_at <= $2`;

/**
 * Renames a device record (RENAME_DEVICE_SQL); false when `from` is gone or `to` has a row of its own.
 * In a transaction, a savepoint keeps a clash on `to` from aborting the rest of it.
 */
async function renameIn(q: Db, licenseId: string, from: string, to: string, components: ComponentHashes): Promise<boolean> {
  const values = [licenseId, from, to, JSON.stringify(components)];
  try {
    const renamed = q.isTransaction ? await q.transaction((savepoint) => hotQuery(savepoint, RENAME_DEVICE_SQL, values)) : await hotQuery(q, RENAME_DEVICE_SQL, values);
    return renamed.length === 1;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

/** Runtime reads and writes: not scoped by developer, the license key (or a signed token) is the credential. */
export function createActivationsStore(db: Db) {
  return {
    /** Looks the key up, counts the request in `velocity` and, where the rules allow, activates the device (ACTIVATE_SQL). */
    activate: async (input: { licenseKey: string; buildId: string | null; device: string; report: DeviceReport }, velocity: LicenseLimitWindow, now: Date) =>
      (
        await hotQuery<ActivationLookup>(
          db,
          ACTIVATE_SQL,
          [...deviceBindings(input.device, input.report, now), input.licenseKey, velocity.bucketPrefix, velocity.start, velocity.limit, input.buildId],
          'activations.activate',
        )
      )[0],

    /** The license of a runtime credential, the request counted in `refreshes`, and a launch of the device if it is activated. */
    refresh: async (by: { id: string } | { key: string }, device: string, report: DeviceReport, refreshes: LicenseLimitWindow, now: Date) =>
      (
        await hotQuery<LicenseForRuntime & { refresh_hits: number; device_known: boolean; lease_expires_at: Date | null }>(
          db,
          'id' in by ? REFRESH_BY_ID : REFRESH_BY_KEY,
          [...deviceBindings(device, report, now), 'id' in by ? by.id : by.key, refreshes.bucketPrefix, refreshes.start, refreshes.limit],
          'id' in by ? 'activations.refresh_by_id' : 'activations.refresh_by_key',
        )
      )[0],

    /**
     * Takes (or renews) the device's seat of floating license `licenseId` (CHECKOUT_SQL): its end; when
     * every seat is taken `{ earliestExpiry }`, the first live lease's end; `{ notOnRecord }` per
     * `SeatCheckout.onRecord`. All under the license's row lock, which resets and deactivations take
     * first too: checkouts queue on it, so a burst never grants more leases than seats, and a record
     * cannot go between its check and the lease. A renamed record and its moved lease are part of
     * the checkout: refused, nothing of it stays.
     */
    checkoutLease: async (licenseId: string, device: string, now: Date, how: SeatCheckout): Promise<{ expiresAt: Date } | { earliestExpiry: Date } | { notOnRecord: true }> => {
      try {
        return await db.transaction(async (trx) => {
          await hotQuery(trx, CHECKOUT_LOCK_SQL, [licenseId]);
          await hotQuery(trx, CLEAR_EXPIRED_LEASES_SQL, [licenseId, now]);
          const { rename } = how;
          const renamed = rename !== undefined && (await renameIn(trx, licenseId, rename.from, device, rename.components));
          if (renamed) {
            await hotQuery(trx, DROP_RENAMED_LEASE_SQL, [licenseId, rename.from, device]);
            await hotQuery(trx, MOVE_RENAMED_LEASE_SQL, [licenseId, rename.from, device]);
          }
          if (how.onRecord && (rename ? !renamed : (await hotQuery(trx, DEVICE_ON_RECORD_SQL, [licenseId, device])).length === 0)) {
            throw new CheckoutRefused({ notOnRecord: true });
          }
          const [lease] = await hotQuery<{ expires_at: Date }>(trx, CHECKOUT_SQL, [now, device, licenseId], 'activations.checkout_lease');
          if (lease) return { expiresAt: lease.expires_at };
          const [first] = await hotQuery<{ earliest: Date }>(trx, `SELECT min(expires_at) AS earliest FROM license_leases WHERE license_id = $1`, [licenseId]);
          throw new CheckoutRefused({ earliestExpiry: first!.earliest });
        });
      } catch (err) {
        if (err instanceof CheckoutRefused) return err.outcome;
        throw err;
      }
    },

    /** Frees the device's seat of the license, if it holds one: idempotent. */
    checkinLease: (licenseId: string, device: string) =>
      hotQuery(db, `DELETE FROM license_leases WHERE license_id = $1 AND fingerprint_hash = $2`, [licenseId, device], 'activations.checkin_lease'),

    /**
     * Records a floating license's device that took a seat: known devices are touched, new ones added
     * without counting against a limit (its seats are leases), so the developer sees who ran it.
     */
    recordFloatingDevice: (licenseId: string, fingerprintHash: string, report: DeviceReport, now: Date) =>
      hotQuery(
        db,
        `INSERT INTO devices (license_id, fingerprint_hash, platform, engine_version, app_version, first_seen_at, last_seen_at)
         VALUES ($6, $2, $3, $4, $5, $1, $1)
         ON CONFLICT (license_id, fingerprint_hash) DO UPDATE SET last_seen_at = $1, platform = coalesce($3, devices.platform),
           engine_version = coalesce($4, devices.engine_version), app_version = coalesce($5, devices.app_version)`,
        [...deviceBindings(fingerprintHash, report, now), licenseId],
      ),

    findById: async (id: string, now: Date, q: Db = db) => (await hotQuery<LicenseForRuntime>(q, `${runtimeLicenseSql()} WHERE licenses.id = $2`, [now, id]))[0],

    transaction: <T>(work: (trx: Knex.Transaction) => Promise<T>) => db.transaction(work),

    /** Records a launch of a known device; false when the device is not activated on the license. */
    touchDevice: async (licenseId: string, fingerprintHash: string, report: DeviceReport, now: Date, q: Db = db) =>
      (await hotQuery(q, touchDeviceSql('$6'), [...deviceBindings(fingerprintHash, report, now), licenseId])).length === 1,

    /** One statement: a known device is touched; a new one takes a slot (CLAIM_SQL). */
    claimDevice: async (licenseId: string, fingerprintHash: string, report: DeviceReport, now: Date, q: Db = db) =>
      (await hotQuery<{ known: boolean; added: boolean }>(q, CLAIM_SQL, [...deviceBindings(fingerprintHash, report, now), licenseId]))[0]!,

    /** Starts the no-commitment trial clock once (the first activation wins); the license as it now reads. */
    startTrialClock: (trx: Knex.Transaction, id: string, expiresAt: Date, now: Date) =>
      hotQuery<RuntimeLicense>(trx, `UPDATE licenses SET expires_at = coalesce(expires_at, $2), updated_at = $1 WHERE id = $3 RETURNING ${LICENSE_COLUMNS}`, [
        now,
        expiresAt,
        id,
      ]).then((r) => r[0]!),

    /**
     * Serialises trial starts of one computer for one app until the transaction ends: two different
     * trial licenses activated at once on the same machine cannot both pass the count.
     */
    /** Serialises the trial starts of one computer of the app: `computer` is its machine id's hash, or its fingerprint without components. */
    lockTrialSlot: (trx: Knex.Transaction, appId: string, computer: string) => trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [`trial:${appId}:${computer}`]),

    /**
     * Trial starts of the app under licenses other than this one that may be this computer's: its
     * fingerprint's, and those sharing its machine id (the caller applies the device-matching rule).
     */
    trialStartsOf: (trx: Knex.Transaction, appId: string, fingerprintHash: string, machineIdHash: string | null, licenseId: string) =>
      trx('trial_starts')
        .where({ app_id: appId })
        .whereNot({ license_id: licenseId })
        .where((q) => {
          q.where({ fingerprint_hash: fingerprintHash });
          if (machineIdHash) q.orWhere({ machine_id_hash: machineIdHash });
        })
        .select<{ license_id: string; fingerprint_hash: string; component_hashes: ComponentHashes | null }[]>('license_id', 'fingerprint_hash', 'component_hashes'),

    recordTrialStart: (trx: Knex.Transaction, appId: string, fingerprintHash: string, components: ComponentHashes | undefined, licenseId: string, now: Date) =>
      trx('trial_starts')
        .insert({
          app_id: appId,
          fingerprint_hash: fingerprintHash,
          license_id: licenseId,
          started_at: now,
          machine_id_hash: components?.[MACHINE_ID] ?? null,
          component_hashes: components ? JSON.stringify(components) : null,
        })
        .onConflict(['app_id', 'fingerprint_hash', 'license_id'])
        .ignore(),

    /**
     * The devices of the license (by key or id) that carry component hashes, when `device` itself is
     * not on record: the candidates a changed device may be (service.ts matches them by the rule).
     * None for a revoked license, so its devices stay as they are.
     */
    devicesToMatch: async (by: { id: string } | { key: string }, device: string) =>
      hotQuery<{ license_id: string; fingerprint_hash: string; component_hashes: ComponentHashes }>(
        db,
        `SELECT d.license_id, d.fingerprint_hash, d.component_hashes FROM devices d JOIN licenses l ON l.id = d.license_id
         WHERE l.${'id' in by ? 'id' : 'license_key'} = $1 AND l.status <> 'REVOKED' AND d.component_hashes IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM devices known WHERE known.license_id = l.id AND known.fingerprint_hash = $2)
         ORDER BY d.last_seen_at DESC`,
        ['id' in by ? by.id : by.key, device],
      ),

    /**
     * The device on record as `from` is now `to` (its components changed): same row, same slot, same
     * device key, `from` kept among its previous fingerprints (the last 8). False when `from` is gone
     * or `to` got a row meanwhile (a concurrent activation).
     */
    renameDevice: (licenseId: string, from: string, to: string, components: ComponentHashes) => renameIn(db, licenseId, from, to, components),

    /**
     * The record a runtime token's fingerprint `named` stands for on the license: the device of that
     * fingerprint, else the one renamed from it (renameDevice); undefined when neither is on record.
     * In a transaction (`held`), the record is held until it ends: a reset or deactivation removing it
     * (or a rename) waits, and one that removed it meanwhile leaves nothing found. Removals lock the
     * license row first, so a caller holds that row before this one (meters/store.ts holdLicense).
     */
    recordNamedBy: async (licenseId: string, named: string, held?: Knex.Transaction) =>
      (
        await hotQuery<{ fingerprint_hash: string; component_hashes: ComponentHashes | null }>(
          held ?? db,
          `SELECT fingerprint_hash, component_hashes FROM devices WHERE license_id = $1 AND (fingerprint_hash = $2 OR $2 = ANY (previous_fingerprints))
           ORDER BY fingerprint_hash = $2 DESC, last_seen_at DESC LIMIT 1${held ? ' FOR KEY SHARE' : ''}`,
          [licenseId, named],
          held ? 'activations.hold_record_named_by' : 'activations.record_named_by',
        )
      )[0],

    /** Keeps the component hashes a device last presented, which later matches compare against. */
    recordComponents: (licenseId: string, device: string, components: ComponentHashes) =>
      hotQuery(db, `UPDATE devices SET component_hashes = $3 WHERE license_id = $1 AND fingerprint_hash = $2 AND component_hashes IS DISTINCT FROM $3::jsonb`, [
        licenseId,
        device,
        JSON.stringify(components),
      ]),

    /**
     * The license a deactivation names, locked until the transaction ends (activation's slot claim
     * and the developer's reset wait on the same row lock), with its app's deactivation quota;
     * undefined when the license is gone.
     */
    lockForDeactivation: async (trx: Knex.Transaction, licenseId: string) =>
      (
        await trx.raw<{ rows: { id: string; app_deactivations_per_30_days: number }[] }>(
          `SELECT l.id, a.app_deactivations_per_30_days FROM licenses l JOIN apps a ON a.id = l.app_id WHERE l.id = ? FOR UPDATE OF l`,
          [licenseId],
        )
      ).rows[0],

    /** Frees the device's seat, as a reset does for each device; false when it was not activated on the license. */
    removeDevice: async (trx: Knex.Transaction, licenseId: string, fingerprintHash: string) => {
      const removed = await trx('devices').where({ license_id: licenseId, fingerprint_hash: fingerprintHash }).delete();
      if (removed === 0) return false;
      // A node-locked device held a slot of the device limit; a floating one holds a lease, not a slot.
      await trx('licenses').where({ id: licenseId, seat_model: 'node_locked' }).decrement('device_count', 1);
      await trx('license_leases').where({ license_id: licenseId, fingerprint_hash: fingerprintHash }).delete();
      return true;
    },

    /**
     * One statement: heard only from a device activated on the license about a build of its app, and
     * counted once per device and window (TAMPER_REPORT_WINDOW_MS): the device's reports are counted in
     * its bucket of rate_limit_hits, and only the window's first raises `tamper_reports`. Every one
     * heard moves `last_tamper_report_at`.
     */
    recordTamperReport: (at: { licenseId: string; fingerprintHash: string; buildId: string; now: Date; windowStart: Date }) =>
      db.raw(
        `WITH heard AS (
           SELECT l.id FROM licenses l
           WHERE l.id = ?
             AND EXISTS (SELECT 1 FROM devices d WHERE d.license_id = l.id AND d.fingerprint_hash = ?)
             AND EXISTS (SELECT 1 FROM builds b WHERE b.id = ? AND b.app_id = l.app_id)
         ), hit AS (${countHitCte({ bucket: `'tamper_report:' || heard.id || ':' || ?::text`, windowStart: '?::timestamptz', from: 'heard' })})
         UPDATE licenses l SET tamper_reports = tamper_reports + (hit.hits = 1)::int, last_tamper_report_at = ?
         FROM hit WHERE l.id = ?`,
        [at.licenseId, at.fingerprintHash, at.buildId, at.fingerprintHash, at.windowStart, at.now, at.licenseId],
      ),
  };
}

export type ActivationsStore = ReturnType<typeof createActivationsStore>;
