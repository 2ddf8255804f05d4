import { afterEach, describe, expect, it, vi } from 'vitest';
import { evaluateGrace, type GraceInput } from '../../runtime-sdk/grace/evaluate.js';
import { nextRefreshDelay, RefreshScheduler, type RefreshOutcome } from '../../runtime-sdk/refresh/scheduler.js';
import { HOUR } from './support/fake-clock.js';

const MINUTE = 60_000;
const T0 = Date.UTC(2030, 0, 1);
const iat = T0 / 1000;

/** A token issued at T0 with 72 h of grace, last contact at T0, same clock as the server. */
function input(overrides: Partial<GraceInput> & { licenseExpiresAt?: number | null; graceHours?: number; exp?: number }): GraceInput {
  const graceHours = overrides.graceHours ?? 72;
  return {
    now: T0,
    claims: {
      iat,
      exp: overrides.exp ?? iat + graceHours * 3600,
      license_expires_at: overrides.licenseExpiresAt ?? null,
      policy: { device_limit: 2, offline_grace_hours: graceHours },
    },
    serverSkewMs: 0,
    highWaterAt: T0,
    toleranceMs: 5 * MINUTE,
    freshForMs: 2 * HOUR,
    ...overrides,
  };
}

describe('offline grace and clock tampering (pure function of clock, token, measured skew)', () => {
  const cases: { name: string; input: GraceInput; state: string; reason: string | null; graceEndsAt?: number }[] = [
    { name: 'just activated', input: input({}), state: 'valid', reason: null, graceEndsAt: T0 + 72 * HOUR },
    { name: 'within the fresh window', input: input({ now: T0 + 2 * HOUR }), state: 'valid', reason: null },
    // The fresh window counts from the end of the token's second (iat is whole seconds).
    { name: 'offline past the fresh window', input: input({ now: T0 + 2 * HOUR + 1_001 }), state: 'grace', reason: 'offline' },
    { name: 'last minute of grace', input: input({ now: T0 + 72 * HOUR - 1 }), state: 'grace', reason: 'offline' },
    { name: 'grace exhausted exactly', input: input({ now: T0 + 72 * HOUR }), state: 'expired', reason: 'grace_exhausted' },
    { name: 'long after grace', input: input({ now: T0 + 30 * 24 * HOUR }), state: 'expired', reason: 'grace_exhausted' },
    { name: 'policy grace of 1 hour', input: input({ graceHours: 1, now: T0 + HOUR + 1 }), state: 'expired', reason: 'grace_exhausted', graceEndsAt: T0 + HOUR },
    {
      name: 'signed exp earlier than the policy caps grace',
      input: input({ exp: iat + 10 * 3600, now: T0 + 11 * HOUR }),
      state: 'expired',
      reason: 'grace_exhausted',
      graceEndsAt: T0 + 10 * HOUR,
    },
    { name: 'license expiry passed while offline', input: input({ licenseExpiresAt: iat + 3600, now: T0 + HOUR }), state: 'expired', reason: 'license_expired' },
    { name: 'license expiry still ahead', input: input({ licenseExpiresAt: iat + 3600, now: T0 + HOUR - 1000 }), state: 'valid', reason: null },
    { name: 'clock back past the high-water mark', input: input({ now: T0 + 10 * HOUR, highWaterAt: T0 + 20 * HOUR }), state: 'tampered', reason: 'clock_rollback' },
    { name: 'clock back within tolerance', input: input({ now: T0 + 20 * HOUR - 4 * MINUTE, highWaterAt: T0 + 20 * HOUR }), state: 'grace', reason: 'offline' },
    { name: 'clock back just beyond tolerance', input: input({ now: T0 + 20 * HOUR - 5 * MINUTE - 1, highWaterAt: T0 + 20 * HOUR }), state: 'tampered', reason: 'clock_rollback' },
    { name: 'clock before the token was issued', input: input({ now: T0 - HOUR, highWaterAt: T0 - 2 * HOUR }), state: 'tampered', reason: 'clock_rollback' },
    {
      name: 'a local clock 3 h slow is skew, not tampering',
      input: input({ now: T0 - 3 * HOUR + MINUTE, highWaterAt: T0 - 3 * HOUR, serverSkewMs: 3 * HOUR }),
      state: 'valid',
      reason: null,
      // Grace runs to the signed exp: the saved skew moves its end by the tolerance at most.
      graceEndsAt: T0 + 72 * HOUR - 5 * MINUTE,
    },
    {
      name: 'a slow clock ends grace at the signed exp, less the tolerance',
      input: input({ now: T0 + 72 * HOUR - 5 * MINUTE, highWaterAt: T0 - 3 * HOUR, serverSkewMs: 3 * HOUR }),
      state: 'expired',
      reason: 'grace_exhausted',
    },
    { name: 'rollback wins over expiry', input: input({ now: T0 + 100 * HOUR, highWaterAt: T0 + 200 * HOUR }), state: 'tampered', reason: 'clock_rollback' },
  ];

  it.each(cases)('$name -> $state', ({ input: given, state, reason, graceEndsAt }) => {
    const outcome = evaluateGrace(given);
    expect(outcome.state).toBe(state);
    expect(outcome.reason).toBe(reason);
    if (graceEndsAt !== undefined) expect(outcome.graceEndsAt).toBe(graceEndsAt);
  });
});

describe('background refresh timing', () => {
  const timing = { intervalMs: HOUR, backoffBaseMs: 30_000, jitterRatio: 0.1 };

  it.each([
    { failures: 0, random: 0.5, delay: HOUR },
    { failures: 0, random: 0, delay: 0.9 * HOUR },
    { failures: 0, random: 1, delay: 1.1 * HOUR },
    { failures: 1, random: 0.5, delay: 30_000 },
    { failures: 2, random: 0.5, delay: 60_000 },
    { failures: 4, random: 0.5, delay: 240_000 },
    { failures: 20, random: 0.5, delay: HOUR },
  ])('after $failures failures (random $random) waits $delay ms', ({ failures, random, delay }) => {
    expect(nextRefreshDelay(timing, failures, () => random)).toBe(Math.round(delay));
  });
});

describe('refresh scheduler (fake timers)', () => {
  afterEach(() => vi.useRealTimers());

  it('backs off 20, 40, 80 ms while offline, returns to the interval after a success, stops when told', async () => {
    vi.useFakeTimers();
    const outcomes: RefreshOutcome[] = ['retry', 'retry', 'retry', 'ok', 'stop'];
    const firedAt: number[] = [];
    const scheduler = new RefreshScheduler({ intervalMs: 1000, backoffBaseMs: 20, jitterRatio: 0 }, async () => {
      firedAt.push(Date.now());
      return outcomes.shift()!;
    });
    const t0 = Date.now();
    scheduler.schedule(0);
    await vi.advanceTimersByTimeAsync(5000);
    expect(firedAt.map((t) => t - t0)).toEqual([0, 20, 60, 140, 1140]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("never holds the process: its timer is unref'd", () => {
    const scheduler = new RefreshScheduler({ intervalMs: 1000, backoffBaseMs: 20, jitterRatio: 0 }, async () => 'ok');
    const spy = vi.spyOn(globalThis, 'setTimeout');
    scheduler.schedule(10);
    const timer = spy.mock.results[0]!.value as NodeJS.Timeout;
    expect(timer.hasRef()).toBe(false);
    scheduler.stop();
    spy.mockRestore();
  });
});
