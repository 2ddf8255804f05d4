/** Time behind a seam so rules that depend on it (expiry, windows, grace) test on a fake clock. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
