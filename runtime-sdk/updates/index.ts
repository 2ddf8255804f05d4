/**
 * @latchkey/runtime-sdk/updates: signed updates for an app that uses the license client.
 *
 *   const updater = createUpdater({ license });
 *   void updater.checkInBackground(); // after the license check; never rejects, never blocks
 *   // once the app is up and working:
 *   void updater.markHealthy();
 */
import * as z from 'zod/mini';
import type { LicenseClient } from '../license-client.js';
import { duration, optionalFlag, optionalFunction, parseOptions, positiveNumber } from '../option-schemas.js';
import { systemCommands, type CommandRunner } from './commands.js';
import { nodeUpdateFs, type UpdateFs } from './fs.js';
import type { UpdatePrompt } from './prompt/offer.js';
import { systemPrompt } from './prompt/system-prompt.js';
import type { WindowsLayout } from './target.js';
import { Updater } from './updater.js';

export { Updater, type UpdateOutcome } from './updater.js';
export { UPDATE_ERROR_CODES, UpdateError, type UpdateErrorCode } from './errors.js';
export { BUTTON_LABELS, type PromptChoice, type UpdateOffer, type UpdatePrompt } from './prompt/offer.js';
export { systemPrompt, type SystemPromptOptions } from './prompt/system-prompt.js';
export type { Reconciled } from './reconcile.js';
export type { WindowsLayout } from './target.js';
export type { CommandRunner } from './commands.js';
export type { UpdateFs } from './fs.js';

export interface UpdaterOptions {
  /** The app's license client: the update check is made with its license key and device. */
  license: LicenseClient;
  /** Shown in the question; default the app id. */
  appName?: string;
  /**
   * The file this app runs from, to make sure of it: its executable, or the script node runs. Only
   * that file is accepted (a link to it too); anything else is refused (APP_FILE_REFUSED) before
   * anything is fetched or touched. Default: the executable (Electron: always its executable, or
   * the AppImage on Linux; never `argv[1]`), else the script node was started with.
   */
  appFile?: string;
  /** Windows: a one-folder install is replaced as a whole folder. Default `one-folder` in Electron, else `one-file`. */
  windowsLayout?: WindowsLayout;
  /**
   * The app has windows of its own: after an install the new version starts detached and this
   * process exits. Otherwise it runs in this process's place, on its terminal and stdio, and this
   * process waits and exits with its exit code. Default: true in Electron, else false.
   */
  gui?: boolean;
  /**
   * Keep the process up while `start()` and `checkInBackground()` run (the question and an install
   * included), for a command-line app that awaits them. Default false: a check never delays the exit, and a
   * short-lived app that does not wait for it is asked at a later, longer run.
   */
  holdProcess?: boolean;
  /** The question's UI (the app's own, a window of a GUI app); default the OS's dialog, else the user's terminal (not stdin), else "not right now". */
  prompt?: UpdatePrompt;
  /** Called just before the new version starts and this process exits: save the user's work here. */
  beforeRestart?: () => Promise<void> | void;
  /** A new version that has run this long is healthy and its old copy is removed; `markHealthy()` says so sooner. Default 60 s. */
  healthyAfterMs?: number;
  /** A download attempt with no bytes for this long is abandoned (and resumed). Default 30 s. */
  downloadIdleTimeoutMs?: number;
  /** Attempts after a failed one, each resuming the download. Default 3. */
  downloadRetries?: number;
  /** First wait between download attempts and between Windows rename attempts, doubled each time. Default 250 ms. */
  retryBaseDelayMs?: number;
  /** Seams for tests and unusual hosts. */
  fs?: UpdateFs;
  commands?: CommandRunner;
  sleep?: (ms: number) => Promise<void>;
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * What `createUpdater` accepts; anything else is refused with `INVALID_OPTIONS` naming the option. The
 * app's own objects (prompt, fs, commands) are the app's to shape and pass through as given.
 */
const UpdaterOptionsSchema = z.looseObject({
  license: z.custom<LicenseClient>((value) => typeof (value as Partial<LicenseClient> | null)?.updateChannel === 'function', 'must be a client from createLicenseClient'),
  appName: z.optional(z.string({ error: 'must be a string' }).check(z.minLength(1))),
  appFile: z.optional(z.string({ error: 'must be a path' }).check(z.minLength(1))),
  windowsLayout: z.optional(z.enum(['one-file', 'one-folder'], { error: "must be 'one-file' or 'one-folder'" })),
  gui: optionalFlag,
  holdProcess: optionalFlag,
  beforeRestart: optionalFunction<() => Promise<void> | void>(),
  sleep: optionalFunction<(ms: number) => Promise<void>>(),
  healthyAfterMs: duration(),
  downloadIdleTimeoutMs: duration(),
  downloadRetries: positiveNumber(true),
  retryBaseDelayMs: duration(true),
});

export function createUpdater(input: UpdaterOptions): Updater {
  const options = parseOptions(UpdaterOptionsSchema, input) as UpdaterOptions;
  const channel = options.license.updateChannel();
  const { platform, appId, logger } = channel.settings;
  const commands = options.commands ?? systemCommands(platform.process.env, platform.name);
  return new Updater(channel, {
    appName: options.appName ?? appId,
    ...(options.appFile === undefined ? {} : { appFile: options.appFile }),
    ...(options.windowsLayout === undefined ? {} : { windowsLayout: options.windowsLayout }),
    prompt: options.prompt ?? systemPrompt({ os: platform.name, env: platform.process.env, commands, logger }),
    gui: options.gui ?? platform.process.runtime === 'electron',
    holdProcess: options.holdProcess ?? false,
    fs: options.fs ?? nodeUpdateFs,
    commands,
    sleep: options.sleep ?? delay,
    healthyAfterMs: options.healthyAfterMs ?? 60_000,
    downloadIdleTimeoutMs: options.downloadIdleTimeoutMs ?? 30_000,
    downloadRetries: options.downloadRetries ?? 3,
    retryBaseDelayMs: options.retryBaseDelayMs ?? 250,
    ...(options.beforeRestart ? { beforeRestart: options.beforeRestart } : {}),
  });
}
