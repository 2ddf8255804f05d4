import { describe, expect, it } from 'vitest';
import { MAX_CLOCK_SKEW_MS, timesMatchToken } from './anchor.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2030, 0, 1);
const claims = { iat: T0 / 1000 };

describe('saved times against the signed issue time', () => {
  it.each([
    { name: 'as saved at the grant', times: { lastOnlineAt: T0, serverSkewMs: 0, highWaterAt: T0 + HOUR }, ok: true },
    { name: 'a clock 3 h slow, as saved', times: { lastOnlineAt: T0 - 3 * HOUR, serverSkewMs: 3 * HOUR, highWaterAt: T0 - 3 * HOUR }, ok: true },
    { name: 'a later last contact alone', times: { lastOnlineAt: T0 + 10 * HOUR, serverSkewMs: 0, highWaterAt: T0 + 10 * HOUR }, ok: false },
    {
      name: 'a later last contact with a skew to match, past the accepted skew',
      times: { lastOnlineAt: T0 + MAX_CLOCK_SKEW_MS + 1, serverSkewMs: -MAX_CLOCK_SKEW_MS - 1, highWaterAt: T0 + MAX_CLOCK_SKEW_MS + 1 },
      ok: false,
    },
    { name: 'a high-water mark below the last contact', times: { lastOnlineAt: T0, serverSkewMs: 0, highWaterAt: T0 - 1 }, ok: false },
  ])('$name -> $ok', ({ times, ok }) => {
    expect(timesMatchToken(times, claims)).toBe(ok);
  });
});
