import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import { assertThat } from '../errors.js';
import { rateLimited, type RateLimiter, type RateRule } from '../http/rate-limit.js';
import { NO_COMMITMENT_TRIAL_DAYS, assertUsable, isUnstartedTrial } from '../licenses/rules.js';
import type { Keyring } from '../signing/keyring.js';
import { issueRuntimeToken, readRuntimeToken } from './runtime-token.js';
import type { ActivateInput, ActivationResult, RefreshInput } from './schemas.js';
import type { ActivationsStore, LicenseForRuntime } from './store.js';

/** SPEC.md: at most 5 activation requests per 10 minutes per license. */
export const ACTIVATION_VELOCITY: RateRule = { limit: 5, windowSeconds: 600 };

const DAY_MS = 86_400_000;

/** Whether `buildId` names a build of `appId`; the builds domain provides it. */
export type BuildLookup = (appId: string, buildId: string) => Promise<boolean>;

export function createActivationsService(deps: {
  store: ActivationsStore;
  clock: Clock;
  keyring: Keyring;
  rateLimiter: RateLimiter;
  buildExists: BuildLookup;
}) {
  const { store, clock, keyring, rateLimiter, buildExists } = deps;

  /** A computer may start `trials_per_computer` trials of an app, ever, whatever the license. */
  async function assertTrialAvailable(trx: Knex.Transaction, license: LicenseForRuntime, device: string): Promise<void> {
    await store.lockTrialSlot(trx, license.app_id, device);
    const used = await store.countOtherTrials(trx, license.app_id, device, license.id);
    assertThat(used < license.trials_per_computer, 'TRIAL_ALREADY_USED', 'This computer has already used its free trial of this app');
  }

  return {
    /**
     * Rules in SPEC.md's order, the first failure wins: unknown or revoked key (401), expired (403),
     * unknown build (404), velocity (429); then a known device re-activates without taking a slot,
     * and a new one needs a free trial (403) and a free slot (403).
     */
    async activate(input: ActivateInput): Promise<ActivationResult> {
      const now = clock.now();
      const { device_fingerprint: device, license_key, build_id, ...report } = input;
      const found = await store.findByKey(license_key, now);
      assertUsable(found);
      if (build_id !== null) {
        assertThat(await buildExists(found.app_id, build_id), 'BUILD_NOT_FOUND', 'No such build of this app');
      }
      const velocity = await rateLimiter.consume(`activation:${found.id}`, ACTIVATION_VELOCITY);
      if (!velocity.allowed) {
        throw rateLimited(velocity.resetSeconds, `Too many activations of this license; retry in ${velocity.resetSeconds} seconds`);
      }

      const license = await store.transaction(async (trx) => {
        const locked = await store.lock(trx, found.id, now);
        assertUsable(locked); // revoked or deleted since the first read
        if (await store.touchDevice(locked.id, device, report, now, trx)) return locked;

        const isTrial = locked.license_type === 'trial';
        if (isTrial) await assertTrialAvailable(trx, found, device);
        assertThat(
          await store.insertDeviceWithinLimit(trx, locked.id, locked.device_limit, device, report, now),
          'DEVICE_LIMIT_EXCEEDED',
          `The license is already active on ${locked.device_limit} device(s), its limit; deactivate one or reset devices`,
        );
        if (!isTrial) return locked;
        await store.recordTrialStart(trx, locked.app_id, device, locked.id, now);
        return isUnstartedTrial(locked)
          ? store.startTrialClock(trx, locked.id, new Date(now.getTime() + NO_COMMITMENT_TRIAL_DAYS * DAY_MS), now)
          : locked;
      });
      return issueRuntimeToken(keyring, license, found.offline_grace_hours, device, now);
    },

    /**
     * A new token for a device already activated. Fails like activation once the license is revoked
     * or expired, and with DEVICE_NOT_ACTIVATED once the device was reset.
     */
    async refresh(input: RefreshInput): Promise<ActivationResult> {
      const now = clock.now();
      const { credential, report } = input;
      let license: LicenseForRuntime | undefined;
      let device: string;
      if (credential.kind === 'token') {
        const presented = readRuntimeToken(keyring, credential.token);
        license = await store.findById(presented.licenseId, now);
        device = presented.device;
      } else {
        license = await store.findByKey(credential.license_key, now);
        device = credential.device_fingerprint;
      }
      assertUsable(license);
      assertThat(
        await store.touchDevice(license.id, device, report, now),
        'DEVICE_NOT_ACTIVATED',
        'This device is not activated on the license (its devices may have been reset); activate it again',
      );
      return issueRuntimeToken(keyring, license, license.offline_grace_hours, device, now);
    },
  };
}

export type ActivationsService = ReturnType<typeof createActivationsService>;
