/**
 * Linux (and a macOS app outside a bundle): the single executable or the JavaScript bundle is one
 * file. The running file gets its `.old.<timestamp>` name as a hard link and the new file is renamed
 * over the path: the path is never empty, not even between two steps. A running binary can be
 * replaced this way (its inode lives on until it exits).
 */
import type { AppTarget } from '../target.js';
import { stageFile, swapInProcess, type InstallStrategy, type RenameRules } from './steps.js';

const POSIX_RULES: RenameRules = { linkAside: true, retryCodes: [] };

export const singleFileStrategy: InstallStrategy = {
  staging: (target: AppTarget, stamp: number) => {
    const staged = `${target.replaced}.new.${stamp}`;
    return { staged, stagingRoot: staged };
  },
  stage: stageFile,
  swap: (plan, target, ctx, journal) => swapInProcess(plan, target, ctx, journal, POSIX_RULES),
};
