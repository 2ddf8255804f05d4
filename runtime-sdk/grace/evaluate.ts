/**
 * Offline grace and clock tampering as a pure function of the clock, the token and what this
 * installation measured at its last contact. Everything here is in milliseconds of the local clock.
 *
 * Grace is anchored to the signed token, not to the saved times: it runs from the token's issue time
 * `iat` (server time) to its `exp`, mapped onto the local clock with `serverSkewMs` (server time minus
 * local time, measured at the last contact). The saved skew is trusted for that mapping only up to
 * `toleranceMs`: a cache re-sealed with a later last-online time (and a skew to match) moves the end of
 * grace by at most the tolerance, while a machine whose clock is off by more sees its grace shifted by
 * its own error, never lengthened beyond it. The rollback checks use the saved skew as measured, so a
 * clock that is simply some hours off is not mistaken for a tampered one.
 */
import type { RuntimeTokenClaims } from '../protocol.js';
import type { StatusReason } from '../status.js';

export interface GraceInput {
  now: number;
  claims: Pick<RuntimeTokenClaims, 'iat' | 'exp' | 'license_expires_at' | 'policy'>;
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
/** `iat` counts whole seconds: the contact it dates happened within the second after it. */
const IAT_RESOLUTION_MS = 1_000;

export function evaluateGrace(input: GraceInput): GraceOutcome {
  const { now, claims, serverSkewMs, highWaterAt, toleranceMs, freshForMs } = input;
  const serverNow = now + serverSkewMs;
  const trustedSkew = Math.max(-toleranceMs, Math.min(toleranceMs, serverSkewMs));
  // The last contact as the signature dates it; the signed expiry caps the policy.
  const onlineAt = claims.iat * 1000 - trustedSkew;
  const graceEndsAt = Math.min(onlineAt + claims.policy.offline_grace_hours * HOUR_MS, claims.exp * 1000 - trustedSkew);
  const outcome = (state: GraceOutcome['state'], reason: GraceOutcome['reason']): GraceOutcome => ({ state, reason, graceEndsAt });

  if (now < highWaterAt - toleranceMs || serverNow < claims.iat * 1000 - toleranceMs) return outcome('tampered', 'clock_rollback');
  if (claims.license_expires_at !== null && serverNow >= claims.license_expires_at * 1000) return outcome('expired', 'license_expired');
  if (now >= graceEndsAt) return outcome('expired', 'grace_exhausted');
  // Fresh counts from the end of the token's second (grace, above, from its start, the stricter end).
  if (now - onlineAt <= freshForMs + IAT_RESOLUTION_MS) return outcome('valid', null);
  return outcome('grace', 'offline');
}
