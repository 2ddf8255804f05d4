import { describe, expect, it } from 'vitest';
import { evaluateGrace } from '../grace/evaluate.js';
import { heartbeatIntervalMs } from './scheduler.js';

const MINUTE = 60_000;
const T0 = Date.UTC(2030, 0, 1);

describe('floating license heartbeat', () => {
  it('renews at a third of the lease TTL; a node-locked license has no heartbeat', () => {
    expect(heartbeatIntervalMs({ device_limit: 10, offline_grace_hours: 72, seat_model: 'floating', lease_ttl_minutes: 15 })).toBe(5 * MINUTE);
    expect(heartbeatIntervalMs({ device_limit: 10, offline_grace_hours: 72 })).toBeNull();
    expect(heartbeatIntervalMs(undefined)).toBeNull();
  });

  it("ends grace at the lease's end (the token's exp), not after the app's grace hours", () => {
    const policy = { device_limit: 10, offline_grace_hours: 72, seat_model: 'floating' as const, lease_ttl_minutes: 15 };
    const claims = { iat: T0 / 1000, exp: T0 / 1000 + 15 * 60, license_expires_at: null, policy };
    const at = (now: number) => evaluateGrace({ now, claims, serverSkewMs: 0, highWaterAt: T0, toleranceMs: 5 * MINUTE, freshForMs: 10 * MINUTE });
    expect(at(T0 + 14 * MINUTE)).toMatchObject({ state: 'grace', graceEndsAt: T0 + 15 * MINUTE });
    expect(at(T0 + 15 * MINUTE)).toMatchObject({ state: 'expired', reason: 'grace_exhausted' });
  });
});
