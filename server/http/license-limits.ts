import type { Clock } from '../clock.js';
import { fixedWindow, type FixedWindow, type RateDecision, type RateRule } from './rate-window.js';

/**
 * Limits per license of the runtime routes (`rateLimit: 'runtime'`), counted by the statement that
 * finds the license anyway: one round trip for both, held across processes, and a whole office
 * behind one address is limited license by license, not as one. A license's bucket is the limit's
 * name, a colon and the license id. `per: 'seat'` multiplies the limit by the license's device limit.
 */
export const LICENSE_LIMITS = {
  /** SPEC.md: 5 activation requests per 10 minutes per license, re-activations included. */
  activation: { limit: 5, windowSeconds: 600, per: 'license' },
  /**
   * Ours: 60 token refreshes per 10 minutes per seat. The SDK refreshes hourly (and at start), so
   * only a runaway or scripted client meets it; a refused refresh leaves the app on its cached token.
   */
  refresh: { limit: 60, windowSeconds: 600, per: 'seat' },
} as const satisfies Record<string, RateRule & { per: 'license' | 'seat' }>;

export type LicenseLimitName = keyof typeof LICENSE_LIMITS;

/** The current window of one per-license limit, as a statement counting in it needs it. */
export interface LicenseLimitWindow extends FixedWindow {
  /** Binding for `countHitCte`'s bucket: this prefix followed by the license id. */
  bucketPrefix: string;
  /** The decision on the license's count; `seats` is its device limit (used by per-seat limits). */
  decideFor(hits: number, seats: number): RateDecision;
}

export interface LicenseLimits {
  window(name: LicenseLimitName): LicenseLimitWindow;
}

const BUCKET_PREFIXES = Object.fromEntries(Object.keys(LICENSE_LIMITS).map((name) => [name, `${name}:`])) as Record<LicenseLimitName, string>;

export function createLicenseLimits(clock: Clock, multiplier: number): LicenseLimits {
  return {
    window(name) {
      const rule = LICENSE_LIMITS[name];
      const window = fixedWindow(rule, clock.now(), multiplier);
      const perSeat = rule.per === 'seat';
      return Object.assign(window, {
        bucketPrefix: BUCKET_PREFIXES[name],
        decideFor(hits: number, seats: number) {
          return window.decide(hits, perSeat ? seats : 1);
        },
      });
    },
  };
}

/** Where a service reports a limit it counted, so the response carries that limit's RateLimit headers. */
export type RateLimitReport = (decision: RateDecision) => void;

/**
 * A CTE body that counts one hit, for statements that fold the count into the lookup they run
 * anyway: `bucket` and `windowStart` are SQL expressions, `from` the row source (no row, no hit).
 * Returns the count including this hit as `hits`.
 */
export function countHitCte(parts: { bucket: string; windowStart: string; from: string }): string {
  return `INSERT INTO rate_limit_hits (bucket, window_start, hits)
          SELECT ${parts.bucket}, ${parts.windowStart}, 1 FROM ${parts.from}
          ON CONFLICT (bucket, window_start) DO UPDATE SET hits = rate_limit_hits.hits + 1
          RETURNING hits`;
}
