import { describe, expect, it } from 'vitest';
import { evaluateGrace, type GraceInput } from './evaluate.js';

const HOUR = 3_600_000;
const MINUTE = 60_000;
const T0 = Date.UTC(2030, 0, 1);

/** A token issued at T0 with 72 h of grace, received at T0 on a clock that agrees with the server. */
const base: GraceInput = {
  now: T0,
  claims: { iat: T0 / 1000, exp: T0 / 1000 + 72 * 3600, license_expires_at: null, policy: { device_limit: 1, offline_grace_hours: 72 } },
  serverSkewMs: 0,
  highWaterAt: T0,
  toleranceMs: 5 * MINUTE,
  freshForMs: 2 * HOUR,
};

describe('grace anchored to the signed token', () => {
  it('a saved skew claiming a later last contact moves the end of grace by the tolerance at most', () => {
    // What a re-sealed cache claims: last online 20 h after the token was issued (skew -20 h).
    const stretched = evaluateGrace({ ...base, now: T0 + 80 * HOUR, serverSkewMs: -20 * HOUR, highWaterAt: T0 + 80 * HOUR });
    expect(stretched).toMatchObject({ state: 'expired', reason: 'grace_exhausted', graceEndsAt: T0 + 72 * HOUR + 5 * MINUTE });
  });

  it('a token issued late in its second is fresh right away: iat counts whole seconds', () => {
    const now = T0 + 900;
    expect(evaluateGrace({ ...base, now, highWaterAt: now, freshForMs: 100 }).state).toBe('valid');
    expect(evaluateGrace({ ...base, now: T0 + 1_100, highWaterAt: T0 + 1_100, freshForMs: 100 }).state).toBe('valid');
    expect(evaluateGrace({ ...base, now: T0 + 1_101, highWaterAt: T0 + 1_101, freshForMs: 100 }).state).toBe('grace');
  });

  it('the high-water mark refuses a clock set back, whatever the token says', () => {
    expect(evaluateGrace({ ...base, now: T0 + HOUR, highWaterAt: T0 + 50 * HOUR }).state).toBe('tampered');
    expect(evaluateGrace({ ...base, now: T0 + 50 * HOUR - 4 * MINUTE, highWaterAt: T0 + 50 * HOUR }).state).toBe('grace');
  });

  it('a clock within the tolerance maps the token exactly', () => {
    expect(evaluateGrace({ ...base, serverSkewMs: 2 * MINUTE, now: T0 }).graceEndsAt).toBe(T0 + 72 * HOUR - 2 * MINUTE);
  });
});
