import type { Clock } from '../clock.js';
import { isUniqueViolation } from '../db/knex.js';
import { RequestError, assertThat } from '../errors.js';
import { rateLimited, type RateLimiter, type RateRule } from '../http/rate-limit.js';
import { NO_COMMITMENT_TRIAL_DAYS, assertUsable, isUnstartedTrial } from '../licenses/rules.js';
import type { Keyring } from '../signing/keyring.js';
import { issueRuntimeToken, readRuntimeToken } from './runtime-token.js';
import type { LicenseRead } from '../licenses/store.js';
import type { ActivateInput, ActivationResult, DeviceReport, RefreshInput } from './schemas.js';
import type { ActivationsStore, LicenseForRuntime } from './store.js';

/** SPEC.md: at most 5 activation requests per 10 minutes per license. */
export const ACTIVATION_VELOCITY: RateRule = { limit: 5, windowSeconds: 600 };

const DAY_MS = 86_400_000;

const deviceLimitExceeded = (limit: number) =>
  new RequestError(
    'DEVICE_LIMIT_EXCEEDED',
    `The license is already active on ${limit} device(s), its limit; deactivate one or reset devices`,
  );

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

  /**
   * Activates the device on a non-trial license: a known device re-activates, a new one takes a
   * free slot. Not claimed means the license filled up or was revoked meanwhile; re-reads say which.
   */
  async function claimOrRefuse(license: LicenseForRuntime, device: string, report: DeviceReport, now: Date): Promise<void> {
    let claim;
    try {
      claim = await store.claimDevice(license.id, device, report, now);
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      // The same new device was activated by a concurrent request first: it is known now.
      claim = await store.claimDevice(license.id, device, report, now);
    }
    if (claim.known || claim.added) return;
    // A concurrent activation of this same device may have taken the last slot: then it is known.
    if (await store.touchDevice(license.id, device, report, now)) return;
    assertUsable(await store.findById(license.id, now));
    throw deviceLimitExceeded(license.device_limit);
  }

  /**
   * Trials also spend a computer's trial allowance, so they run in a transaction serialised per
   * computer and app: a known device re-activates; a new one needs a trial left, then a slot.
   */
  function activateTrial(license: LicenseForRuntime, device: string, report: DeviceReport, now: Date): Promise<LicenseRead> {
    return store.transaction(async (trx) => {
      await store.lockTrialSlot(trx, license.app_id, device);
      if (await store.touchDevice(license.id, device, report, now, trx)) return license;
      const used = await store.countOtherTrials(trx, license.app_id, device, license.id);
      assertThat(used < license.trials_per_computer, 'TRIAL_ALREADY_USED', 'This computer has already used its free trial of this app');
      const claim = await store.claimDevice(license.id, device, report, now, trx);
      if (!claim.added) throw deviceLimitExceeded(license.device_limit);
      await store.recordTrialStart(trx, license.app_id, device, license.id, now);
      return isUnstartedTrial(license)
        ? store.startTrialClock(trx, license.id, new Date(now.getTime() + NO_COMMITMENT_TRIAL_DAYS * DAY_MS), now)
        : license;
    });
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
      const velocityWindow = rateLimiter.windowOf(ACTIVATION_VELOCITY);
      const found = await store.findByKeyCountingActivation(license_key, now, {
        bucketPrefix: 'activation:',
        windowStart: velocityWindow.start,
      });
      assertUsable(found);
      if (build_id !== null) {
        assertThat(await buildExists(found.app_id, build_id), 'BUILD_NOT_FOUND', 'No such build of this app');
      }
      const velocity = velocityWindow.decide(found.velocity_hits ?? 1);
      if (!velocity.allowed) {
        throw rateLimited(velocity.resetSeconds, `Too many activations of this license; retry in ${velocity.resetSeconds} seconds`);
      }
      let license: LicenseRead = found;
      if (found.license_type === 'trial') license = await activateTrial(found, device, report, now);
      else await claimOrRefuse(found, device, report, now);
      return issueRuntimeToken(keyring, license, found.offline_grace_hours, device, now);
    },

    /**
     * A new token for a device already activated. Fails like activation once the license is revoked
     * or expired, and with DEVICE_NOT_ACTIVATED once the device was reset.
     */
    async refresh(input: RefreshInput): Promise<ActivationResult> {
      const now = clock.now();
      const { credential, report } = input;
      let by: { id: string } | { key: string };
      let device: string;
      if (credential.kind === 'token') {
        const presented = readRuntimeToken(keyring, credential.token);
        by = { id: presented.licenseId };
        device = presented.device;
      } else {
        by = { key: credential.license_key };
        device = credential.device_fingerprint;
      }
      const license = await store.findTouchingDevice(by, device, report, now);
      assertUsable(license);
      assertThat(
        license.device_known,
        'DEVICE_NOT_ACTIVATED',
        'This device is not activated on the license (its devices may have been reset); activate it again',
      );
      return issueRuntimeToken(keyring, license, license.offline_grace_hours, device, now);
    },
  };
}

export type ActivationsService = ReturnType<typeof createActivationsService>;
