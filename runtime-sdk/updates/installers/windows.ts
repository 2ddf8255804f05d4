/**
 * Windows. A running executable can be renamed but not overwritten or deleted, and antivirus or the
 * indexer may hold a file for a moment (EPERM, EBUSY, EACCES): each rename is retried 3 times with
 * exponential backoff.
 * - One-file: the exe is renamed `<name>.exe.old.<timestamp>` while it runs, the new one moved in,
 *   the app restarted.
 * - One-folder: a folder with a running process cannot be renamed at all, so the new folder is
 *   unpacked beside it and a detached helper swaps the two once this process has exited.
 */
import path from 'node:path';
import { WINDOWS_POWERSHELL, windowsSystemProgram } from '../commands.js';
import { UpdateError } from '../errors.js';
import { abandon, letAppSave, saveJournal, stageArchive, stageFile, swapInProcess, type InstallStrategy, type RenameRules } from './steps.js';
import { singleFileStrategy } from './linux.js';
import { HELPER_WAIT_SECONDS, SWAP_HELPER_SCRIPT, windowsCommandLine } from './windows-helper.js';

export const WINDOWS_RULES: RenameRules = { linkAside: false, retryCodes: ['EPERM', 'EBUSY', 'EACCES'] };

export const windowsFileStrategy: InstallStrategy = {
  staging: singleFileStrategy.staging,
  stage: stageFile,
  swap: (plan, target, ctx, journal) => swapInProcess(plan, target, ctx, journal, WINDOWS_RULES),
};

/** Where the helper script is written: the updater's cache, never the folder being swapped. */
export const HELPER_SCRIPT_NAME = 'swap-helper.ps1';

export const windowsFolderStrategy: InstallStrategy = {
  staging: (target, stamp) => {
    const staged = `${target.replaced}.new.${stamp}`;
    return { staged, stagingRoot: staged };
  },
  // bsdtar, part of Windows since 1803, reads zip archives.
  stage: (plan, pkg, target, ctx) =>
    stageArchive(plan, target, ctx, { file: windowsSystemProgram(ctx.process.env, 'tar.exe'), args: ['-x', '-f', pkg.file, '-C', plan.stagingRoot] }),
  async swap(plan, target, ctx, journal) {
    const script = path.join(path.dirname(journal.download), HELPER_SCRIPT_NAME);
    // Written while the journal still says `staging`: a script that cannot be written (a full disk)
    // abandons the install here, counted once, instead of leaving a swap for a helper that never starts.
    try {
      await ctx.fs.writeFile(script, SWAP_HELPER_SCRIPT);
    } catch (err) {
      await abandon(plan, ctx);
      // The script goes in the updater's own cache: a disk failure, like the download's.
      throw new UpdateError('DISK_FAILED', `the swap helper could not be written: ${(err as Error).message}`, { cause: err });
    }
    await saveJournal(ctx, { ...journal, phase: 'swapping', helper: true });
    const env = {
      ...ctx.process.env,
      LATCHKEY_SWAP_PID: String(ctx.process.pid),
      LATCHKEY_SWAP_TARGET: plan.target,
      LATCHKEY_SWAP_OLD: plan.old,
      LATCHKEY_SWAP_STAGED: plan.staged,
      LATCHKEY_SWAP_RETRY_MS: String(ctx.retryBaseDelayMs),
      LATCHKEY_SWAP_WAIT_SECONDS: String(HELPER_WAIT_SECONDS),
      LATCHKEY_SWAP_RELAUNCH: target.relaunch.file,
      LATCHKEY_SWAP_ARGUMENTS: windowsCommandLine(target.relaunch.args),
      LATCHKEY_SWAP_CWD: ctx.process.cwd,
    };
    const powershell = windowsSystemProgram(ctx.process.env, WINDOWS_POWERSHELL);
    // The helper starts the new version on its own, so a one-folder app is relaunched detached
    // whatever `relaunch` says: this process must have exited before its folder can be renamed.
    await ctx.unlock();
    await letAppSave(ctx);
    try {
      // Its working folder is outside the install folder, which it could otherwise not rename.
      await ctx.process.spawnDetached(powershell, ['-NoProfile', '-NonInteractive', '-ExecutionPolicy', 'Bypass', '-File', script], { env, cwd: path.dirname(plan.target) });
    } catch (err) {
      await abandon(plan, ctx);
      throw new UpdateError('INSTALL_FAILED', `the swap helper could not be started: ${(err as Error).message}`, { cause: err });
    }
    ctx.process.exit(0);
    return 'restarting';
  },
};
