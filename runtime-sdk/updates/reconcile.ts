/**
 * What the next start makes of an install the journal left unfinished (a crash, a power cut, the
 * Windows helper's work), decided from what is on disk: the new version in place with the old one
 * set aside is rolled forward (installed, to be reported); anything short of that is rolled back to
 * the old version, which is renamed back if the path is empty. Then, once the new version runs
 * healthy, the old copy and the download are removed.
 */
import type { LicenseLogger } from '../options.js';
import type { UpdateFs } from './fs.js';
import { recordInstalled } from './installers/steps.js';
import type { InstallJournal, UpdaterStateStore } from './state.js';

/** The Windows helper may still be waiting for the old process to exit: its swap is left alone this long. */
const HELPER_GRACE_MS = 5 * 60_000;

/**
 * - `none`: no install was under way.
 * - `installed`: the new version is in place (now, or already at an earlier start).
 * - `rolled-back`: the old version is in place again; the leftovers are gone.
 * - `helper-pending`: the Windows helper has not finished yet.
 * - `busy`: another instance of the app holds the install lock; it settles what there is.
 */
export type Reconciled = 'none' | 'installed' | 'rolled-back' | 'helper-pending' | 'busy';

export async function reconcile(fs: UpdateFs, state: UpdaterStateStore, now: number): Promise<Reconciled> {
  const journal = state.current.journal;
  if (!journal) return 'none';
  if (journal.phase === 'installed') return 'installed';
  // Staging never touches the target: only its leftovers go.
  if (journal.phase === 'staging') return rollBack(fs, state, journal);
  const [target, old, staged] = await Promise.all([fs.stat(journal.target), fs.stat(journal.old), fs.stat(journal.staged)]);
  if (staged) {
    // The new version was never moved in.
    if (journal.helper && now - journal.startedAt < HELPER_GRACE_MS) return 'helper-pending';
    if (target) {
      // The path still holds the running version; an old name next to it can only be the hard link
      // the POSIX swap makes first (a rename would have emptied the path).
      if (old) await fs.rm(journal.old);
    } else if (old) {
      await fs.rename(journal.old, journal.target);
    } else {
      // Neither version where it belongs but the new one staged: moving it in is the only way to a runnable app.
      await fs.rename(journal.staged, journal.target);
      return rollForward(fs, state, journal);
    }
    return rollBack(fs, state, journal);
  }
  if (target && old) return rollForward(fs, state, journal);
  // The path is empty and the old version set aside: put it back.
  if (old) await fs.rename(journal.old, journal.target);
  // (Target there and no old copy: an undo had finished. Neither: nothing is left to restore.)
  return rollBack(fs, state, journal);
}

async function rollForward(fs: UpdateFs, state: UpdaterStateStore, journal: InstallJournal): Promise<Reconciled> {
  if (journal.stagingRoot !== journal.staged) await fs.rm(journal.stagingRoot);
  await recordInstalled({ state }, journal);
  return 'installed';
}

async function rollBack(fs: UpdateFs, state: UpdaterStateStore, journal: InstallJournal): Promise<Reconciled> {
  await fs.rm(journal.stagingRoot);
  await state.update((s) => void (s.journal = null));
  return 'rolled-back';
}

/**
 * The new version runs healthy: remove the old copy, the download and anything left from earlier
 * attempts. What cannot be removed yet (an old exe still running on Windows) is tried next time.
 */
export async function removeOldCopies(fs: UpdateFs, state: UpdaterStateStore, logger: LicenseLogger): Promise<void> {
  const { journal, leftovers } = state.current;
  const installed = journal?.phase === 'installed' ? journal : undefined;
  const candidates = [...(installed ? [installed.old, installed.stagingRoot, installed.download] : []), ...leftovers];
  if (candidates.length === 0) return;
  const remaining: string[] = [];
  for (const file of new Set(candidates)) {
    try {
      await fs.rm(file);
    } catch (err) {
      logger.debug?.('an old copy could not be removed yet', { file, error: String(err) });
      remaining.push(file);
    }
  }
  await state.update((s) => {
    if (installed && s.journal?.startedAt === installed.startedAt) s.journal = null;
    s.leftovers = remaining;
  });
}
