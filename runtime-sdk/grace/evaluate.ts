/**
 * Offline grace and clock tampering as a pure function of the clock, the token and the last time the
 * license server was reached. Everything here is in milliseconds of the local clock; `serverSkewMs`
 * (server time minus local time, measured at the last contact) maps the token's server times onto it,
 * so a machine whose clock is simply off by some minutes is not mistaken for a tampered one.
 */
import type { RuntimeTokenClaims } from '../protocol.js';
import type { StatusReason } from '../status.js';

export interface GraceInput {
  now: number;
  claims: Pick<RuntimeTokenClaims, 'iat' | 'exp' | 'license_expires_at' | 'policy'>;
  lastOnlineAt: number;
  serverSkewMs: number;
  /** The latest local time this installation has seen (persisted): the clock must not go back past it. */
  highWaterAt: number;
  /** Clock adjustments smaller than this (NTP steps, skew between iat and receipt) are not tampering. */
  toleranceMs: number;
  /** How long after the last contact the license counts as `valid` rather than running on `grace`. */
  freshForMs: number;
}

export interface GraceOutcome {
  state: 'valid' | 'grace' | 'expired' | 'tampered';
  reason: Extract<StatusReason, 'offline' | 'grace_exhausted' | 'license_expired' | 'clock_rollback'> | null;
  graceEndsAt: number;
}

const HOUR_MS = 3_600_000;

export function evaluateGrace(input: GraceInput): GraceOutcome {
  const { now, claims, lastOnlineAt, serverSkewMs, highWaterAt, toleranceMs, freshForMs } = input;
  const serverNow = now + serverSkewMs;
  // The signed expiry caps the policy, so a cache can never outlive what the server granted.
  const graceEndsAt = Math.min(lastOnlineAt + claims.policy.offline_grace_hours * HOUR_MS, claims.exp * 1000 - serverSkewMs);
  const outcome = (state: GraceOutcome['state'], reason: GraceOutcome['reason']): GraceOutcome => ({ state, reason, graceEndsAt });

  if (now < highWaterAt - toleranceMs || serverNow < claims.iat * 1000 - toleranceMs) return outcome('tampered', 'clock_rollback');
  if (claims.license_expires_at !== null && serverNow >= claims.license_expires_at * 1000) return outcome('expired', 'license_expired');
  if (now >= graceEndsAt) return outcome('expired', 'grace_exhausted');
  if (now - lastOnlineAt <= freshForMs) return outcome('valid', null);
  return outcome('grace', 'offline');
}
