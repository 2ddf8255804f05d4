/**
 * What the updater remembers between runs, in one JSON file beside the license cache: the highest
 * manifest serial seen (replay protection), the versions the user skipped, reports still to send,
 * the install journal, the last failed install (its back-off) and the last install done. Written
 * durably (sibling, fsync, rename); a file that does not parse is read as a fresh state, never a
 * crash. Several instances of the app share the file: each change is applied to what is on disk
 * at that moment, not to what this instance read earlier.
 */
import { UPDATE_FAILURE_REASONS, type UpdateFailureReason } from '../protocol.js';
import type { LicenseLogger } from '../options.js';
import type { FailedInstall } from './backoff.js';
import { UpdateError } from './errors.js';
import { removeAbandonedTemporaries, writeFileDurably, type UpdateFs } from './fs.js';

export const STATE_FILE_NAME = 'updater-state.json';
const FORMAT = 'latchkey-updater-state';
const VERSION = 1;
/** Enough to remember every version a user could plausibly skip; the oldest are forgotten first. */
const MAX_SKIPPED = 32;

export const JOURNAL_PHASES = ['staging', 'swapping', 'installed'] as const;

/**
 * The install in progress, written (and flushed) before each step so that the next start can tell
 * how far it got. `staging`: the new version is being put next to the target, which is untouched.
 * `swapping`: the target is being set aside and the new version moved in. `installed`: the new
 * version is in place; the old copy stays until the new one runs healthy.
 */
export interface InstallJournal {
  phase: (typeof JOURNAL_PHASES)[number];
  /** The path replaced: the binary or bundle, the `.app` folder, or the Windows install folder. */
  target: string;
  /** Where the running version is set aside: `<name>.old.<timestamp>`. */
  old: string;
  /** The verified new version, next to the target, ready to be moved in. */
  staged: string;
  /** What to remove when the install is abandoned: `staged` or the folder it was unpacked in. */
  stagingRoot: string;
  /** The swap is done by a helper once this process exits (Windows one-folder). */
  helper: boolean;
  startedAt: number;
  buildId: string;
  version: string;
  /** The verified download in the cache, removed with the old copy. */
  download: string;
}

export type PendingReport =
  { event: 'installed' | 'skipped'; build_id: string; version: string } | { event: 'failed'; reason: UpdateFailureReason; build_id: string; version: string };

/** The last build this updater installed, and where: an instance still running the old version learns it is done. */
export interface LastInstalled {
  buildId: string;
  target: string;
}

export interface UpdaterState {
  highestSerialSeen: number;
  skippedBuildIds: string[];
  pendingReports: PendingReport[];
  journal: InstallJournal | null;
  /** Old copies whose removal failed (still running on Windows): tried again later. */
  leftovers: string[];
  failedInstall: FailedInstall | null;
  lastInstalled: LastInstalled | null;
}

const freshState = (): UpdaterState => ({ highestSerialSeen: 0, skippedBuildIds: [], pendingReports: [], journal: null, leftovers: [], failedInstall: null, lastInstalled: null });

export class UpdaterStateStore {
  private writes: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly fs: UpdateFs,
    private readonly file: string,
    private state: UpdaterState,
  ) {}

  static async open(fs: UpdateFs, file: string, logger: LicenseLogger): Promise<UpdaterStateStore> {
    await removeAbandonedTemporaries(fs, file);
    return new UpdaterStateStore(fs, file, (await readState(fs, file, logger)) ?? freshState());
  }

  get current(): Readonly<UpdaterState> {
    return this.state;
  }

  /** Reads the file again: another instance may have changed it (under the install lock, it did). */
  async reload(logger: LicenseLogger): Promise<void> {
    await this.writes;
    this.state = (await readState(this.fs, this.file, logger)) ?? this.state;
  }

  /** Applies `change` to the state on disk and waits until the result is there; updates run one at a time. */
  update(change: (state: UpdaterState) => void): Promise<void> {
    const run = this.writes.then(async () => {
      const next = structuredClone((await readState(this.fs, this.file)) ?? this.state);
      change(next);
      try {
        await writeFileDurably(this.fs, this.file, JSON.stringify({ format: FORMAT, version: VERSION, ...next }));
      } catch (err) {
        throw new UpdateError('DISK_FAILED', `the updater state could not be written: ${(err as Error).message}`, { cause: err });
      }
      this.state = next;
    });
    this.writes = run.catch(() => undefined);
    return run;
  }
}

export function rememberSkipped(state: UpdaterState, buildId: string): void {
  state.skippedBuildIds = [...state.skippedBuildIds.filter((id) => id !== buildId), buildId].slice(-MAX_SKIPPED);
}

/** The state on disk; undefined when there is none or it is unreadable (said at debug when `logger` is given). */
async function readState(fs: UpdateFs, file: string, logger?: LicenseLogger): Promise<UpdaterState | undefined> {
  let text: string;
  try {
    text = (await fs.readFile(file)).toString('utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') logger?.debug?.('updater state unreadable; starting fresh', { error: String(err) });
    return undefined;
  }
  const parsed = parseState(text);
  if (!parsed) logger?.debug?.('updater state is not valid; starting fresh');
  return parsed;
}

const isString = (value: unknown): value is string => typeof value === 'string';
const isStringList = (value: unknown): value is string[] => Array.isArray(value) && value.every(isString);

function isReport(value: unknown): value is PendingReport {
  const r = value as Partial<Record<keyof PendingReport | 'reason', unknown>> | null;
  if (typeof r !== 'object' || r === null || !isString(r.build_id) || !isString(r.version)) return false;
  if (r.event === 'failed') return (UPDATE_FAILURE_REASONS as readonly unknown[]).includes(r.reason);
  return r.event === 'installed' || r.event === 'skipped';
}

function isFailedInstall(value: unknown): value is FailedInstall {
  const f = value as Partial<FailedInstall> | null;
  return (
    typeof f === 'object' &&
    f !== null &&
    isString(f.buildId) &&
    Number.isSafeInteger(f.serial) &&
    Number.isSafeInteger(f.failures) &&
    (f.nextAttemptAt === null || Number.isFinite(f.nextAttemptAt))
  );
}

function isLastInstalled(value: unknown): value is LastInstalled {
  const l = value as Partial<LastInstalled> | null;
  return typeof l === 'object' && l !== null && isString(l.buildId) && isString(l.target);
}

function isJournal(value: unknown): value is InstallJournal {
  const j = value as Partial<InstallJournal> | null;
  return (
    typeof j === 'object' &&
    j !== null &&
    JOURNAL_PHASES.includes(j.phase as InstallJournal['phase']) &&
    [j.target, j.old, j.staged, j.stagingRoot, j.buildId, j.version, j.download].every(isString) &&
    typeof j.helper === 'boolean' &&
    Number.isFinite(j.startedAt)
  );
}

function parseState(text: string): UpdaterState | undefined {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof raw !== 'object' || raw === null || raw.format !== FORMAT || raw.version !== VERSION) return undefined;
  const valid =
    Number.isSafeInteger(raw.highestSerialSeen) &&
    isStringList(raw.skippedBuildIds) &&
    Array.isArray(raw.pendingReports) &&
    raw.pendingReports.every(isReport) &&
    (raw.journal === null || isJournal(raw.journal)) &&
    isStringList(raw.leftovers) &&
    // Absent in a file an earlier SDK wrote.
    (raw.failedInstall === undefined || raw.failedInstall === null || isFailedInstall(raw.failedInstall)) &&
    (raw.lastInstalled === undefined || raw.lastInstalled === null || isLastInstalled(raw.lastInstalled));
  if (!valid) return undefined;
  return {
    highestSerialSeen: raw.highestSerialSeen as number,
    skippedBuildIds: raw.skippedBuildIds as string[],
    pendingReports: raw.pendingReports as PendingReport[],
    journal: raw.journal as InstallJournal | null,
    leftovers: raw.leftovers as string[],
    failedInstall: (raw.failedInstall as FailedInstall | undefined) ?? null,
    lastInstalled: (raw.lastInstalled as LastInstalled | undefined) ?? null,
  };
}
