/**
 * The updater an app (or the runtime engine) runs after its license check: `start()` settles what
 * an earlier install left (journal) and sends pending reports; `checkInBackground()` asks the
 * authority, verifies the manifest, asks the user, downloads, installs and restarts. Neither ever
 * rejects nor holds up the app: every failure is logged at debug and described by the outcome.
 * Settling and installing happen under the install lock, one instance of the app at a time; a
 * failed install is reported and backed off (backoff.ts), and the old version runs on.
 */
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { ENGINE_VERSION } from '../engine/version.js';
import { holdingProcess } from '../network/process-hold.js';
import { platformLabel } from '../platform.js';
import type { UpdateFailureReason, UpdateManifestClaims } from '../protocol.js';
import { afterFailure, backingOff } from './backoff.js';
import type { UpdateChannel } from './channel.js';
import { checkForUpdate } from './checker.js';
import type { CommandRunner } from './commands.js';
import { downloadPackage } from './download.js';
import { asUpdateError, reportedReason, UpdateError, type UpdateErrorCode } from './errors.js';
import type { UpdateFs } from './fs.js';
import { cacheRename, installUpdate, type InstallContext } from './installers/index.js';
import { acquireInstallLock, type InstallLock } from './install-lock.js';
import type { UpdateOffer, UpdatePrompt } from './prompt/offer.js';
import { reconcile, removeOldCopies, type Reconciled } from './reconcile.js';
import { rememberSkipped, STATE_FILE_NAME, UpdaterStateStore } from './state.js';
import { resolveTarget, type AppTarget, type TargetOptions } from './target.js';

export type UpdateOutcome =
  | { status: 'no-update' }
  | { status: 'unavailable'; reason: 'not_activated' | 'unsupported_platform' }
  /** `skipped-earlier`: the user skipped this build before and is not asked again. */
  | { status: 'skipped-earlier' | 'later' | 'skipped'; offer: UpdateOffer }
  /**
   * `restarting`: the new version started and this process is exiting (or waits for it, in the
   * foreground). `installed`: in place (by this or another instance), runs at the next launch.
   */
  | { status: 'restarting' | 'installed'; offer: UpdateOffer }
  /** An install of this push failed before: not asked or tried again until `retryAt` (null: until a newer push). */
  | { status: 'backed-off'; offer: UpdateOffer; retryAt: string | null }
  /** Another instance of the app kept the install lock all the while this one waited for it. */
  | { status: 'busy'; offer: UpdateOffer }
  | { status: 'failed'; code: UpdateErrorCode; message: string; offer?: UpdateOffer };

/** Everything the updater uses, defaults applied (see `createUpdater`). */
export interface UpdaterConfig extends TargetOptions {
  appName: string;
  prompt: UpdatePrompt;
  fs: UpdateFs;
  commands: CommandRunner;
  sleep(ms: number): Promise<void>;
  healthyAfterMs: number;
  downloadIdleTimeoutMs: number;
  downloadRetries: number;
  retryBaseDelayMs: number;
  beforeRestart?: () => Promise<void> | void;
  /** The app has windows of its own: the new version starts detached; else in this process's place, on its terminal. */
  gui: boolean;
  /** The process stays up while `start()` and a check run (the authority's calls alone never hold it). */
  holdProcess: boolean;
}

const CACHE_DIR_NAME = 'updates';
/** How long an install waits for another instance's (its download included), polling the lock. */
const LOCK_POLL_MS = 250;
const LOCK_WAIT_RETRIES = (10 * 60_000) / LOCK_POLL_MS;
const SETTLE_LOCK_RETRIES = 5_000 / LOCK_POLL_MS;

export class Updater {
  private store: Promise<UpdaterStateStore> | undefined;
  private started: Promise<Reconciled | 'failed'> | undefined;
  private checking: Promise<UpdateOutcome> | undefined;
  private healthyTimer: NodeJS.Timeout | undefined;

  /** Use `createUpdater`. */
  constructor(
    private readonly channel: UpdateChannel,
    private readonly config: UpdaterConfig,
  ) {}

  /** Settles an unfinished install and sends pending reports; runs once, however often it is called. */
  start(): Promise<Reconciled | 'failed'> {
    this.started ??= this.held(() => this.settle()).catch((err: unknown) => {
      this.log('the updater could not settle an earlier install', err);
      return 'failed' as const;
    });
    return this.started;
  }

  /** Checks for a pushed update and offers it; resolves with what happened, never rejects. */
  checkInBackground(): Promise<UpdateOutcome> {
    this.checking ??= this.held(() => this.checkOnce())
      .catch((err: unknown) => this.failed(err))
      .finally(() => (this.checking = undefined));
    return this.checking;
  }

  /**
   * The new version works: its old copy and download are removed now rather than after `healthyAfterMs`.
   * An interrupted install is settled first, so the copy removed is the one the journal says is old.
   */
  async markHealthy(): Promise<void> {
    await this.start();
    clearTimeout(this.healthyTimer);
    try {
      await removeOldCopies(this.config.fs, await this.state(), this.settings.logger);
    } catch (err) {
      this.log('old copies could not be removed', err);
    }
  }

  dispose(): void {
    clearTimeout(this.healthyTimer);
  }

  /** `work`, holding the process while it runs when the app asked for that (`holdProcess`). */
  private held<T>(work: () => Promise<T>): Promise<T> {
    return this.config.holdProcess ? holdingProcess(work) : work();
  }

  private get settings() {
    return this.channel.settings;
  }

  private state(): Promise<UpdaterStateStore> {
    this.store ??= UpdaterStateStore.open(this.config.fs, path.join(this.settings.dataDir, STATE_FILE_NAME), this.settings.logger);
    return this.store;
  }

  private async settle(): Promise<Reconciled> {
    const state = await this.state();
    // An instance installing now owns the journal: it is never rolled back under its feet. One
    // that only looks (another instance finding an update installed) is waited for a moment.
    const lock = await this.lock(SETTLE_LOCK_RETRIES);
    if (!lock) {
      await this.sendPendingReports();
      return 'busy';
    }
    let reconciled: Reconciled;
    try {
      await state.reload(this.settings.logger);
      const journal = state.current.journal;
      reconciled = await reconcile(this.config.fs, state, this.settings.clock.now().getTime());
      if (reconciled === 'rolled-back' && journal) {
        // The manifest that led to it was the newest seen: its serial is the highest.
        await this.recordFailure({ build_id: journal.buildId, serial: state.current.highestSerialSeen }, 'rolled_back', state);
      }
    } finally {
      await lock.release();
    }
    if (reconciled === 'installed') {
      // Old copies go once this version has run this long (or the app says it is healthy sooner).
      this.healthyTimer = setTimeout(() => void this.markHealthy(), this.config.healthyAfterMs).unref();
    } else if (state.current.leftovers.length > 0) {
      await removeOldCopies(this.config.fs, state, this.settings.logger);
    }
    await this.sendPendingReports();
    return reconciled;
  }

  private async checkOnce(): Promise<UpdateOutcome> {
    await this.start();
    const identity = this.channel.identity();
    if (!identity) return { status: 'unavailable', reason: 'not_activated' };
    const platform = platformLabel(this.settings.platform);
    if (!platform) return { status: 'unavailable', reason: 'unsupported_platform' };
    const target = await this.target();
    const state = await this.state();
    const claims = await checkForUpdate({ channel: this.channel, identity, platform, engineVersion: this.engineVersion, highestSerialSeen: state.current.highestSerialSeen });
    if (!claims || claims.build_id === this.settings.buildId) return { status: 'no-update' };
    if (claims.serial > state.current.highestSerialSeen) await state.update((s) => void (s.highestSerialSeen = claims.serial));
    const offer = this.offerOf(claims);
    if (state.current.skippedBuildIds.includes(claims.build_id)) return { status: 'skipped-earlier', offer };
    const settled = this.settledElsewhere(state, claims, target, offer);
    if (settled) return settled;
    const choice = await this.config.prompt.ask(offer).catch((err: unknown) => {
      this.log('the update prompt failed; asking again next launch', err);
      return 'later' as const;
    });
    if (choice === 'later') return { status: 'later', offer };
    if (choice === 'skip') {
      await state.update((s) => {
        rememberSkipped(s, claims.build_id);
        // `version` is the running one, as the authority records it; `build_id` the one skipped.
        s.pendingReports.push({ event: 'skipped', build_id: claims.build_id, version: this.settings.appVersion });
      });
      await this.sendPendingReports();
      return { status: 'skipped', offer };
    }
    const lock = await this.lock(LOCK_WAIT_RETRIES);
    if (!lock) return { status: 'busy', offer };
    try {
      // Another instance may have installed, failed or begun this update while this one asked.
      await state.reload(this.settings.logger);
      const settledMeanwhile = this.settledElsewhere(state, claims, target, offer);
      if (settledMeanwhile) return settledMeanwhile;
      return { status: await this.install(claims, target, state, lock), offer };
    } catch (err) {
      const error = asUpdateError(err, 'INSTALL_FAILED');
      const reason = reportedReason(error.code);
      if (reason) await this.recordFailure(claims, reason, state).catch((failure: unknown) => this.log('a failed install could not be recorded', failure));
      return this.failed(error, offer);
    } finally {
      await lock.release();
    }
  }

  /**
   * What the state says about this push before anything is asked or fetched: installed already (by
   * another instance; this one runs the old version until its next launch), an install still being
   * finished, or a failed one backing off.
   */
  private settledElsewhere(state: UpdaterStateStore, claims: UpdateManifestClaims, target: AppTarget, offer: UpdateOffer): UpdateOutcome | undefined {
    const { lastInstalled, journal, failedInstall } = state.current;
    if (lastInstalled?.buildId === claims.build_id && lastInstalled.target === target.replaced) return { status: 'installed', offer };
    if (journal && journal.phase !== 'installed') return { status: 'failed', code: 'INSTALL_FAILED', message: 'an earlier install is still being finished', offer };
    const wait = backingOff(failedInstall, { buildId: claims.build_id, serial: claims.serial }, this.settings.clock.now().getTime());
    return wait && { status: 'backed-off', offer, retryAt: wait.until === null ? null : new Date(wait.until).toISOString() };
  }

  /** Counts the failure towards the push's back-off and reports it; the report waits for the next start if it cannot go now. */
  private async recordFailure(push: Pick<UpdateManifestClaims, 'build_id' | 'serial'>, reason: UpdateFailureReason, state: UpdaterStateStore): Promise<void> {
    const now = this.settings.clock.now().getTime();
    await state.update((s) => {
      s.failedInstall = afterFailure(s.failedInstall, { buildId: push.build_id, serial: push.serial }, now);
      // One report per build waiting: the latest reason.
      s.pendingReports = s.pendingReports.filter((r) => r.event !== 'failed' || r.build_id !== push.build_id);
      s.pendingReports.push({ event: 'failed', reason, build_id: push.build_id, version: this.settings.appVersion });
    });
    await this.sendPendingReports();
  }

  private lock(retries: number): Promise<InstallLock | undefined> {
    const dir = path.join(this.settings.dataDir, CACHE_DIR_NAME);
    return acquireInstallLock(dir, { retries, pollMs: LOCK_POLL_MS }).catch((err: unknown) => {
      throw new UpdateError('DISK_FAILED', `the install lock could not be taken: ${(err as Error).message}`, { cause: err });
    });
  }

  /** The target, with an `appFile` the app named taken at its real path (a link to the app is the app). */
  private async target(): Promise<AppTarget> {
    const { appFile, windowsLayout } = this.config;
    const { platform } = this.settings;
    const options: TargetOptions = windowsLayout ? { windowsLayout } : {};
    if (appFile !== undefined) {
      options.appFile = await realpath(path.resolve(platform.process.cwd, appFile)).catch((err: unknown) => {
        throw new UpdateError('APP_FILE_REFUSED', `appFile ${appFile} cannot be read: ${(err as Error).message}`, { cause: err });
      });
    }
    return resolveTarget(platform.name, platform.process, options);
  }

  private failed(err: unknown, offer?: UpdateOffer): UpdateOutcome {
    // Errors that are not UpdateErrors come from the disk or a bug, not the network (which is wrapped).
    const error = asUpdateError(err, 'INSTALL_FAILED');
    this.log('the update check ended without an update', error);
    return { status: 'failed', code: error.code, message: error.message, ...(offer ? { offer } : {}) };
  }

  private async install(claims: UpdateManifestClaims, target: AppTarget, state: UpdaterStateStore, lock: InstallLock) {
    // Installing again means this version runs: the previous install's old copy can go.
    if (state.current.journal) await removeOldCopies(this.config.fs, state, this.settings.logger);
    const file = await downloadPackage(claims, {
      cacheDir: path.join(this.settings.dataDir, CACHE_DIR_NAME),
      idleTimeoutMs: this.config.downloadIdleTimeoutMs,
      retries: this.config.downloadRetries,
      retryBaseDelayMs: this.config.retryBaseDelayMs,
      userAgent: `latchkey-updater ${this.settings.appId}/${this.settings.appVersion}`,
      sleep: this.config.sleep,
      // An antivirus scanning the file just written may hold it for a moment (Windows).
      rename: cacheRename(target, { fs: this.config.fs, sleep: this.config.sleep, retryBaseDelayMs: this.config.retryBaseDelayMs }),
    });
    const context: InstallContext = {
      fs: this.config.fs,
      commands: this.config.commands,
      process: this.settings.platform.process,
      state,
      logger: this.settings.logger,
      now: () => this.settings.clock.now().getTime(),
      sleep: this.config.sleep,
      retryBaseDelayMs: this.config.retryBaseDelayMs,
      ...(this.config.beforeRestart ? { beforeRestart: this.config.beforeRestart } : {}),
      relaunch: this.config.gui ? 'detached' : 'foreground',
      unlock: () => lock.release(),
    };
    return installUpdate(target, { file, buildId: claims.build_id, version: claims.version }, context);
  }

  /** Reports waiting to be sent (installed on the first start of a new version, skipped); kept on failure for the next start. */
  private async sendPendingReports(): Promise<void> {
    const state = await this.state();
    const platform = platformLabel(this.settings.platform);
    if (state.current.pendingReports.length === 0 || !this.channel.identity()) return;
    for (const report of state.current.pendingReports) {
      try {
        await this.channel.report({ ...report, ...(platform ? { platform } : {}), engine_version: this.engineVersion });
      } catch (err) {
        this.log('an update report could not be sent; trying again next start', err);
        continue;
      }
      await state.update((s) => void (s.pendingReports = s.pendingReports.filter((r) => r.event !== report.event || r.build_id !== report.build_id)));
    }
  }

  /**
   * The engine version the authority sees: a protected build's, or for an app embedding the SDK the
   * engine this SDK ships, whose updater this is.
   */
  private get engineVersion(): string {
    return this.settings.engineVersion ?? ENGINE_VERSION;
  }

  private offerOf(claims: UpdateManifestClaims): UpdateOffer {
    return { appName: this.config.appName, currentVersion: this.settings.appVersion, version: claims.version, buildId: claims.build_id, releaseNotes: claims.release_notes };
  }

  private log(message: string, err: unknown): void {
    const fields = err instanceof UpdateError ? { code: err.code, message: err.message } : { error: String(err) };
    this.settings.logger.debug?.(message, fields);
  }
}
