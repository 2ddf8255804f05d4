/** One install strategy per OS and layout, chosen from what the running app is (target.ts). */
import type { AppTarget } from '../target.js';
import { singleFileStrategy } from './linux.js';
import { appBundleStrategy } from './macos.js';
import { runInstall, type InstallContext, type InstallResult, type InstallStrategy, type VerifiedPackage } from './steps.js';
import { windowsFileStrategy, windowsFolderStrategy } from './windows.js';

export type { InstallContext, InstallResult, VerifiedPackage } from './steps.js';

function strategyFor(target: AppTarget): InstallStrategy {
  if (target.packaging === 'app-bundle') return appBundleStrategy;
  if (target.packaging === 'folder') return windowsFolderStrategy;
  return target.os === 'win32' ? windowsFileStrategy : singleFileStrategy;
}

/** Stages, swaps and restarts into `pkg`; resolves `restarting` once the process is exiting. */
export function installUpdate(target: AppTarget, pkg: VerifiedPackage, ctx: InstallContext): Promise<InstallResult> {
  return runInstall(strategyFor(target), target, pkg, ctx);
}
