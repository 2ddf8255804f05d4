/**
 * What the updater remembers between runs, in one JSON file beside the license cache: the highest
 * manifest serial seen (replay protection), the versions the user skipped, reports still to send,
 * and the install journal. Written durably (sibling, fsync, rename); a file that does not parse is
 * read as a fresh state, never a crash.
 */
import type { LicenseLogger } from '../options.js';
import { UpdateError } from './errors.js';
import { writeFileDurably, type UpdateFs } from './fs.js';

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

export interface PendingReport {
  event: 'installed' | 'skipped';
  build_id: string;
  version: string;
}

export interface UpdaterState {
  highestSerialSeen: number;
  skippedBuildIds: string[];
  pendingReports: PendingReport[];
  journal: InstallJournal | null;
  /** Old copies whose removal failed (still running on Windows): tried again later. */
  leftovers: string[];
}

const freshState = (): UpdaterState => ({ highestSerialSeen: 0, skippedBuildIds: [], pendingReports: [], journal: null, leftovers: [] });

export class UpdaterStateStore {
  private writes: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly fs: UpdateFs,
    private readonly file: string,
    private state: UpdaterState,
  ) {}

  static async open(fs: UpdateFs, file: string, logger: LicenseLogger): Promise<UpdaterStateStore> {
    let text: string | undefined;
    try {
      text = (await fs.readFile(file)).toString('utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') logger.debug?.('updater state unreadable; starting fresh', { error: String(err) });
    }
    const parsed = text === undefined ? undefined : parseState(text);
    if (text !== undefined && !parsed) logger.debug?.('updater state is not valid; starting fresh');
    return new UpdaterStateStore(fs, file, parsed ?? freshState());
  }

  get current(): Readonly<UpdaterState> {
    return this.state;
  }

  /** Applies `change` and waits until the result is on disk; updates run one at a time. */
  update(change: (state: UpdaterState) => void): Promise<void> {
    const run = this.writes.then(async () => {
      const next = structuredClone(this.state);
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

const isString = (value: unknown): value is string => typeof value === 'string';
const isStringList = (value: unknown): value is string[] => Array.isArray(value) && value.every(isString);

function isReport(value: unknown): value is PendingReport {
  const r = value as Partial<PendingReport> | null;
  return typeof r === 'object' && r !== null && (r.event === 'installed' || r.event === 'skipped') && isString(r.build_id) && isString(r.version);
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
    isStringList(raw.leftovers);
  if (!valid) return undefined;
  return {
    highestSerialSeen: raw.highestSerialSeen as number,
    skippedBuildIds: raw.skippedBuildIds as string[],
    pendingReports: raw.pendingReports as PendingReport[],
    journal: raw.journal as InstallJournal | null,
    leftovers: raw.leftovers as string[],
  };
}
