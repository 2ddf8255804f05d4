/**
 * The updater an app (or the runtime engine) runs after its license check: `start()` settles what
 * an earlier install left (journal) and sends pending reports; `checkInBackground()` asks the
 * authority, verifies the manifest, asks the user, downloads, installs and restarts. Neither ever
 * rejects nor holds up the app: every failure is logged at debug and described by the outcome.
 */
import path from 'node:path';
import { ENGINE_VERSION } from '../engine/version.js';
import { platformLabel } from '../platform.js';
import type { UpdateManifestClaims } from '../protocol.js';
import type { UpdateChannel } from './channel.js';
import { checkForUpdate } from './checker.js';
import type { CommandRunner } from './commands.js';
import { downloadPackage } from './download.js';
import { asUpdateError, UpdateError, type UpdateErrorCode } from './errors.js';
import type { UpdateFs } from './fs.js';
import { installUpdate, type InstallContext } from './installers/index.js';
import type { UpdateOffer, UpdatePrompt } from './prompt/offer.js';
import { reconcile, removeOldCopies, type Reconciled } from './reconcile.js';
import { rememberSkipped, STATE_FILE_NAME, UpdaterStateStore } from './state.js';
import { resolveTarget, type TargetOptions } from './target.js';

export type UpdateOutcome =
  | { status: 'no-update' }
  | { status: 'unavailable'; reason: 'not_activated' | 'unsupported_platform' }
  /** `skipped-earlier`: the user skipped this build before and is not asked again. */
  | { status: 'skipped-earlier' | 'later' | 'skipped'; offer: UpdateOffer }
  /** `restarting`: the new version started and this process is exiting. `installed`: in place, runs at the next launch. */
  | { status: 'restarting' | 'installed'; offer: UpdateOffer }
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
}

const CACHE_DIR_NAME = 'updates';

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
    this.started ??= this.settle().catch((err: unknown) => {
      this.log('the updater could not settle an earlier install', err);
      return 'failed' as const;
    });
    return this.started;
  }

  /** Checks for a pushed update and offers it; resolves with what happened, never rejects. */
  checkInBackground(): Promise<UpdateOutcome> {
    this.checking ??= this.checkOnce()
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

  private get settings() {
    return this.channel.settings;
  }

  private state(): Promise<UpdaterStateStore> {
    this.store ??= UpdaterStateStore.open(this.config.fs, path.join(this.settings.dataDir, STATE_FILE_NAME), this.settings.logger);
    return this.store;
  }

  private async settle(): Promise<Reconciled> {
    const state = await this.state();
    const reconciled = await reconcile(this.config.fs, state, this.settings.clock.now().getTime());
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
    const target = resolveTarget(this.settings.platform.name, this.settings.platform.process, this.config);
    const state = await this.state();
    const claims = await checkForUpdate({ channel: this.channel, identity, platform, engineVersion: this.engineVersion, highestSerialSeen: state.current.highestSerialSeen });
    if (!claims || claims.build_id === this.settings.buildId) return { status: 'no-update' };
    if (claims.serial > state.current.highestSerialSeen) await state.update((s) => void (s.highestSerialSeen = claims.serial));
    const offer = this.offerOf(claims);
    if (state.current.skippedBuildIds.includes(claims.build_id)) return { status: 'skipped-earlier', offer };
    if (state.current.journal && state.current.journal.phase !== 'installed') {
      return { status: 'failed', code: 'INSTALL_FAILED', message: 'an earlier install is still being finished', offer };
    }
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
    try {
      return { status: await this.install(claims, target, state), offer };
    } catch (err) {
      return this.failed(err, offer);
    }
  }

  private failed(err: unknown, offer?: UpdateOffer): UpdateOutcome {
    // Errors that are not UpdateErrors come from the disk or a bug, not the network (which is wrapped).
    const error = asUpdateError(err, 'INSTALL_FAILED');
    this.log('the update check ended without an update', error);
    return { status: 'failed', code: error.code, message: error.message, ...(offer ? { offer } : {}) };
  }

  private async install(claims: UpdateManifestClaims, target: ReturnType<typeof resolveTarget>, state: UpdaterStateStore) {
    // Installing again means this version runs: the previous install's old copy can go.
    if (state.current.journal) await removeOldCopies(this.config.fs, state, this.settings.logger);
    const file = await downloadPackage(claims, {
      cacheDir: path.join(this.settings.dataDir, CACHE_DIR_NAME),
      idleTimeoutMs: this.config.downloadIdleTimeoutMs,
      retries: this.config.downloadRetries,
      retryBaseDelayMs: this.config.retryBaseDelayMs,
      userAgent: `latchkey-updater ${this.settings.appId}/${this.settings.appVersion}`,
      sleep: this.config.sleep,
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
