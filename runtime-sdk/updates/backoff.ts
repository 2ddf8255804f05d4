/**
 * How a failed install is retried: the same push again after 1, 6 and 24 hours, then not at all;
 * a newer push (a higher serial: another build, or the same one pushed again) is tried at once.
 * Meanwhile the user is not asked, nothing is fetched, and the old version runs on.
 */

/** The hours to wait after the 1st, 2nd and 3rd failure of one push; after the 4th it waits for a newer push. */
export const RETRY_AFTER_HOURS = [1, 6, 24] as const;

const HOUR_MS = 3_600_000;

/** The last push whose install failed, as the updater's state keeps it. */
export interface FailedInstall {
  buildId: string;
  serial: number;
  /** Failures of this push in a row. */
  failures: number;
  /** When it may be tried again (ms since the epoch); null: only a newer push is. */
  nextAttemptAt: number | null;
}

export interface PushRef {
  buildId: string;
  serial: number;
}

/** The record after `push` failed at `now`, counting on from `previous` when it is the same push. */
export function afterFailure(previous: FailedInstall | null, push: PushRef, now: number): FailedInstall {
  const failures = previous?.serial === push.serial ? previous.failures + 1 : 1;
  const hours = RETRY_AFTER_HOURS[failures - 1];
  return { buildId: push.buildId, serial: push.serial, failures, nextAttemptAt: hours === undefined ? null : now + hours * HOUR_MS };
}

/** Undefined when `push` may be installed at `now`; else until when it waits (null: until a newer push). */
export function backingOff(failed: FailedInstall | null, push: PushRef, now: number): { until: number | null } | undefined {
  if (!failed || push.serial > failed.serial) return undefined;
  if (failed.nextAttemptAt !== null && now >= failed.nextAttemptAt) return undefined;
  return { until: failed.nextAttemptAt };
}
