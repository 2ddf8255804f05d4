import { deviceMatches, MACHINE_ID, type ComponentHashes, type MatchRule } from '@latchkey/runtime-sdk/protocol';
import type { Clock } from '../clock.js';
import { isUniqueViolation, type Db } from '../db/knex.js';
import { RequestError, assertThat } from '../errors.js';
import { enforceLicenseLimit, type LicenseLimits, type RateLimitReport } from '../http/license-limits.js';
import { rateLimited } from '../http/rate-window.js';
import { DEACTIVATION_WINDOW_MS, appDeactivationsSince, recordDeactivations } from '../licenses/deactivation-history.js';
import { NO_COMMITMENT_TRIAL_DAYS, assertUsable, isUnstartedTrial } from '../licenses/rules.js';
import type { Keyring } from '../signing/keyring.js';
import type { ContentKeyRelease } from './content-key-release.js';
import { issueRuntimeToken, readRuntimeToken } from './runtime-token.js';
import type { ActivateInput, ActivationResult, CheckinInput, DeactivateInput, DeactivationResult, DeviceReport, RefreshInput, TamperReportInput } from './schemas.js';
import type { ActivationsStore, LicenseForRuntime, RuntimeLicense, SeatCheckout } from './store.js';

const DAY_MS = 86_400_000;
/** A device's tamper reports count once per hour: a modified copy started again and again is one incident, not many. */
const TAMPER_REPORT_WINDOW_MS = 3_600_000;

/** A device record to take a changed device's new fingerprint `to` (renameDevice), with the components read now. */
interface PendingRename {
  licenseId: string;
  from: string;
  to: string;
  components: ComponentHashes;
}

const NOT_ACTIVATED = 'This device is not activated on the license (its devices may have been reset); activate it again';

/** A floating license's seats all leased to other running devices. */
const noSeatAvailable = (seats: number, earliestExpiry: Date) =>
  new RequestError(
    'NO_SEAT_AVAILABLE',
    `All ${seats} seat(s) of this floating license are in use by running devices; the first frees at earliest_expiry unless its app renews it`,
    { earliest_expiry: earliestExpiry.toISOString() },
  );

const deviceLimitExceeded = (limit: number) =>
  new RequestError('DEVICE_LIMIT_EXCEEDED', `The license is already active on ${limit} device(s), its limit; deactivate one or reset devices`);

export function createActivationsService(deps: {
  store: ActivationsStore;
  clock: Clock;
  keyring: Keyring;
  limits: LicenseLimits;
  releaseContentKey: ContentKeyRelease;
  /** How many components besides the machine id a changed device must still share (config LATCHKEY_FINGERPRINT_MATCH_OTHERS). */
  matchRule: MatchRule;
}) {
  const { store, clock, keyring, limits, releaseContentKey, matchRule } = deps;

  /**
   * A device not on record by its fingerprint that matches one on record by its components (docs/protocol.md,
   * Fingerprint) takes that device's row once its request passed: it keeps its seat instead of taking
   * another. Renaming a row never adds one, so the slot count and its limit are untouched. This finds
   * the record; nothing is renamed yet.
   */
  async function changedDeviceRecord(by: { id: string } | { key: string }, device: string, components: ComponentHashes | undefined): Promise<PendingRename | undefined> {
    if (!components) return undefined;
    const candidates = await store.devicesToMatch(by, device);
    const same = candidates.find((recorded) => deviceMatches(recorded.component_hashes, components, matchRule));
    return same && { licenseId: same.license_id, from: same.fingerprint_hash, to: device, components };
  }

  /**
   * The device a token refresh is for: the token's own while it is on record. Otherwise another
   * installation of the same machine may have renamed the record (changedDeviceRecord): when the
   * runtime sent the device as read now, the record renamed from the token's device that matches the
   * reading by the same rule becomes the device, and the token is re-issued for it. When the reading's
   * fingerprint differs from the record's, the record is renamed to it, but only once the refresh
   * passed (`rename`): and only if no other record holds that fingerprint, since the reading's
   * fingerprint may be another device's of the license. Another machine, or a token of a device
   * since removed, stays refused.
   */
  async function tokenRefreshDevice(
    licenseId: string,
    named: string,
    readNow: { device: string; components: ComponentHashes } | undefined,
  ): Promise<{ device: string; rename?: PendingRename }> {
    if (!readNow) return { device: named };
    const record = await store.recordNamedBy(licenseId, named);
    if (!record || record.fingerprint_hash === named) return { device: named };
    if (!record.component_hashes || !deviceMatches(record.component_hashes, readNow.components, matchRule)) return { device: named };
    if (record.fingerprint_hash === readNow.device) return { device: readNow.device };
    if ((await store.recordNamedBy(licenseId, readNow.device))?.fingerprint_hash === readNow.device) return { device: named };
    return { device: record.fingerprint_hash, rename: { licenseId, from: record.fingerprint_hash, to: readNow.device, components: readNow.components } };
  }

  /**
   * Runs a statement that inserts a new device once more if a concurrent request inserted the same
   * device first: the losing statement was undone whole (velocity count and slot included), and
   * run again it finds the device known.
   */
  async function againIfRaced<T>(statement: () => Promise<T>): Promise<T> {
    try {
      return await statement();
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      return statement();
    }
  }

  /**
   * A usable non-trial license the activation statement did not activate the device on: the
   * license filled up or was revoked meanwhile, a concurrent activation of this same device took the
   * last slot (then it is known now), or the record a changed device was activated as went before
   * its rename (then its slot is free again). Claims again; re-reads say why when that fails too.
   */
  async function claimOrRefuse(license: LicenseForRuntime, device: string, report: DeviceReport, now: Date): Promise<void> {
    const claim = await againIfRaced(() => store.claimDevice(license.id, device, report, now));
    if (claim.known || claim.added) return;
    await refuseClaim(license, now);
  }

  /**
   * Why a slot claim found none: the license was revoked (401) or expired (403) since the request
   * began, as a re-read says, else every slot is taken (403 DEVICE_LIMIT_EXCEEDED). In a
   * transaction, `q` is it: the re-read takes no second connection.
   */
  async function refuseClaim(license: LicenseForRuntime, now: Date, q?: Db): Promise<never> {
    assertUsable(await store.findById(license.id, now, q));
    throw deviceLimitExceeded(license.device_limit);
  }

  /**
   * The device's seat of a floating license (renewed if it holds one): the end of its lease, which its
   * token's life is. A renamed device's record is renamed with the checkout, keeping the seat its old
   * fingerprint held (SeatCheckout); a refresh's device must still be on record.
   */
  async function takeSeat(license: RuntimeLicense, device: string, now: Date, how: SeatCheckout): Promise<Date> {
    const lease = await store.checkoutLease(license.id, device, now, how);
    if ('earliestExpiry' in lease) throw noSeatAvailable(license.device_limit, lease.earliestExpiry);
    if ('notOnRecord' in lease) throw new RequestError('DEVICE_NOT_ACTIVATED', NOT_ACTIVATED);
    return lease.expiresAt;
  }

  /**
   * Trials also spend a computer's trial allowance, so they run in a transaction serialised per
   * computer and app: a known device re-activates; a new one needs a trial left, then a slot.
   */
  function activateTrial(license: LicenseForRuntime, device: string, components: ComponentHashes | undefined, report: DeviceReport, now: Date): Promise<RuntimeLicense> {
    const machineId = components?.[MACHINE_ID] ?? null;
    return store.transaction(async (trx) => {
      // The fingerprint's lock and the machine id's, in one order: a request with components and one
      // without, of one fingerprint, or two fingerprints of one machine, wait for each other.
      for (const computer of [device, machineId].filter((key): key is string => key !== null).sort()) await store.lockTrialSlot(trx, license.app_id, computer);
      if (await store.touchDevice(license.id, device, report, now, trx)) return license;
      // This computer's trials: under its fingerprint, or under another its components match (a
      // fingerprint that changed). A start recorded with fewer components than the rule asks for
      // matches by fingerprint only: a machine id alone, which anyone can send, must not spend another computer's trial.
      const starts = await store.trialStartsOf(trx, license.app_id, device, machineId, license.id);
      const mine = starts.filter(
        (s) =>
          s.fingerprint_hash === device ||
          (components && s.component_hashes && Object.keys(s.component_hashes).length > matchRule.others && deviceMatches(s.component_hashes, components, matchRule)),
      );
      const used = new Set(mine.map((s) => s.license_id)).size;
      assertThat(used < license.trials_per_computer, 'TRIAL_ALREADY_USED', 'This computer has already used its free trial of this app');
      const claim = await store.claimDevice(license.id, device, report, now, trx);
      if (!claim.added) await refuseClaim(license, now, trx);
      await store.recordTrialStart(trx, license.app_id, device, components, license.id, now);
      return isUnstartedTrial(license) ? store.startTrialClock(trx, license.id, new Date(now.getTime() + NO_COMMITMENT_TRIAL_DAYS * DAY_MS), now) : license;
    });
  }

  return {
    /**
     * Rules in docs/contract.md's order, the first failure wins: unknown or revoked key (401), expired (403),
     * unknown build (404), velocity (429); then a known device re-activates without taking a slot,
     * and a new one needs a free trial (403) and a free slot (403). A non-trial activation is one
     * statement. `report` gets the license's velocity count, for the RateLimit headers. `now` is the
     * token's issue time (an offline activation dates its license file with the same moment).
     */
    async activate(input: ActivateInput, report: RateLimitReport, now = clock.now()): Promise<ActivationResult> {
      const { device_fingerprint: device, fingerprint_components: components, license_key: licenseKey, build_id: buildId, device_key: deviceKey, ...deviceReport } = input;
      // A changed device is activated as the record it matches (touched, no slot taken), and renamed
      // only once the request passed: a refused one (revoked, unknown build, 429) changes no record.
      const rename = await changedDeviceRecord({ key: licenseKey }, device, components);
      const velocity = limits.window('activation');
      const activation = { licenseKey, buildId, device: rename?.from ?? device, report: deviceReport };
      const found = await againIfRaced(() => store.activate(activation, velocity, now));
      assertUsable(found);
      // Reported only for a usable license: a revoked key must read like one that never existed.
      const decision = velocity.decideFor(found.velocity_hits, found.device_limit);
      report(decision);
      assertThat(found.build_known, 'BUILD_NOT_FOUND', 'No such build of this app');
      if (!decision.allowed) {
        throw rateLimited(decision.resetSeconds, `Too many activations of this license; retry in ${decision.resetSeconds} seconds`);
      }
      // False when the record went or a concurrent activation recorded the new fingerprint meanwhile:
      // then the new fingerprint is a device of its own, known or new, as the rules below find it.
      let license: RuntimeLicense = found;
      let leaseEnd: Date | null = null;
      if (found.seat_model === 'floating') {
        // Renamed with the checkout, its lease with it; a refused checkout renames nothing.
        leaseEnd = await takeSeat(found, device, now, { rename, onRecord: false });
        await store.recordFloatingDevice(found.id, device, deviceReport, now);
      } else {
        const renamed = rename !== undefined && (await store.renameDevice(rename.licenseId, rename.from, device, rename.components));
        if (found.license_type === 'trial') license = await activateTrial(found, device, components, deviceReport, now);
        else if (rename ? !renamed : !found.device_known && !found.device_added) await claimOrRefuse(found, device, deviceReport, now);
      }
      const contentKey = await releaseContentKey({ licenseId: license.id, appId: license.app_id, device, buildId, presentedKey: deviceKey, mayReplaceKey: true });
      if (components) await store.recordComponents(license.id, device, components);
      return issueRuntimeToken(keyring, license, found.offline_grace_hours, device, now, contentKey, leaseEnd);
    },

    /**
     * A new token for a device already activated. Fails like activation once the license is revoked
     * or expired, and with DEVICE_NOT_ACTIVATED once the device was reset; 429 past the license's
     * refresh limit. One statement; `report` gets the license's refresh count.
     */
    async refresh(input: RefreshInput, report: RateLimitReport): Promise<ActivationResult> {
      const now = clock.now();
      const { credential, report: deviceReport, content } = input;
      let by: { id: string } | { key: string };
      // The record refreshed (by its fingerprint on record) and, for a changed device, its new fingerprint.
      let device: string;
      let rename: PendingRename | undefined;
      if (credential.kind === 'token') {
        const presented = readRuntimeToken(keyring, credential.token);
        by = { id: presented.licenseId };
        ({ device, rename } = await tokenRefreshDevice(presented.licenseId, presented.device, credential.readNow));
      } else {
        by = { key: credential.license_key };
        rename = await changedDeviceRecord(by, credential.device_fingerprint, credential.fingerprint_components);
        device = rename?.from ?? credential.device_fingerprint;
      }
      const refreshes = limits.window('refresh');
      const license = await store.refresh(by, device, deviceReport, refreshes, now);
      assertUsable(license);
      enforceLicenseLimit(refreshes.decideFor(license.refresh_hits, license.device_limit), report, 'token refreshes');
      assertThat(license.device_known, 'DEVICE_NOT_ACTIVATED', NOT_ACTIVATED);
      // A floating license's refresh is its heartbeat: the statement renewed a live lease of the
      // fingerprint on record; a lapsed one is checked out again, the device still on record. A
      // renamed device is renamed with its checkout, its lease going with it.
      const floating = license.seat_model === 'floating';
      let leaseEnd = floating && !rename ? license.lease_expires_at : null;
      // Renamed only now, so that a refused refresh (revoked, rate limited, no seat) changes no record.
      // Not renamed when the record went or its new fingerprint got a row meanwhile (a concurrent activation).
      if (rename) {
        if (floating) leaseEnd = await takeSeat(license, rename.to, now, { rename, onRecord: true });
        else assertThat(await store.renameDevice(rename.licenseId, rename.from, rename.to, rename.components), 'DEVICE_NOT_ACTIVATED', NOT_ACTIVATED);
        device = rename.to;
      }
      if (floating) leaseEnd ??= await takeSeat(license, device, now, { onRecord: true });
      const contentKey = await releaseContentKey({
        licenseId: license.id,
        appId: license.app_id,
        device,
        buildId: content.buildId,
        presentedKey: content.deviceKey,
        mayReplaceKey: credential.kind === 'license_key',
      });
      const components = credential.kind === 'license_key' ? credential.fingerprint_components : credential.readNow?.device === device ? credential.readNow.components : undefined;
      if (components) await store.recordComponents(license.id, device, components);
      return issueRuntimeToken(keyring, license, license.offline_grace_hours, device, now, contentKey, leaseEnd);
    },

    /** Frees the seat of a floating license the presented token's device holds; idempotent, and nothing for a node-locked license. */
    async checkin(input: CheckinInput): Promise<void> {
      const { licenseId, device } = readRuntimeToken(keyring, input.token);
      await store.checkinLease(licenseId, device);
    },

    /**
     * Frees the seat of the device the presented token names (a genuine token, expired or not; the
     * record renamed from its fingerprint when that is no longer on record), in
     * a transaction holding the license's row lock: concurrent twins are serialised, and the second
     * finds the device gone (`deactivated: false`, not counted). A device still activated past the
     * app's quota (app_deactivations_per_30_days in any 30 days) is refused 429, nothing changed.
     * The license's status does not matter: freeing a seat is harmless on any license.
     */
    async deactivate(input: DeactivateInput): Promise<DeactivationResult> {
      const { licenseId, device: named } = readRuntimeToken(keyring, input.token);
      // A token of a fingerprint another installation of the machine renamed deactivates that machine's record.
      const device = (await store.recordNamedBy(licenseId, named))?.fingerprint_hash ?? named;
      return store.transaction(async (trx) => {
        const license = await store.lockForDeactivation(trx, licenseId);
        assertThat(license, 'INVALID_LICENSE_KEY', 'The license of this runtime token no longer exists');
        const now = clock.now();
        const quota = license.app_deactivations_per_30_days;
        const counted = await appDeactivationsSince(trx, licenseId, new Date(now.getTime() - DEACTIVATION_WINDOW_MS));
        const answer = (deactivated: boolean, used: Date[]): DeactivationResult => {
          const remaining = Math.max(0, quota - used.length);
          // The window has room again once the oldest `used.length - quota + 1` have left it.
          const next = remaining > 0 ? now : new Date(used[used.length - quota]!.getTime() + DEACTIVATION_WINDOW_MS);
          return { license_id: licenseId, deactivated, deactivations_remaining: remaining, next_deactivation_available_at: next.toISOString() };
        };
        const before = answer(false, counted);
        if (!(await store.removeDevice(trx, licenseId, device))) return before;
        if (before.deactivations_remaining === 0) {
          // Thrown inside the transaction: the removal is rolled back, nothing changed.
          const wait = Math.max(1, Math.ceil((new Date(before.next_deactivation_available_at).getTime() - now.getTime()) / 1000));
          throw rateLimited(
            wait,
            `This license deactivated ${quota} device(s) from the app in the last 30 days, its app's quota; retry in ${wait} seconds`,
            'DEACTIVATION_QUOTA_EXCEEDED',
          );
        }
        await recordDeactivations(trx, licenseId, [device], 'app', now);
        return answer(true, [...counted, now]);
      });
    },

    /**
     * Counts a modified copy's start on the license the presented token names, when that device is
     * activated on it and the build is one of its app's; anything else is ignored (answered the same,
     * so the route tells nothing).
     */
    async reportTamper(input: TamperReportInput): Promise<void> {
      const { licenseId, device } = readRuntimeToken(keyring, input.token);
      const now = clock.now();
      const windowStart = new Date(now.getTime() - (now.getTime() % TAMPER_REPORT_WINDOW_MS));
      await store.recordTamperReport({ licenseId, fingerprintHash: device, buildId: input.build_id, now, windowStart });
    },
  };
}

export type ActivationsService = ReturnType<typeof createActivationsService>;
