import type { Knex } from 'knex';
import type { Db } from '../db/knex.js';
import { licenseColumns, type DeviceRow, type LicenseRead } from '../licenses/store.js';
import type { DeviceReport } from './schemas.js';

/** A license with the settings of its app that activation applies. */
export interface LicenseForRuntime extends LicenseRead {
  offline_grace_hours: number;
  trials_per_computer: number;
}

/** Only the fields the runtime reported: an older SDK that omits one does not erase it. */
function reported(report: DeviceReport): Partial<DeviceReport> {
  return Object.fromEntries(Object.entries(report).filter(([, v]) => v !== undefined));
}

/** Runtime reads and writes: not scoped by developer, the license key (or a signed token) is the credential. */
export function createActivationsStore(db: Db) {
  const withApp = (now: Date) =>
    db('licenses')
      .join('apps', 'apps.id', 'licenses.app_id')
      .first<LicenseForRuntime | undefined>(...licenseColumns(db, now), 'apps.offline_grace_hours', 'apps.trials_per_computer');

  return {
    findByKey: (licenseKey: string, now: Date) => withApp(now).where('licenses.license_key', licenseKey),
    findById: (id: string, now: Date) => withApp(now).where('licenses.id', id),

    transaction: <T>(work: (trx: Knex.Transaction) => Promise<T>) => db.transaction(work),

    /** The license's row lock: activations of one license (in any server process) run one at a time. */
    lock: (trx: Knex.Transaction, id: string, now: Date) =>
      trx('licenses').where({ id }).forUpdate().first<LicenseRead | undefined>(licenseColumns(trx, now)),

    /** Records a launch of a known device; undefined when the device is not activated on the license. */
    touchDevice: (licenseId: string, fingerprintHash: string, report: DeviceReport, now: Date, q: Knex = db) =>
      q('devices')
        .where({ license_id: licenseId, fingerprint_hash: fingerprintHash })
        .update({ ...reported(report), last_seen_at: now })
        .returning('*')
        .then((r: DeviceRow[]) => r[0]),

    /**
     * Adds the device if the license has fewer than `deviceLimit`; false when it is full. One round
     * trip; correct only under the license lock, which keeps the count from moving meanwhile.
     */
    insertDeviceWithinLimit: async (
      trx: Knex.Transaction,
      licenseId: string,
      deviceLimit: number,
      fingerprintHash: string,
      report: DeviceReport,
      now: Date,
    ): Promise<boolean> => {
      const { rowCount } = await trx.raw<{ rowCount: number }>(
        `INSERT INTO devices (license_id, fingerprint_hash, platform, engine_version, app_version, first_seen_at, last_seen_at)
         SELECT ?, ?, ?, ?, ?, ?, ? WHERE (SELECT count(*) FROM devices WHERE license_id = ?) < ?`,
        [licenseId, fingerprintHash, report.platform ?? null, report.engine_version ?? null, report.app_version ?? null, now, now, licenseId, deviceLimit],
      );
      return rowCount === 1;
    },

    /** Starts the no-commitment trial clock; returns the license as it now reads. */
    startTrialClock: (trx: Knex.Transaction, id: string, expiresAt: Date, now: Date) =>
      trx('licenses')
        .where({ id })
        .update({ expires_at: expiresAt, updated_at: now })
        .returning(licenseColumns(trx, now))
        .then((r: LicenseRead[]) => r[0]!),

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
