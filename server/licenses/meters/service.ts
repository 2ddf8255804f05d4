import type { Knex } from 'knex';
import { readRuntimeToken } from '../../activations/runtime-token.js';
import type { Clock } from '../../clock.js';
import { RequestError, assertThat } from '../../errors.js';
import type { Keyring } from '../../signing/keyring.js';
import { assertUsable } from '../rules.js';
import { periodContaining, type PeriodBounds } from './periods.js';
import { type ConsumeInput, type ConsumeResult, type Meters, type SetMetersInput } from './schemas.js';
import type { ConsumptionRow, MetersStore } from './store.js';

/** A runtime clock a little ahead of the server's is not a consumption from the future. */
const MAX_CLOCK_AHEAD_MS = 5 * 60_000;

const iso = (d: Date | null) => d?.toISOString() ?? null;

function answerOf(row: ConsumptionRow, replayed: boolean): ConsumeResult {
  const used = Number(row.used);
  return {
    license_id: row.license_id,
    feature: row.feature,
    quantity: row.quantity,
    used,
    remaining: Math.max(0, row.uses_per_period - used),
    uses_per_period: row.uses_per_period,
    period_ends_at: iso(row.period_end),
    replayed,
  };
}

/** The first answer to this key, or 409 when the key was spent on another consumption. */
function replayOf(row: ConsumptionRow, input: ConsumeInput): ConsumeResult {
  if (row.feature !== input.feature || row.quantity !== input.quantity) {
    throw new RequestError('IDEMPOTENCY_KEY_REUSED', `This idempotency key already counted ${row.quantity} of ${row.feature}; use a new key for each consumption`);
  }
  return answerOf(row, true);
}

/**
 * When the app says it consumed the units, kept in the ledger only: it never chooses the period (a
 * backdated report would spend a past period's balance), so any past date is taken as it is.
 */
function consumedAtOf(input: ConsumeInput, now: Date): Date {
  if (input.consumed_at === undefined) return now;
  const at = new Date(input.consumed_at);
  if (at.getTime() > now.getTime() + MAX_CLOCK_AHEAD_MS) throw new RequestError('VALIDATION_FAILED', 'body.consumed_at: must not be in the future');
  return at;
}

/** The license's meter of `feature`; a name like `constructor` is a feature like any other, not an Object.prototype key. */
const meterOf = (meters: Meters, feature: string) => (Object.hasOwn(meters, feature) ? meters[feature] : undefined);

/** Each meter of a license in the period containing `now`, with its usage. */
function usageView(licenseId: string, meters: Meters, used: Map<string, number>, now: Date) {
  return {
    license_id: licenseId,
    meters: Object.entries(meters)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([feature, meter]) => {
        const period = periodContaining(meter.period, now);
        const units = used.get(feature) ?? 0;
        return {
          feature,
          ...meter,
          used: units,
          remaining: Math.max(0, meter.uses_per_period - units),
          period_starts_at: period.start.toISOString(),
          period_ends_at: iso(period.end),
        };
      }),
  };
}

export function createMetersService(deps: {
  store: MetersStore;
  clock: Clock;
  keyring: Keyring;
  /**
   * The device record a runtime token's fingerprint stands for on the license (activations' rule, which
   * refresh and deactivation use), held until the transaction ends.
   */
  recordNamedBy: (licenseId: string, fingerprint: string, held: Knex.Transaction) => Promise<object | undefined>;
}) {
  const { store, clock, keyring, recordNamedBy } = deps;

  async function usageAt(licenseId: string, meters: Meters, now: Date) {
    const periods = Object.entries(meters).map(([feature, meter]) => ({ feature, period: periodContaining(meter.period, now) }));
    return usageView(licenseId, meters, await store.usedIn(licenseId, periods), now);
  }

  return {
    /** The license's meters with their usage in the current period; 404 for a license not the developer's. */
    async usage(developerId: string, licenseId: string) {
      const license = await store.findMeters(developerId, licenseId);
      assertThat(license, 'LICENSE_NOT_FOUND', 'No such license');
      return usageAt(license.id, license.meters, clock.now());
    },

    /** Replaces the license's meters; usage already counted stays with its feature and period. */
    async setMeters(developerId: string, licenseId: string, input: SetMetersInput) {
      const now = clock.now();
      assertThat(await store.setMeters(developerId, licenseId, input.meters, now), 'LICENSE_NOT_FOUND', 'No such license');
      return usageAt(licenseId, input.meters, now);
    },

    /**
     * Counts `quantity` of a metered feature on the license the runtime token names, in the meter's
     * period current when the request arrives (`consumed_at` is recorded, never chooses it), once per
     * idempotency key: a replay answers the first answer and counts nothing. The token may be expired
     * (a refresh would renew it on the same conditions) but its device must still be on record for
     * the license. Past the limit: 409 USAGE_LIMIT_EXCEEDED, nothing counted.
     */
    async consume(input: ConsumeInput): Promise<ConsumeResult> {
      const { licenseId, device } = readRuntimeToken(keyring, input.token);
      const now = clock.now();
      const consumedAt = consumedAtOf(input, now);
      const counted = await store.findConsumption(licenseId, input.idempotency_key);
      if (counted) return replayOf(counted, input);
      return store.transaction(async (trx) => {
        // Twins with this key wait here until the first commits, then answer its answer (or the key's reuse).
        await store.lockIdempotencyKey(trx, licenseId, input.idempotency_key);
        const twin = await store.findConsumption(licenseId, input.idempotency_key, trx);
        if (twin) return replayOf(twin, input);
        // The license and the device's record are read held, not before the transaction: a reset
        // committed in between would otherwise let a removed device's units count.
        const license = await store.holdLicense(trx, licenseId, now);
        assertUsable(license);
        assertThat(
          await recordNamedBy(licenseId, device, trx),
          'DEVICE_NOT_ACTIVATED',
          'This device is not activated on the license (its devices may have been reset); activate it again',
        );
        const meter = meterOf(license.meters, input.feature);
        assertThat(meter, 'METER_NOT_FOUND', `The license has no meter for ${input.feature}`);
        const period: PeriodBounds = periodContaining(meter.period, now);
        const at = { licenseId, feature: input.feature, period };
        const used = await store.addToCounter(trx, at, input.quantity, meter);
        if (used === undefined) {
          const remaining = Math.max(0, meter.uses_per_period - (await store.usedInPeriod(trx, at)));
          throw new RequestError(
            'USAGE_LIMIT_EXCEEDED',
            `${input.quantity} more of ${input.feature} would pass its ${meter.uses_per_period} per ${meter.period}; ${remaining} left`,
            {
              balance: { remaining, period_ends_at: iso(period.end) },
            },
          );
        }
        const row: ConsumptionRow = {
          license_id: licenseId,
          idempotency_key: input.idempotency_key,
          feature: input.feature,
          quantity: input.quantity,
          consumed_at: consumedAt,
          recorded_at: now,
          period_start: period.start,
          period_end: period.end,
          used,
          uses_per_period: meter.uses_per_period,
        };
        await store.recordConsumption(trx, row);
        return answerOf(row, false);
      });
    },
  };
}

export type MetersService = ReturnType<typeof createMetersService>;
