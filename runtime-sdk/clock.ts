/** Time behind a seam: grace, clock-rollback detection and refresh scheduling all test on a fake clock. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
