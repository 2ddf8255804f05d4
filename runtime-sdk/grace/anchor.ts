/**
 * Whether the times a cache holds agree with the signed token they were saved with. At a grant the
 * SDK saves `lastOnlineAt` (local receipt time) and `serverSkewMs = iat * 1000 - lastOnlineAt`, so the
 * two always add up to the token's issue time; the high-water mark only ever rises from there. A
 * cache whose times break that was re-sealed by hand (to move the last contact later): refused.
 */
import type { RuntimeTokenClaims } from '../protocol.js';

/** A grant whose issue time is further than this from the local clock is refused: replay or a broken clock. */
export const MAX_CLOCK_SKEW_MS = 24 * 3_600_000;

export interface SavedTimes {
  lastOnlineAt: number;
  serverSkewMs: number;
  highWaterAt: number;
}

export function timesMatchToken(times: SavedTimes, claims: Pick<RuntimeTokenClaims, 'iat'>): boolean {
  return times.lastOnlineAt + times.serverSkewMs === claims.iat * 1000 && Math.abs(times.serverSkewMs) <= MAX_CLOCK_SKEW_MS && times.highWaterAt >= times.lastOnlineAt;
}
