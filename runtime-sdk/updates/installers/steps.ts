/**
 * The install, the same on every OS: announce each step in the journal (flushed) before taking it,
 * stage the verified package next to the target, set the running version aside as
 * `<name>.old.<timestamp>`, move the new one into its path, restart. A refused step is undone on
 * the spot; a crash is undone or completed at the next start (reconcile.ts), so the path always
 * holds the old or the new version. Each OS plugs in how it stages and swaps (an `InstallStrategy`).
 */
import path from 'node:path';
import type { LicenseLogger } from '../../options.js';
import type { AppProcess } from '../../platform.js';
import type { CommandRunner } from '../commands.js';
import { asUpdateError, UpdateError } from '../errors.js';
import type { UpdateFs } from '../fs.js';
import type { InstallJournal, UpdaterStateStore } from '../state.js';
import type { AppTarget } from '../target.js';
import { MAX_TIMER_MS } from '../../option-schemas.js';

export interface InstallContext {
  fs: UpdateFs;
  commands: CommandRunner;
  process: AppProcess;
  state: UpdaterStateStore;
  logger: LicenseLogger;
  now(): number;
  sleep(ms: number): Promise<void>;
  /** First wait between attempts of a rename the OS refused for a moment (Windows). */
  retryBaseDelayMs: number;
  /** The app's chance to save its work before this process exits. */
  beforeRestart?: () => Promise<void> | void;
  /**
   * How the new version starts: `foreground` in this process's place (same terminal and stdio, this
   * process waits and exits with its code), `detached` on its own while this one exits (GUI apps).
   */
  relaunch: 'foreground' | 'detached';
  /** Releases the install lock once the install is recorded: the new version takes it to settle. */
  unlock(): Promise<void>;
}

/** A package whose bytes hash to the manifest's SHA-256, in the updater's cache. */
export interface VerifiedPackage {
  file: string;
  buildId: string;
  version: string;
}

export type SwapPlan = Pick<InstallJournal, 'target' | 'old' | 'staged' | 'stagingRoot'>;

/** `restarting`: the new version was started and this process is exiting. `installed`: it is in place but could not be started; the next launch runs it. */
export type InstallResult = 'restarting' | 'installed';

export interface InstallStrategy {
  /** Where the new version is staged for an install stamped `stamp`. */
  staging(target: AppTarget, stamp: number): Pick<SwapPlan, 'staged' | 'stagingRoot'>;
  /** Puts the verified package at `plan.staged`, ready to move in; touches nothing else. */
  stage(plan: SwapPlan, pkg: VerifiedPackage, target: AppTarget, ctx: InstallContext): Promise<void>;
  /**
   * Swaps and restarts. In process: set aside, move in (undoing the first on a refused second),
   * then restart. Windows one-folder: a helper does it all once this process has exited.
   */
  swap(plan: SwapPlan, target: AppTarget, ctx: InstallContext, journal: InstallJournal): Promise<InstallResult>;
}

export async function runInstall(strategy: InstallStrategy, target: AppTarget, pkg: VerifiedPackage, ctx: InstallContext): Promise<InstallResult> {
  const stamp = ctx.now();
  const plan: SwapPlan = { target: target.replaced, old: `${target.replaced}.old.${stamp}`, ...strategy.staging(target, stamp) };
  const journal: InstallJournal = { phase: 'staging', ...plan, helper: false, startedAt: stamp, buildId: pkg.buildId, version: pkg.version, download: pkg.file };
  await saveJournal(ctx, journal);
  try {
    await strategy.stage(plan, pkg, target, ctx);
  } catch (err) {
    await abandon(plan, ctx);
    throw asUpdateError(err, 'INSTALL_FAILED');
  }
  return strategy.swap(plan, target, ctx, journal);
}

/** Writes the journal (or clears it, with null) and waits until it is on disk. */
export function saveJournal(ctx: InstallContext, journal: InstallJournal | null): Promise<void> {
  return ctx.state.update((state) => void (state.journal = journal));
}

/** The new version is in place: the journal says so, and its first start reports it installed. */
export function recordInstalled(ctx: Pick<InstallContext, 'state'>, journal: InstallJournal): Promise<void> {
  return ctx.state.update((state) => {
    state.journal = { ...journal, phase: 'installed' };
    state.pendingReports.push({ event: 'installed', build_id: journal.buildId, version: journal.version });
    state.lastInstalled = { buildId: journal.buildId, target: journal.target };
    state.failedInstall = null;
  });
}

/** Removes what staging left and forgets the install; the target was never touched. */
export async function abandon(plan: SwapPlan, ctx: InstallContext): Promise<void> {
  try {
    await ctx.fs.rm(plan.stagingRoot);
    await saveJournal(ctx, null);
  } catch (err) {
    // The journal still says `staging`: the next start removes the leftovers.
    ctx.logger.debug?.('an abandoned update could not be cleaned up yet', { error: String(err) });
  }
}

/** The verified download, moved next to the target (copied when the cache is on another volume), with the running file's mode. */
export async function stageFile(plan: SwapPlan, pkg: VerifiedPackage, target: AppTarget, ctx: InstallContext): Promise<void> {
  const current = await ctx.fs.stat(plan.target);
  try {
    await ctx.fs.rename(pkg.file, plan.staged);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    await ctx.fs.copyFile(pkg.file, plan.staged);
  }
  const mode = (current?.mode ?? 0o755) & 0o7777;
  // An executable must stay runnable: execute permission wherever read permission is granted.
  await ctx.fs.chmod(plan.staged, target.kind === 'single-executable' ? mode | ((mode & 0o444) >> 2) : mode);
  await ctx.fs.fsync(plan.staged);
  await ctx.fs.fsync(path.dirname(plan.staged));
}

/**
 * Unpacks a zipped package into `plan.stagingRoot` with `file args`, checks the app's file is where
 * it is expected, and flushes what was unpacked (`flushTree`) before anything is swapped.
 */
export async function stageArchive(plan: SwapPlan, target: AppTarget, ctx: InstallContext, command: { file: string; args: string[] }): Promise<void> {
  await ctx.fs.mkdir(plan.stagingRoot);
  const result = await ctx.commands.run(command.file, command.args);
  if (result.code !== 0) throw new UpdateError('PACKAGE_REJECTED', `${command.file} could not unpack the package: ${result.stderr.trim() || `exit ${result.code}`}`);
  const appFile = path.join(plan.staged, path.relative(target.replaced, target.appFile));
  const found = await ctx.fs.stat(appFile);
  if (!found || found.isDirectory) throw new UpdateError('PACKAGE_REJECTED', `the package has no ${path.relative(target.replaced, target.appFile)}`);
  await flushTree(plan.stagingRoot, ctx);
}

/**
 * Every file unpacked under `dir` flushed to the disk, then each folder's entries (where the OS
 * flushes folders): filesystems journal the renames that follow, not the files' data, so after a
 * power loss the swapped-in version could otherwise hold empty files, recorded as installed.
 */
async function flushTree(dir: string, ctx: InstallContext): Promise<void> {
  for (const name of await ctx.fs.readdir(dir)) {
    const entry = path.join(dir, name);
    const stat = await ctx.fs.stat(entry);
    if (stat?.isDirectory) await flushTree(entry, ctx);
    else if (stat) await ctx.fs.fsync(entry).catch((err: unknown) => ctx.logger.debug?.('a staged file could not be flushed', { file: entry, error: String(err) }));
  }
  await ctx.fs.fsync(dir).catch(() => undefined);
}

export interface RenameRules {
  /** POSIX: give the running file its old name as a second link, then replace the path atomically. */
  linkAside: boolean;
  /** Windows: antivirus and indexers hold files for a moment; retry these codes with backoff. */
  retryCodes: readonly string[];
}

/** Retries after a refusal: 3 more attempts, waiting base, 2 x base, 4 x base. */
const RENAME_RETRIES = 3;

export async function renameWithRetry(from: string, to: string, rules: RenameRules, ctx: Pick<InstallContext, 'fs' | 'sleep' | 'retryBaseDelayMs'>): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await ctx.fs.rename(from, to);
    } catch (err) {
      if (attempt >= RENAME_RETRIES || !rules.retryCodes.includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
      await ctx.sleep(Math.min(ctx.retryBaseDelayMs * 2 ** attempt, MAX_TIMER_MS));
    }
  }
}

/**
 * Sets the running version aside and moves the staged one into its path, then records it installed
 * and restarts. A refusal of either step is undone and reported as INSTALL_FAILED (`putBack`); if
 * even that fails the journal stays at `swapping` and the next start finishes the job.
 */
export async function swapInProcess(plan: SwapPlan, target: AppTarget, ctx: InstallContext, journal: InstallJournal, rules: RenameRules): Promise<InstallResult> {
  await saveJournal(ctx, { ...journal, phase: 'swapping' });
  let aside: 'linked' | 'renamed';
  try {
    aside = await setAside(plan, rules, ctx);
  } catch (err) {
    await abandon(plan, ctx);
    throw new UpdateError('INSTALL_FAILED', `the running version could not be set aside: ${(err as Error).message}`, { cause: err });
  }
  try {
    await renameWithRetry(plan.staged, plan.target, rules, ctx);
  } catch (err) {
    if (aside === 'renamed') await putBack(plan, rules, ctx);
    else await ctx.fs.rm(plan.old);
    await abandon(plan, ctx);
    throw new UpdateError('INSTALL_FAILED', `the new version could not be moved in: ${(err as Error).message}`, { cause: err });
  }
  // The swap is done: what follows only tidies up, and must not turn it into a failure.
  await ctx.fs.fsync(path.dirname(plan.target)).catch((err: unknown) => ctx.logger.debug?.('folder flush failed', { error: String(err) }));
  // An unpacked bundle leaves its (now empty) staging folder.
  if (plan.stagingRoot !== plan.staged) await ctx.fs.rm(plan.stagingRoot).catch(() => undefined);
  await recordInstalled(ctx, journal);
  return restart(target, ctx);
}

/**
 * The running version back in its path after the new one could not move in: renamed back, or, when
 * that is refused too (an antivirus holding it), copied back. The path must not stay empty: the
 * user's shortcut points there, and the next start, which would settle the journal, runs from it.
 * The copy is made beside the path, flushed, and renamed in whole: a copy that fails midway (a full
 * disk) leaves nothing at the path rather than half a version, and the journal at `swapping` for
 * the next start. The set-aside copy, still running, is removed once it no longer runs (a leftover).
 */
async function putBack(plan: SwapPlan, rules: RenameRules, ctx: InstallContext): Promise<void> {
  try {
    await renameWithRetry(plan.old, plan.target, rules, ctx);
  } catch (err) {
    ctx.logger.debug?.('the running version could not be renamed back; copying it back', { error: String(err) });
    const copy = `${plan.target}.back.${ctx.now()}`;
    try {
      await ctx.fs.copyTree(plan.old, copy);
      if ((await ctx.fs.stat(copy))?.isDirectory) await flushTree(copy, ctx);
      else await ctx.fs.fsync(copy);
      await renameWithRetry(copy, plan.target, rules, ctx);
    } catch (copyErr) {
      await ctx.fs.rm(copy).catch(() => undefined);
      throw copyErr;
    }
    await ctx.state.update((state) => void state.leftovers.push(plan.old));
  }
}

async function setAside(plan: SwapPlan, rules: RenameRules, ctx: InstallContext): Promise<'linked' | 'renamed'> {
  if (rules.linkAside) {
    try {
      await ctx.fs.link(plan.target, plan.old);
      return 'linked';
    } catch (err) {
      // Filesystems without hard links (FAT, some network mounts): rename, as on the other systems.
      ctx.logger.debug?.('no hard link for the old version; renaming it', { error: String(err) });
    }
  }
  await renameWithRetry(plan.target, plan.old, rules, ctx);
  return 'renamed';
}

/**
 * Starts the new version with this run's arguments and exits (with the new version's exit code when
 * it ran in the foreground); if it cannot be started, this run goes on.
 */
async function restart(target: AppTarget, ctx: InstallContext): Promise<InstallResult> {
  await ctx.unlock();
  await letAppSave(ctx);
  const { file, args } = target.relaunch;
  let code = 0;
  try {
    if (ctx.relaunch === 'foreground') code = await ctx.process.runInForeground(file, args, { cwd: ctx.process.cwd });
    else await ctx.process.spawnDetached(file, args, { cwd: ctx.process.cwd });
  } catch (err) {
    ctx.logger.debug?.('the new version is installed but could not be started; the next launch runs it', { error: String(err) });
    return 'installed';
  }
  ctx.process.exit(code);
  return 'restarting';
}

/** The app's `beforeRestart`; a failure there does not stop an update that is already in place. */
export async function letAppSave(ctx: InstallContext): Promise<void> {
  try {
    await ctx.beforeRestart?.();
  } catch (err) {
    ctx.logger.debug?.('beforeRestart threw; restarting anyway', { error: String(err) });
  }
}
