import type { Knex } from 'knex';
import type { Db } from '../../db/knex.js';
import { EFFECTIVE_STATUS_SQL, type LicenseStatus } from '../rules.js';
import type { PeriodBounds } from './periods.js';
import type { Meter, Meters } from './schemas.js';

/** A counted consumption as the ledger keeps it: enough to answer a replay exactly as the first time. */
export interface ConsumptionRow {
  license_id: string;
  idempotency_key: string;
  feature: string;
  quantity: number;
  consumed_at: Date;
  recorded_at: Date;
  period_start: Date;
  period_end: Date | null;
  used: string | number;
  uses_per_period: number;
}

export interface MeteredLicense {
  id: string;
  effective_status: LicenseStatus;
  meters: Meters;
}

/** A counter's row: the license's feature in one period (its kind and start, migration 039). */
const counterKey = (at: { licenseId: string; feature: string; period: PeriodBounds }) => ({
  license_id: at.licenseId,
  feature: at.feature,
  period: at.period.kind,
  period_start: at.period.start,
});

/** Metered features' counters and ledger (migrations 031, 039). */
export function createMetersStore(db: Db) {
  return {
    transaction: <T>(work: (trx: Knex.Transaction) => Promise<T>) => db.transaction(work),

    /**
     * The license a runtime token names, with its meters and status now, held (FOR KEY SHARE) until
     * the transaction ends: a reset, a deactivation or a store's revoke, which lock the license row
     * before removing its devices, wait for the consumption, or the consumption for them. Taken
     * before the device record, in their order (license, then device): the other way round, the two
     * would deadlock.
     */
    holdLicense: (trx: Knex.Transaction, licenseId: string, now: Date) =>
      trx('licenses')
        .where({ id: licenseId })
        .forKeyShare()
        .first<MeteredLicense | undefined>('id', 'meters', trx.raw(`(${EFFECTIVE_STATUS_SQL}) AS effective_status`, [now])),

    /** The developer's license's meters; undefined when the license is not the developer's. */
    findMeters: (developerId: string, licenseId: string) =>
      db('licenses').where({ id: licenseId, developer_id: developerId }).first<{ id: string; meters: Meters } | undefined>('id', 'meters'),

    /** Replaces the license's meters; false when the license is not the developer's. */
    setMeters: (developerId: string, licenseId: string, meters: Meters, now: Date) =>
      db('licenses')
        .where({ id: licenseId, developer_id: developerId })
        .update({ meters: JSON.stringify(meters), updated_at: now })
        .then((n: number) => n > 0),

    /** Units used of each feature in the period given, 0 for those never consumed. */
    async usedIn(licenseId: string, periods: { feature: string; period: PeriodBounds }[]): Promise<Map<string, number>> {
      const used = new Map<string, number>();
      if (periods.length === 0) return used;
      const rows: { feature: string; used: string }[] = await db('meter_usage')
        .where({ license_id: licenseId })
        .whereIn(
          ['feature', 'period', 'period_start'],
          periods.map((p) => [p.feature, p.period.kind, p.period.start]),
        )
        .select('feature', 'used');
      for (const row of rows) used.set(row.feature, Number(row.used));
      return used;
    },

    findConsumption: (licenseId: string, key: string, q: Knex = db) => q<ConsumptionRow>('meter_consumptions').where({ license_id: licenseId, idempotency_key: key }).first(),

    /**
     * Adds `quantity` to the period's counter unless that passes the meter's limit: one conditional
     * UPDATE, so concurrent consumptions queue on the counter's row lock and never pass it together.
     * Answers the units used after, or undefined (nothing counted) when it would pass the limit.
     */
    async addToCounter(trx: Knex.Transaction, at: { licenseId: string; feature: string; period: PeriodBounds }, quantity: number, meter: Meter): Promise<number | undefined> {
      const key = counterKey(at);
      await trx('meter_usage').insert(key).onConflict(['license_id', 'feature', 'period', 'period_start']).ignore();
      const rows: { used: string }[] = await trx('meter_usage')
        .where(key)
        .andWhereRaw('used + ? <= ?', [quantity, meter.uses_per_period])
        .update({ used: trx.raw('used + ?', [quantity]) })
        .returning('used');
      return rows[0] ? Number(rows[0].used) : undefined;
    },

    /** Units used in a period, for the answer that refuses a consumption. */
    usedInPeriod: (trx: Knex.Transaction, at: { licenseId: string; feature: string; period: PeriodBounds }) =>
      trx('meter_usage')
        .where(counterKey(at))
        .first<{ used: string } | undefined>('used')
        .then((r) => Number(r?.used ?? 0)),

    /**
     * Serialises the consumptions of one idempotency key of the license until the transaction ends,
     * so a twin sent concurrently finds the first's ledger row instead of racing it to the counter.
     */
    lockIdempotencyKey: (trx: Knex.Transaction, licenseId: string, key: string) => trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [`consume:${licenseId}:${key}`]),

    /** Records the counted consumption (its key is locked: no twin can have recorded it meanwhile). */
    recordConsumption: (trx: Knex.Transaction, row: ConsumptionRow) => trx('meter_consumptions').insert(row),
  };
}

export type MetersStore = ReturnType<typeof createMetersStore>;
