/**
 * The SDK's entry point: `createLicenseClient(options)`, then `activate(key)` once and `check()` on
 * every start. `check()` never touches the network; the authority is reached by `activate`,
 * `refresh` and the background refresh, whose outcomes arrive as `change` events.
 */
import path from 'node:path';
import { createAuthorityClient, type AuthorityClient, type DeviceIdentity, type GrantContext } from './authority/authority-client.js';
import { normalizeLicenseKey } from './authority/license-key.js';
import { unwrapContentKey } from './engine/content-key.js';
import { LicenseError, type LicenseErrorCode } from './errors.js';
import { holdingProcess } from './network/process-hold.js';
import { TypedEvents, type LicenseEventName, type LicenseEvents } from './events.js';
import { MAX_CLOCK_SKEW_MS } from './grace/anchor.js';
import { checkConsumption, Metering, type ConsumeOptions, type ConsumeResult, type MeteringGrant } from './meters/metering.js';
import type { Fingerprint } from './fingerprint/index.js';
import { evaluateGrace, type GraceOutcome } from './grace/evaluate.js';
import { resolveOptions, type LicenseClientOptions, type ResolvedOptions } from './options.js';
import { platformLabel } from './platform.js';
import {
  ACTIVATION_REQUEST_FORMAT,
  ProtocolError,
  verifyLicenseFile,
  verifyRuntimeToken,
  type ActivationRequestFile,
  type LicenseFileClaims,
  type RuntimePolicy,
  type RuntimeTokenClaims,
  type TamperKind,
} from './protocol.js';
import { heartbeatIntervalMs, RefreshScheduler, type RefreshOutcome } from './refresh/scheduler.js';
import { isUsable, type LicenseStatus } from './status.js';
import { LicenseVault, probeFingerprint, type Verdict } from './token-store/license-vault.js';
import { loadSodiumMemory, maskedMemory } from './token-store/secret-memory.js';
import { createUpdateChannel, type UpdateChannel } from './updates/channel.js';

const SDK_VERSION = '0.1.0';

/** Authority answers that settle the license's fate until the authority says otherwise. */
const VERDICTS: Partial<Record<LicenseErrorCode, Verdict>> = {
  INVALID_LICENSE_KEY: { state: 'revoked', reason: 'revoked_by_vendor' },
  DEVICE_DEACTIVATED: { state: 'unlicensed', reason: 'device_deactivated' },
  LICENSE_EXPIRED: { state: 'expired', reason: 'license_expired' },
  TRIAL_ALREADY_USED: { state: 'expired', reason: 'trial_used' },
  NO_SEAT_AVAILABLE: { state: 'unlicensed', reason: 'no_seat_available' },
};

/** What `deactivate()` resolves with. */
export interface DeactivationResult {
  /** false: the authority no longer had this device activated (already deactivated, or reset); nothing was counted. */
  deactivated: boolean;
  /** Deactivations from the app the license has left in the current 30 days. */
  deactivationsRemaining: number;
  /** Now when one is left, else when the oldest counted one leaves the 30 days. */
  nextDeactivationAvailableAt: Date;
  /** The status after: unlicensed, reason `deactivated`. */
  status: LicenseStatus;
}

/** How long closing waits at most for a floating license's check-in: after it, the seat frees when its lease expires. */
const CHECKIN_TIMEOUT_MS = 2_000;

export async function createLicenseClient(options: LicenseClientOptions): Promise<LicenseClient> {
  const resolved = resolveOptions(options);
  const vault = await LicenseVault.open(resolved, maskedMemory);
  const platform = platformLabel(resolved.platform);
  const authority = createAuthorityClient({
    serverUrl: resolved.serverUrl,
    report: {
      app_version: resolved.appVersion,
      ...(platform ? { platform } : {}),
      ...(resolved.engineVersion ? { engine_version: resolved.engineVersion } : {}),
    },
    userAgent: `latchkey-runtime-sdk/${SDK_VERSION} ${resolved.appId}/${resolved.appVersion}`,
    requestTimeoutMs: resolved.requestTimeoutMs,
    retryLimit: resolved.retryLimit,
    retryBaseDelayMs: resolved.retryBaseDelayMs,
    env: resolved.platform.process.env,
  });
  const client = new LicenseClient(resolved, vault, authority);
  await client.start();
  return client;
}

export class LicenseClient {
  private readonly events: TypedEvents;
  private readonly scheduler: RefreshScheduler;
  private lastStatus: LicenseStatus;
  private queue: Promise<unknown> = Promise.resolve();
  private recheck: NodeJS.Timeout | undefined;
  private sodiumUpgrade: NodeJS.Immediate | undefined;
  private disposed = false;
  private readonly metering: Metering;

  /** Use `createLicenseClient`. */
  constructor(
    private readonly options: ResolvedOptions,
    private readonly vault: LicenseVault,
    private readonly authority: AuthorityClient,
  ) {
    this.events = new TypedEvents((err) => options.logger.warn('a license event listener threw', { error: String(err) }));
    this.scheduler = new RefreshScheduler({ intervalMs: options.refreshIntervalMs, backoffBaseMs: options.offlineBackoffMs, jitterRatio: 0.1 }, () => this.backgroundRefresh());
    this.scheduler.useHeartbeat(this.heartbeatMs(vault.claims?.policy));
    this.lastStatus = this.computeStatus();
    this.metering = new Metering(vault, authority, options, () => options.clock.now().getTime() + (vault.record?.serverSkewMs ?? 0));
  }

  /** The license state now, from memory and the clock only: instant, and the same offline. */
  async check(): Promise<LicenseStatus> {
    this.assertOpen();
    const status = this.evaluate();
    // A clock rollback just seen must be on disk before the app can exit and reset the clock.
    if (status.reason === 'clock_rollback') await this.vault.flush();
    return status;
  }

  /** Activates this device with a license key (as typed by the user) and saves the grant for offline starts. */
  async activate(licenseKey: string): Promise<LicenseStatus> {
    this.assertOpen();
    const key = normalizeLicenseKey(licenseKey);
    return holdingProcess(() =>
      this.exclusive(async () => {
        const device = await this.verifiedFingerprint();
        const grant = await this.authority.activate({ license_key: key, ...this.deviceIdentity(device), ...this.grantContext() });
        await this.acceptGrant(grant.token, device, { licenseKey: key });
        this.scheduler.reset('ok');
        return this.evaluate();
      }),
    );
  }

  /**
   * Asks the authority now. Resolves with the new status when it answered (including revoked or
   * expired); rejects with a `LicenseError` when it could not be reached or its answer did not verify.
   */
  async refresh(): Promise<LicenseStatus> {
    this.assertOpen();
    try {
      const status = await holdingProcess(() => this.exclusive(() => this.refreshOnce()));
      this.scheduler.reset('ok');
      return status;
    } catch (err) {
      this.scheduler.reset(err instanceof LicenseError && err.retryable ? 'retry' : 'ok');
      throw err;
    }
  }

  /**
   * Counts `quantity` units of a metered feature (docs/protocol.md, Metered features) and resolves
   * with the balance left in its period. Without the authority, a consumption the last known balance
   * covers is queued (`queued: true`) in a sealed file beside the cache and reported, with its
   * idempotency key, before the next consumption and after each refresh: the authority counts it
   * once, even when a report's answer is lost. Rejects with USAGE_LIMIT_REACHED past the balance
   * (`remaining`, `periodEndsAt`), FEATURE_NOT_METERED, NOT_ACTIVATED, DEVICE_DEACTIVATED (the queue is
   * kept until the device is activated again), or `OFFLINE` when offline with no balance known for the
   * feature in its current period. A queued consumption counts in the period it is reported in.
   */
  async consume(feature: string, quantity = 1, options: ConsumeOptions = {}): Promise<ConsumeResult> {
    this.assertOpen();
    checkConsumption(feature, quantity, options);
    return holdingProcess(() =>
      this.exclusive(async () => {
        const held = this.heldGrant();
        if (!held) throw new LicenseError('NOT_ACTIVATED');
        return this.metering.consume({ ...held, usable: this.evaluate().usable }, feature, quantity, options);
      }),
    );
  }

  /**
   * Deactivation from the app: frees this device's seat on the license (the authority counts it
   * against the license's deactivations in 30 days), then wipes the cache file and the secrets in
   * memory; the status becomes unlicensed (`deactivated`). Idempotent on the authority: a device
   * already deactivated (or reset) answers `deactivated: false` and is wiped all the same. Rejects
   * with a `LicenseError` and keeps everything when the authority was not reached (`OFFLINE`, ...)
   * or refused (`DEACTIVATION_LIMIT_REACHED`, with `retryAfterSeconds`); `NOT_ACTIVATED` without a token.
   */
  async deactivate(): Promise<DeactivationResult> {
    this.assertOpen();
    return holdingProcess(() =>
      this.exclusive(async () => {
        const token = this.vault.readToken((t) => t);
        if (token === undefined) throw new LicenseError('NOT_ACTIVATED', 'there is no activation to deactivate');
        await this.reportQueuedUsage();
        const answer = await this.authority.deactivate({ token });
        // The seat is freed from here on: the cache must not outlive it, even on a client disposed meanwhile.
        if (this.disposed) {
          await this.vault.removeCacheFile();
          throw new LicenseError('DISPOSED');
        }
        await this.vault.forget({ state: 'unlicensed', reason: 'deactivated' });
        this.scheduler.reset('stop');
        return {
          deactivated: answer.deactivated,
          deactivationsRemaining: answer.deactivations_remaining,
          nextDeactivationAvailableAt: new Date(answer.next_deactivation_available_at),
          status: this.evaluate(),
        };
      }),
    );
  }

  /**
   * Offline activation, step 1, for a machine that never reaches the authority: the text of an
   * activation request file for this device and `licenseKey` (docs/protocol.md, "Offline activation").
   * The app saves it for the user to carry to the vendor's offline activation page. No network; it
   * holds the license key, so it is a secret like the key.
   */
  async exportActivationRequest(licenseKey: string): Promise<string> {
    this.assertOpen();
    const key = normalizeLicenseKey(licenseKey);
    return this.exclusive(async () => {
      const device = await this.verifiedFingerprint();
      await this.vault.restoreRequestDeviceKey();
      await this.vault.keepRequestDeviceKey();
      const request: ActivationRequestFile = {
        format: ACTIVATION_REQUEST_FORMAT,
        app_id: this.options.appId,
        license_key: key,
        ...this.deviceIdentity(device),
        ...this.grantContext(),
        created_at: this.options.clock.now().toISOString(),
      };
      return `${JSON.stringify(request, null, 2)}\n`;
    });
  }

  /**
   * Offline activation, step 2: imports the license file the authority answered to this device's
   * request, and stores its grant like an online activation; no network. Grace runs from the file's
   * issue for the policy's `offline_grace_hours`; importing a fresh file extends it. Rejects with
   * `INVALID_LICENSE_FILE` (not signed by the authority, altered, another app), `LICENSE_FILE_WRONG_DEVICE`
   * (another computer's or installation's request) or `LICENSE_FILE_EXPIRED`; nothing is changed then.
   */
  async importLicenseFile(licenseFile: string): Promise<LicenseStatus> {
    this.assertOpen();
    return this.exclusive(async () => {
      const device = await this.verifiedFingerprint();
      await this.vault.restoreRequestDeviceKey();
      const now = this.options.clock.now().getTime();
      const expect = { appId: this.options.appId, device, deviceKey: this.vault.devicePublicKey, nowSeconds: Math.floor(now / 1000) };
      let file: LicenseFileClaims;
      let claims: RuntimeTokenClaims;
      try {
        if (typeof licenseFile !== 'string') throw new ProtocolError('malformed', 'a license file is text');
        file = verifyLicenseFile(licenseFile, this.options.publicKeys, expect);
        claims = verifyRuntimeToken(file.token, this.options.publicKeys, { appId: expect.appId, device });
      } catch (err) {
        if (!(err instanceof ProtocolError)) throw err;
        const code = err.failure === 'wrong_device' ? 'LICENSE_FILE_WRONG_DEVICE' : err.failure === 'expired' ? 'LICENSE_FILE_EXPIRED' : 'INVALID_LICENSE_FILE';
        throw new LicenseError(code, `the license file does not verify: ${err.message}`, { cause: err });
      }
      if (claims.iat * 1000 - now > MAX_CLOCK_SKEW_MS) throw new LicenseError('CLOCK_INCORRECT', 'the license file was issued over a day after this computer’s time');
      if (this.disposed) throw new LicenseError('DISPOSED');
      await this.vault.storeGrant({ token: file.token, claims, now, licenseKey: file.license_key, imported: true });
      await this.vault.dropRequestDeviceKey();
      this.scheduler.reset('ok');
      return this.evaluate();
    });
  }

  /** Subscribes to an event; returns the unsubscribe function. */
  on<E extends LicenseEventName>(event: E, listener: LicenseEvents[E]): () => void {
    return this.events.on(event, listener);
  }

  /** Stops the background work, checks a floating license's seat in, finishes pending cache writes and zeroes the secrets. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.scheduler.stop();
    // A request in flight must not hold the exit (nor write into the vault being closed).
    this.authority.close();
    await this.checkinSeat();
    // The moment of exit counts like a check: it raises the high-water mark (saved when a minute or
    // more ahead of the saved one), so the clock cannot be set back by the hours an app ran unchecked.
    this.computeStatus();
    clearTimeout(this.recheck);
    clearImmediate(this.sodiumUpgrade);
    this.events.clear();
    await this.vault.flush();
    this.vault.dispose();
  }

  /** @internal for `createUpdater`: the update calls, made with the license key without handing it out. */
  updateChannel(): UpdateChannel {
    return createUpdateChannel(this.options, path.dirname(this.options.cacheFile), this.vault, this.authority);
  }

  /**
   * @internal for the engine of a protected build: the content key of `buildId`, unwrapped with this
   * installation's device key from the held token, or null when the token carries none for it (a
   * build installed since the last refresh, or a license the authority no longer grants).
   */
  contentKey(buildId: string): Buffer | null {
    const wrapped = this.vault.claims?.content_key;
    if (!wrapped || !this.lastStatus.usable) return null;
    const context = { buildId, licenseId: this.vault.claims!.sub, device: this.vault.claims!.device };
    return this.vault.readDeviceKey((pair) => unwrapContentKey(wrapped, pair, context));
  }

  /** @internal for the engine: tells the authority a modified copy of `buildId` tried to start here. */
  async reportTamper(buildId: string, kind: TamperKind): Promise<void> {
    const token = this.vault.hasToken ? this.vault.readToken((t) => t) : undefined;
    if (token !== undefined) await holdingProcess(() => this.authority.reportTamper({ token, build_id: buildId, kind }));
  }

  /**
   * Gives a floating license's seat back for another computer, best effort and briefly: a check-in
   * that fails leaves the seat to expire with its lease, as a crashed app's does.
   */
  private async checkinSeat(): Promise<void> {
    const token = this.heartbeatMs(this.vault.claims?.policy) === null ? undefined : this.vault.readToken((t) => t);
    if (token === undefined) return;
    await holdingProcess(() => this.authority.checkin({ token }, CHECKIN_TIMEOUT_MS)).catch((err: unknown) =>
      this.options.logger.debug?.('seat check-in failed; the lease expires by itself', { error: String(err) }),
    );
  }

  /** @internal called once by `createLicenseClient`; with a blocking revalidation, resolves once it is answered or its budget is spent. */
  async start(): Promise<void> {
    const { startupDelayMs, refreshOnStart, refreshIntervalMs, memoryProtection, revalidate } = this.options;
    // Right after the first answer, not before it: see secret-memory.ts.
    if (memoryProtection === 'auto') {
      this.sodiumUpgrade = setImmediate(() => {
        // Nothing here may reach the app as an unhandled rejection: a failed upgrade keeps masked memory.
        void loadSodiumMemory(this.options.loadSodium)
          .then((sodium) => {
            if (!sodium.module) this.options.logger.warn('secrets stay in masked memory', { reason: sodium.reason });
            else if (!this.disposed) this.vault.rehome(sodium.module);
          })
          .catch((err: unknown) => this.options.logger.warn('secrets stay in masked memory', { reason: `secure memory failed: ${String(err)}` }));
      });
    }
    // A warm start used the remembered fingerprint: confirm it against the hardware, off the start path.
    if (!this.vault.fingerprintVerified) {
      this.recheck = setTimeout(() => {
        this.exclusive(() => this.verifiedFingerprint()).catch((err: unknown) => this.options.logger.warn('fingerprint check failed', { error: String(err) }));
      }, startupDelayMs).unref();
    }
    if (!this.vault.hasToken && !this.vault.hasLicenseKey) return;
    // A floating license checks its seat out at every start: its token lived only as long as the last lease.
    // A clock rollback is asked about too: only the authority's answer ends it (a clock corrected after running ahead).
    const checkOut = refreshOnStart || this.heartbeatMs(this.vault.claims?.policy) !== null || this.lastStatus.reason === 'clock_rollback';
    if (revalidate === 'background') this.scheduler.schedule(checkOut ? startupDelayMs : refreshIntervalMs);
    else await this.revalidateWithin(revalidate.blockingMs);
  }

  /**
   * The start-up refresh, waited for up to `budgetMs`. Only the budget's timer holds the process:
   * past it the request goes on without holding it, and its answer arrives as a `change` event.
   */
  private async revalidateWithin(budgetMs: number): Promise<void> {
    const answered = this.backgroundRefresh().then((outcome) => this.scheduler.reset(outcome));
    let budget: NodeJS.Timeout | undefined;
    await Promise.race([answered, new Promise<void>((resolve) => (budget = setTimeout(resolve, budgetMs)))]);
    clearTimeout(budget);
  }

  private async refreshOnce(): Promise<LicenseStatus> {
    if (!this.vault.hasToken && !this.vault.hasLicenseKey) throw new LicenseError('NOT_ACTIVATED');
    try {
      const grant = await this.requestRefresh();
      await this.acceptGrant(grant.token, grant.device, { readNow: grant.readNow });
      await this.reportQueuedUsage();
    } catch (err) {
      const verdict = err instanceof LicenseError ? VERDICTS[err.code] : undefined;
      if (!verdict || this.disposed) throw err;
      await this.vault.storeVerdict(verdict);
    }
    return this.evaluate();
  }

  /**
   * By token while one is held (the authority accepts an expired one), so the key stays off the wire;
   * by license key and probed fingerprint when there is no token or the authority no longer knows it.
   */
  private async requestRefresh(): Promise<{ token: string; device: string; readNow?: Fingerprint }> {
    const token = this.vault.hasToken ? this.vault.readToken((t) => t) : undefined;
    if (token !== undefined) {
      const device = this.vault.fingerprint.hash;
      try {
        return { token: (await this.authority.refresh({ token, ...this.grantContext() })).token, device };
      } catch (err) {
        if (err instanceof LicenseError && err.code === 'DEVICE_DEACTIVATED') return this.refreshAsReadNow(token, err);
        if (!(err instanceof LicenseError && err.code === 'TOKEN_NOT_RECOGNISED' && this.vault.hasLicenseKey)) throw err;
      }
    }
    const device = await this.verifiedFingerprint();
    const licenseKey = this.vault.readLicenseKey((k) => k);
    if (licenseKey === undefined) throw new LicenseError('NOT_ACTIVATED', 'the device changed since activation; the key must be entered again');
    return { token: (await this.authority.refresh({ license_key: licenseKey, ...this.deviceIdentity(device), ...this.grantContext() })).token, device };
  }

  /** The held token and its license, for metering; undefined without an activation. */
  private heldGrant(): Omit<MeteringGrant, 'usable'> | undefined {
    const token = this.vault.hasToken ? this.vault.readToken((t) => t) : undefined;
    const licenseId = this.vault.claims?.sub;
    return token === undefined || licenseId === undefined ? undefined : { token, licenseId };
  }

  /** Consumptions queued offline, reported while the authority answers; what is not reported stays queued for the next time. */
  private async reportQueuedUsage(): Promise<void> {
    const licenseId = this.vault.claims?.sub;
    if (licenseId === undefined || !(await this.metering.hasPending(licenseId).catch(() => false))) return;
    const grant = this.heldGrant();
    if (!grant) return;
    await this.metering.report(grant).catch((err: unknown) => this.options.logger.debug?.('queued consumptions not reported yet', { error: String(err) }));
  }

  /**
   * The token's device is no longer on record. When this machine's hardware now reads as another
   * fingerprint (a part changed, which the kept fingerprint tolerated), another installation of it
   * may have had the record renamed to that reading: the token is presented again with the reading,
   * and the authority re-issues it for that fingerprint if the record matches it by the rule.
   * Otherwise the refusal stands (the device was deactivated or reset).
   */
  private async refreshAsReadNow(token: string, refused: LicenseError): Promise<{ token: string; device: string; readNow: Fingerprint }> {
    const readNow = await probeFingerprint(this.options, this.vault.activatedComponents);
    if (!readNow.complete || readNow.hash === this.vault.fingerprint.hash || this.disposed) throw refused;
    const body = { token, device_fingerprint: readNow.hash, fingerprint_components: readNow.componentHashes, ...this.grantContext() };
    return { token: (await this.authority.refresh(body)).token, device: readNow.hash, readNow };
  }

  /** The fingerprint and the hash of each of its components, which the authority matches a changed device by. */
  private deviceIdentity(device: string): DeviceIdentity {
    const components = this.vault.fingerprint.componentHashes;
    return { device_fingerprint: device, ...(components ? { fingerprint_components: components } : {}) };
  }

  private grantContext(): GrantContext {
    return { build_id: this.options.buildId, device_key: this.vault.devicePublicKey };
  }

  /** `readNow`: the grant is for the fingerprint the hardware reads now (refreshAsReadNow), which the installation takes. */
  private async acceptGrant(token: string, device: string, { licenseKey, readNow }: { licenseKey?: string; readNow?: Fingerprint | undefined } = {}): Promise<void> {
    // The answer arrived after dispose(): the secrets are gone and nothing may be written.
    if (this.disposed) throw new LicenseError('DISPOSED');
    let claims: RuntimeTokenClaims;
    try {
      claims = verifyRuntimeToken(token, this.options.publicKeys, { appId: this.options.appId, device });
    } catch (err) {
      throw new LicenseError('INVALID_SERVER_RESPONSE', `the issued token does not verify: ${(err as Error).message}`, { cause: err });
    }
    const now = this.options.clock.now().getTime();
    if (claims.exp <= claims.iat) throw new LicenseError('INVALID_SERVER_RESPONSE', 'the issued token is already expired');
    if (Math.abs(claims.iat * 1000 - now) > MAX_CLOCK_SKEW_MS) throw new LicenseError('CLOCK_INCORRECT', 'token issue time and local clock differ by over a day');
    if (readNow) await this.vault.moveToFingerprint(readNow);
    await this.vault.storeGrant({ token, claims, now, ...(licenseKey === undefined ? {} : { licenseKey }) });
    this.scheduler.useHeartbeat(this.heartbeatMs(claims.policy));
  }

  /** Probes the hardware when the fingerprint in use is only remembered or was read incompletely. */
  private async verifiedFingerprint(): Promise<string> {
    if (!this.vault.fingerprintVerified) {
      const probed = await probeFingerprint(this.options, this.vault.activatedComponents);
      if (!this.disposed && (await this.vault.adoptFingerprint(probed)) === 'changed') this.evaluate();
    }
    return this.vault.fingerprint.hash;
  }

  private async backgroundRefresh(): Promise<RefreshOutcome> {
    const nothingToRefresh = () => this.disposed || (!this.vault.hasToken && !this.vault.hasLicenseKey);
    if (nothingToRefresh()) return 'stop';
    try {
      // Asked again in turn: a deactivation queued ahead of it may have wiped the license meanwhile.
      return await this.exclusive(async (): Promise<RefreshOutcome> => {
        if (nothingToRefresh()) return 'stop';
        await this.refreshOnce();
        return 'ok';
      });
    } catch (err) {
      if (this.disposed) return 'stop';
      if (!(err instanceof LicenseError)) {
        // Not an answer from the authority (a cache write, a bug): try again later, loudly.
        this.options.logger.warn('background license refresh failed unexpectedly', { error: String(err) });
        return 'retry';
      }
      this.options.logger.debug?.('background license refresh failed', { code: err.code, message: err.message });
      this.events.emit('refresh-failed', err);
      this.evaluate();
      return err.retryable ? 'retry' : 'ok';
    }
  }

  private evaluate(): LicenseStatus {
    const status = this.computeStatus();
    const previous = this.lastStatus;
    this.lastStatus = status;
    if (status.state !== previous.state || status.reason !== previous.reason) {
      // Only the authority's answer ends a clock rollback: online, it is asked soon, not at the next hourly refresh.
      if (status.reason === 'clock_rollback') this.scheduler.schedule(this.options.startupDelayMs);
      this.events.emit('change', status, previous);
    }
    return status;
  }

  /** Grace for the current token, or null when a verdict (or no activation) decides instead. */
  private graceNow(now: number): GraceOutcome | null {
    const { claims, record, verdict } = this.vault;
    if (verdict || !claims || !record) return null;
    return evaluateGrace({
      now,
      claims,
      ...record,
      toleranceMs: this.options.clockToleranceMs,
      // One missed refresh (or heartbeat) does not yet count as running offline.
      freshForMs: 2 * (this.heartbeatMs(claims.policy) ?? this.options.refreshIntervalMs),
    });
  }

  /** A clock rollback becomes a sticky verdict; any other evaluation advances the high-water mark. */
  private computeStatus(): LicenseStatus {
    const now = this.options.clock.now().getTime();
    const grace = this.graceNow(now);
    if (grace?.state === 'tampered') void this.vault.storeVerdict({ state: 'tampered', reason: 'clock_rollback' });
    else if (grace) this.vault.observe(now);
    const { claims, record } = this.vault;
    const { state, reason } = grace ?? this.vault.verdict ?? { state: 'unlicensed', reason: 'not_activated' };
    const usable = isUsable(state);
    return {
      state,
      reason,
      usable,
      licenseId: claims?.sub ?? null,
      licenseType: claims?.license_type ?? null,
      features: usable && claims ? claims.features : {},
      policy: claims?.policy ?? null,
      graceEndsAt: grace && grace.state !== 'tampered' ? new Date(grace.graceEndsAt) : null,
      lastOnlineAt: record ? new Date(record.lastOnlineAt) : null,
      licenseExpiresAt: claims?.license_expires_at == null ? null : new Date(claims.license_expires_at * 1000),
      memoryProtection: this.vault.memoryProtection,
    };
  }

  /** A floating license's heartbeat interval (a third of its lease TTL, never longer than `refreshIntervalMs`); null when node-locked. */
  private heartbeatMs(policy: RuntimePolicy | undefined): number | null {
    const third = heartbeatIntervalMs(policy);
    return third === null ? null : Math.min(third, this.options.refreshIntervalMs);
  }

  /** Network operations one at a time: a background refresh never races an activation. */
  private exclusive<T>(operation: () => Promise<T>): Promise<T> {
    const run = this.queue.then(operation, operation);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private assertOpen(): void {
    if (this.disposed) throw new LicenseError('DISPOSED');
  }
}
