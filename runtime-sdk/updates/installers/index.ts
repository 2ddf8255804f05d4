/** One install strategy per OS and layout, chosen from what the running app is (target.ts). */
import type { AppTarget } from '../target.js';
import { singleFileStrategy } from './linux.js';
import { appBundleStrategy } from './macos.js';
import { renameWithRetry, runInstall, type InstallContext, type InstallResult, type InstallStrategy, type VerifiedPackage } from './steps.js';
import { WINDOWS_RULES, windowsFileStrategy, windowsFolderStrategy } from './windows.js';

export type { InstallContext, InstallResult, VerifiedPackage } from './steps.js';

function strategyFor(target: AppTarget): InstallStrategy {
  if (target.packaging === 'app-bundle') return appBundleStrategy;
  if (target.packaging === 'folder') return windowsFolderStrategy;
  return target.os === 'win32' ? windowsFileStrategy : singleFileStrategy;
}

/**
 * A rename inside the updater's own cache (the verified download to its name) on `target`'s OS: on
 * Windows retried, as the installers' renames are, while antivirus or the indexer holds the file
 * just written; elsewhere a refusal is final.
 */
export function cacheRename(target: AppTarget, ctx: Pick<InstallContext, 'fs' | 'sleep' | 'retryBaseDelayMs'>): (from: string, to: string) => Promise<void> {
  const rules = { linkAside: false, retryCodes: target.os === 'win32' ? WINDOWS_RULES.retryCodes : [] };
  return (from, to) => renameWithRetry(from, to, rules, ctx);
}

/** Stages, swaps and restarts into `pkg`; resolves `restarting` once the process is exiting. */
export function installUpdate(target: AppTarget, pkg: VerifiedPackage, ctx: InstallContext): Promise<InstallResult> {
  return runInstall(strategyFor(target), target, pkg, ctx);
}
