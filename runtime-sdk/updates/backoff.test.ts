import { describe, expect, it } from 'vitest';
import { afterFailure, backingOff, type FailedInstall } from './backoff.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 0, 1);
const push = { buildId: 'bld_v2', serial: 7 };

/** The record after `n` failures of `push`, each at the moment its wait ended. */
function failedTimes(n: number): FailedInstall {
  let record: FailedInstall | null = null;
  let now = T0;
  for (let i = 0; i < n; i++) {
    record = afterFailure(record, push, now);
    now = record.nextAttemptAt ?? now;
  }
  return record!;
}

describe('the back-off of a failed install', () => {
  it('waits 1, 6 and 24 hours after the first three failures of a push, then for a newer push', () => {
    expect(afterFailure(null, push, T0)).toEqual({ buildId: 'bld_v2', serial: 7, failures: 1, nextAttemptAt: T0 + HOUR });
    expect(afterFailure(failedTimes(1), push, T0 + HOUR)).toMatchObject({ failures: 2, nextAttemptAt: T0 + 7 * HOUR });
    expect(afterFailure(failedTimes(2), push, T0 + 7 * HOUR)).toMatchObject({ failures: 3, nextAttemptAt: T0 + 31 * HOUR });
    expect(afterFailure(failedTimes(3), push, T0 + 31 * HOUR)).toMatchObject({ failures: 4, nextAttemptAt: null });
  });

  it('is tried again only once its wait is over', () => {
    const failed = failedTimes(1);
    expect(backingOff(failed, push, T0)).toEqual({ until: T0 + HOUR });
    expect(backingOff(failed, push, T0 + HOUR - 1)).toEqual({ until: T0 + HOUR });
    expect(backingOff(failed, push, T0 + HOUR)).toBeUndefined();
  });

  it('after the fourth failure the push is never tried again, a newer push at once', () => {
    const failed = failedTimes(4);
    expect(backingOff(failed, push, T0 + 10_000 * HOUR)).toEqual({ until: null });
    expect(backingOff(failed, { buildId: 'bld_v2', serial: 8 }, T0)).toBeUndefined();
    expect(backingOff(failed, { buildId: 'bld_v3', serial: 9 }, T0)).toBeUndefined();
  });

  it('a failure of a newer push counts from one again', () => {
    expect(afterFailure(failedTimes(4), { buildId: 'bld_v3', serial: 9 }, T0)).toEqual({ buildId: 'bld_v3', serial: 9, failures: 1, nextAttemptAt: T0 + HOUR });
  });

  it('nothing failed: any push may be installed', () => {
    expect(backingOff(null, push, T0)).toBeUndefined();
  });
});
