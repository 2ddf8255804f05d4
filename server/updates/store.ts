import type { Knex } from 'knex';
import { effectivePlan, planNow, type Plan } from '../accounts/plan.js';
import { hotQuery, type Db } from '../db/knex.js';
import type { BuildPlatform } from '../builds/schemas.js';
import type { BuildRow } from '../builds/store.js';
import { countHitCte, type LicenseLimitWindow } from '../http/license-limits.js';
import { EFFECTIVE_STATUS_SQL, effectiveStatusSqlAt, type LicenseStatus } from '../licenses/rules.js';
import type { AdoptionEvent, UpdateCheckInput, UpdateReportInput } from './schemas.js';

export type AdoptionState = AdoptionEvent;

/** An active push (of an app or of one license) with what it shows of its target build. */
export interface PushRead {
  build_id: string;
  release_notes: string;
  serial: number;
  pushed_at: Date;
  version: string | null;
  platform: BuildPlatform;
  released: boolean;
  build_created_at: Date;
}

export interface NewPush {
  developer_id: string;
  build_id: string;
  release_notes: string;
  pushed_at: Date;
}

/** One group of the devices a push governs: how many are in an adoption state on an engine version. */
export interface DeviceGroup {
  state: AdoptionState | null;
  engine_version: string | null;
  devices: number;
}

/** Which devices a push governs: an app push, those of licenses without a newer push of their own. */
export type PushScope = { appId: string; serial: number } | { licenseId: string };

/** The license of a runtime request and this request counted in the license's window of its limit. */
export interface CountedLicense {
  status: LicenseStatus;
  device_limit: number;
  /** Requests of this kind of the license in the current window, this one included. */
  hits: number;
}

interface CheckedDevice extends CountedLicense {
  license_id: string;
  app_id: string;
  /** The device's launch was recorded: it is activated on the license, and the check was within the limit. */
  device_known: boolean;
  /** The device's record once the check updated it: what the check sent, else what was known before. */
  device_platform: string | null;
  device_engine_version: string | null;
  running_build_id: string | null;
}

/** The push that applies and its target build (READY, so its package's hash and size are known). */
interface ApplicablePush {
  build_id: string;
  release_notes: string;
  serial: number;
  platform: BuildPlatform;
  version: string | null;
  sha256: string;
  protected_size_bytes: number;
  /** What the device did with this build so far. */
  adoption: AdoptionState | null;
}

type NoPush = { [K in keyof ApplicablePush]: null };

/** What one update check needs, read in one statement; the push fields are all null when no push applies. */
export type CheckRow = CheckedDevice & (ApplicablePush | NoPush);

export interface ReportRow extends CountedLicense {
  /** The device is activated on the license (whether or not the report was within the limit). */
  device_known: boolean;
  build_known: boolean;
}

const PUSH_COLUMNS = ['p.build_id', 'p.release_notes', 'p.serial', 'p.pushed_at', 'builds.version', 'builds.platform', 'builds.released', 'builds.created_at as build_created_at'];

// EFFECTIVE_STATUS_SQL's one binding, the current time, is $1 in the runtime statements below.
const STATUS_AT_$1 = effectiveStatusSqlAt('$1');

/**
 * A device's first report of a build wins, except that an install replaces a skip or a failure (a
 * customer who skipped a version and installed it later, from a download, counts as installed), a
 * skip replaces a failure, and a later failure replaces an earlier one (its reason and time).
 */
const ADOPTION_UPSERT = `
  ON CONFLICT (license_id, fingerprint_hash, build_id)
  DO UPDATE SET state = EXCLUDED.state, reason = EXCLUDED.reason, at = EXCLUDED.at
  WHERE (update_adoptions.state, EXCLUDED.state) IN (('skipped', 'installed'), ('failed', 'installed'), ('failed', 'skipped'), ('failed', 'failed'))`;

/** The license of the key, only for the app named if one is: another app's key reads as unknown. $1 now, $2 key, $3 app or null. */
const LICENSE_OF_APP = `
  SELECT licenses.id, licenses.app_id, licenses.device_limit, (${STATUS_AT_$1}) AS status FROM licenses
  WHERE licenses.license_key = $2 AND ($3::text IS NULL OR licenses.app_id = $3)`;

/**
 * The license of the key (for the app named, if one is), the check counted in the license's window,
 * a launch of the device recorded unless the license is revoked or past its limit (what the check
 * did not send stays as recorded), and the push that applies to the license: the newer (by serial)
 * of its app's and its own. $1 now, $2 key, $3 app or null, $4 fingerprint hash, $5 platform,
 * $6 engine version, $7 app version (each null when not sent), $8/$9 the limit's bucket prefix and
 * window, $10 the limit per seat, $11 whether the running build was sent, $12 that build or null.
 */
const CHECK_SQL = `
  WITH lic AS (${LICENSE_OF_APP}
  ), hit AS (
    ${countHitCte({ bucket: '$8::text || lic.id', windowStart: '$9::timestamptz', from: 'lic' })}
  ), touched AS (
    UPDATE devices SET last_seen_at = $1, platform = coalesce($5, platform), engine_version = coalesce($6, engine_version),
      app_version = coalesce($7, app_version), build_id = CASE WHEN $11::boolean THEN $12::text ELSE build_id END
    WHERE license_id = (SELECT lic.id FROM lic, hit WHERE lic.status <> 'REVOKED' AND hit.hits <= $10::bigint * lic.device_limit)
      AND fingerprint_hash = $4
    RETURNING platform, engine_version, build_id
  ), push AS (
    (SELECT build_id, release_notes, serial FROM app_pushes WHERE app_id = (SELECT app_id FROM lic)
     UNION ALL
     SELECT build_id, release_notes, serial FROM license_pushes WHERE license_id = (SELECT id FROM lic))
    ORDER BY serial DESC LIMIT 1
  )
  SELECT lic.id AS license_id, lic.app_id, lic.status, lic.device_limit, (SELECT hits FROM hit) AS hits, EXISTS (SELECT 1 FROM touched) AS device_known,
    (SELECT platform FROM touched) AS device_platform, (SELECT engine_version FROM touched) AS device_engine_version,
    (SELECT build_id FROM touched) AS running_build_id,
    push.build_id, push.release_notes, push.serial,
    builds.platform, builds.version, builds.sha256, builds.protected_size_bytes,
    (SELECT state FROM update_adoptions a WHERE a.license_id = lic.id AND a.fingerprint_hash = $4 AND a.build_id = push.build_id) AS adoption
  FROM lic LEFT JOIN push ON true LEFT JOIN builds ON builds.id = push.build_id`;

/**
 * The license of the key (for the app named), the report counted in the license's window, whether
 * the device is activated on the license and the build is the app's; only when all three hold and
 * the report is within the limit, a launch of the device and the adoption are recorded.
 * $1 now, $2 key, $3 app, $4 fingerprint hash, $5 build, $6 event, $7 platform, $8 engine, $9 version,
 * $10/$11 the limit's bucket prefix and window, $12 the limit per seat, $13 the failure's reason.
 */
const REPORT_SQL = `
  WITH lic AS (${LICENSE_OF_APP}
  ), hit AS (
    ${countHitCte({ bucket: '$10::text || lic.id', windowStart: '$11::timestamptz', from: 'lic' })}
  ), known AS (
    SELECT devices.license_id FROM devices JOIN lic ON lic.id = devices.license_id
    WHERE lic.status <> 'REVOKED' AND devices.fingerprint_hash = $4
  ), build AS (
    SELECT id FROM builds WHERE id = $5 AND app_id = $3
  ), recorded AS (
    SELECT known.license_id, build.id AS build_id FROM known, build, lic, hit WHERE hit.hits <= $12::bigint * lic.device_limit
  ), touched AS (
    UPDATE devices SET last_seen_at = $1, platform = coalesce($7, platform), engine_version = coalesce($8, engine_version), app_version = $9,
      build_id = CASE WHEN $6 = 'installed' THEN $5 ELSE build_id END
    WHERE license_id = (SELECT license_id FROM recorded) AND fingerprint_hash = $4
  ), adopted AS (
    INSERT INTO update_adoptions (license_id, fingerprint_hash, build_id, state, reason, at)
    SELECT license_id, $4, build_id, $6, $13, $1 FROM recorded
    ${ADOPTION_UPSERT}
  )
  SELECT lic.status, lic.device_limit, (SELECT hits FROM hit) AS hits,
    EXISTS (SELECT 1 FROM known) AS device_known, EXISTS (SELECT 1 FROM build) AS build_known
  FROM lic`;

/** Push records and adoption. Developer reads are scoped by developer; runtime ones by license key. */
export function createUpdatesStore(db: Db) {
  const appOf = (q: Knex, developerId: string, appId: string) =>
    q('apps').where({ id: appId, developer_id: developerId }).first<{ id: string; delivery_mode: 'all' | 'released_only' } | undefined>('id', 'delivery_mode');

  const licenseWithPlan = (q: Knex, developerId: string, licenseId: string, now: Date) =>
    q('licenses')
      .join('developers', 'developers.id', 'licenses.developer_id')
      .join('apps', 'apps.id', 'licenses.app_id')
      .where({ 'licenses.id': licenseId, 'licenses.developer_id': developerId })
      .first<{ id: string; app_id: string; effective_status: LicenseStatus; plan: Plan } | undefined>(
        'licenses.id',
        'licenses.app_id',
        q.raw(`(${EFFECTIVE_STATUS_SQL}) AS effective_status`, [now]),
        effectivePlan(q, now),
      );

  const pushOf = (q: Knex, table: 'app_pushes' | 'license_pushes', where: Record<string, string>) =>
    q(`${table} as p`).join('builds', 'builds.id', 'p.build_id').where(where).first<PushRead | undefined>(PUSH_COLUMNS);

  /** Reads the build and holds it (FOR KEY SHARE) until the push commits: deleting it waits, then clears the push. */
  const heldBuild = (trx: Knex.Transaction, appId: string) => trx<BuildRow>('builds').where({ app_id: appId }).forKeyShare();

  return {
    transaction: <T>(work: (trx: Knex.Transaction) => Promise<T>) => db.transaction(work),

    findApp: (developerId: string, appId: string) => appOf(db, developerId, appId),

    planOf: planNow,

    /**
     * The developer's app, locked until the transaction ends: pushes, unreleases and delivery-mode
     * changes of one app take turns. FOR NO KEY UPDATE still lets rows that reference the app
     * (builds, licenses) be inserted meanwhile.
     */
    lockApp: (trx: Knex.Transaction, developerId: string, appId: string) => appOf(trx, developerId, appId).forNoKeyUpdate(),

    findLicense: (developerId: string, licenseId: string, now: Date) => licenseWithPlan(db, developerId, licenseId, now),

    /** The developer's license, with its app locked like `lockApp`: per-license pushes take turns with app pushes. */
    lockLicense: (trx: Knex.Transaction, developerId: string, licenseId: string, now: Date) => licenseWithPlan(trx, developerId, licenseId, now).forNoKeyUpdate('apps'),

    findBuild: (trx: Knex.Transaction, appId: string, buildId: string) => heldBuild(trx, appId).where({ id: buildId }).first(),

    /** The newest READY build (created last), released if `releasedOnly`. */
    findNewestReadyBuild: (trx: Knex.Transaction, appId: string, releasedOnly: boolean) => {
      const q = heldBuild(trx, appId).where({ status: 'READY' });
      if (releasedOnly) q.where({ released: true });
      return q
        .orderBy([
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
        .first();
    },

    findAppPush: (appId: string, q: Knex = db) => pushOf(q, 'app_pushes', { 'p.app_id': appId }),

    findLicensePush: (licenseId: string, q: Knex = db) => pushOf(q, 'license_pushes', { 'p.license_id': licenseId }),

    /** Whether the app has a license that receives pushes: ACTIVE now. */
    hasActiveLicense: async (trx: Knex.Transaction, appId: string, now: Date) =>
      Boolean(await trx('licenses').where({ app_id: appId }).whereRaw(`(${EFFECTIVE_STATUS_SQL}) = 'ACTIVE'`, [now]).first('id')),

    /**
     * Replaces the app's push with a new serial and clears the per-license pushes of its licenses:
     * all older, so the app push overrides them (and clearing it later does not bring them back).
     */
    async saveAppPush(trx: Knex.Transaction, appId: string, push: NewPush): Promise<PushRead> {
      await trx('app_pushes')
        .insert({ app_id: appId, ...push, serial: trx.raw(`nextval('push_serials')`) })
        .onConflict('app_id')
        .merge();
      await trx('license_pushes')
        .whereIn('license_id', trx('licenses').select('id').where({ app_id: appId }))
        .delete();
      return (await pushOf(trx, 'app_pushes', { 'p.app_id': appId }))!;
    },

    async saveLicensePush(trx: Knex.Transaction, licenseId: string, push: NewPush): Promise<PushRead> {
      await trx('license_pushes')
        .insert({ license_id: licenseId, ...push, serial: trx.raw(`nextval('push_serials')`) })
        .onConflict('license_id')
        .merge();
      return (await pushOf(trx, 'license_pushes', { 'p.license_id': licenseId }))!;
    },

    deleteAppPush: (developerId: string, appId: string) => db('app_pushes').where({ app_id: appId, developer_id: developerId }).delete(),

    deleteLicensePush: (developerId: string, licenseId: string) => db('license_pushes').where({ license_id: licenseId, developer_id: developerId }).delete(),

    releaseBuild: (trx: Knex.Transaction, buildId: string) => trx('builds').where({ id: buildId }).update({ released: true }),

    /** The governed devices of ACTIVE licenses, grouped by adoption state of `buildId` and engine version. */
    countDevices: (scope: PushScope, buildId: string, now: Date) => {
      const q = db('licenses')
        .join('devices as d', 'd.license_id', 'licenses.id')
        .leftJoin('update_adoptions as a', (on) => on.on('a.license_id', 'd.license_id').andOn('a.fingerprint_hash', 'd.fingerprint_hash').andOnVal('a.build_id', buildId))
        .whereRaw(`(${EFFECTIVE_STATUS_SQL}) = 'ACTIVE'`, [now])
        .groupBy('a.state', 'd.engine_version')
        .select<DeviceGroup[]>('a.state', 'd.engine_version', db.raw('count(*)::int AS devices'));
      if ('licenseId' in scope) return q.where('licenses.id', scope.licenseId);
      return q.where('licenses.app_id', scope.appId).whereNotExists(db('license_pushes as lp').whereRaw('lp.license_id = licenses.id').where('lp.serial', '>', scope.serial));
    },

    // The runtime's side: one statement per request where it can be.

    // Prepared: every launch of every protected app runs it, and planning its CTEs each time cost
    // PostgreSQL more than running them (the bench went from 0.5 to about 1 times its baseline).
    check: async (input: UpdateCheckInput, checks: LicenseLimitWindow, now: Date) =>
      (
        await hotQuery<CheckRow>(
          db,
          CHECK_SQL,
          [
            now,
            input.license_key,
            input.app_id ?? null,
            input.device_fingerprint,
            input.platform ?? null,
            input.engine_version ?? null,
            input.version ?? null,
            checks.bucketPrefix,
            checks.start,
            checks.limit,
            input.build_id !== undefined,
            input.build_id ?? null,
          ],
          'update-check',
        )
      )[0],

    report: async (input: UpdateReportInput, reports: LicenseLimitWindow, now: Date) =>
      (
        await hotQuery<ReportRow>(db, REPORT_SQL, [
          now,
          input.license_key,
          input.app_id,
          input.device_fingerprint,
          input.build_id,
          input.event,
          input.platform ?? null,
          input.engine_version ?? null,
          input.version,
          reports.bucketPrefix,
          reports.start,
          reports.limit,
          input.reason ?? null,
        ])
      )[0],

    /** A device seen running the target build counts as installed. */
    recordInstalled: (licenseId: string, fingerprintHash: string, buildId: string, now: Date) =>
      hotQuery(db, `INSERT INTO update_adoptions (license_id, fingerprint_hash, build_id, state, at) VALUES ($1, $2, $3, 'installed', $4) ${ADOPTION_UPSERT}`, [
        licenseId,
        fingerprintHash,
        buildId,
        now,
      ]),
  };
}

export type UpdatesStore = ReturnType<typeof createUpdatesStore>;
