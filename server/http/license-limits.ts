import type { Clock } from '../clock.js';
import { RATE_LIMITS } from './rate-limit.js';
import { fixedWindow, rateLimited, type FixedWindow, type RateDecision, type RateRule } from './rate-window.js';

/**
 * Limits per license of the runtime routes (`rateLimit: 'runtime'`), counted by the statement that
 * finds the license anyway: one round trip for both, held across processes, and a whole office
 * behind one address is limited license by license, not as one. A license's bucket is the limit's
 * name, a colon and the license id. `per: 'seat'` multiplies the limit by the license's device limit.
 */
export const LICENSE_LIMITS = {
  /** docs/contract.md: 5 activation requests per 10 minutes per license, re-activations included. */
  activation: { limit: 5, windowSeconds: 600, per: 'license' },
  /**
   * Ours: 60 token refreshes per 10 minutes per seat. The SDK refreshes hourly (and at start), so
   * only a runaway or scripted client meets it; a refused refresh leaves the app on its cached token.
   */
  refresh: { limit: 60, windowSeconds: 600, per: 'seat' },
  /**
   * Ours: 30 update checks per 10 minutes per seat. The SDK checks once per launch, so only a
   * runaway or scripted client meets it; a refused check is simply tried again at the next launch.
   */
  update_check: { limit: 30, windowSeconds: 600, per: 'seat' },
  /**
   * Ours: 30 adoption reports per 10 minutes per seat. The SDK sends one per installed or skipped
   * build, at a start; a refused report stays pending on the device and is sent at the next start.
   */
  update_report: { limit: 30, windowSeconds: 600, per: 'seat' },
} as const satisfies Record<string, RateRule & { per: 'license' | 'seat' }>;

export type LicenseLimitName = keyof typeof LICENSE_LIMITS;

/** A limit as route descriptions state it: `60 per 10 minutes per seat (device limit)`. */
export function describeLicenseLimit(name: LicenseLimitName): string {
  const rule = LICENSE_LIMITS[name];
  return `${rule.limit} per ${rule.windowSeconds / 60} minutes per ${rule.per === 'seat' ? 'seat (device limit)' : 'license'}`;
}

/** How every runtime route is limited, for its description. */
export const RUNTIME_LIMITS_DESCRIPTION =
  "Limited per license, not per address (many seats may share one). RateLimit headers describe the license's limit once the key or " +
  `token names a usable license, else the per-process guard of ${RATE_LIMITS.runtime.limit} requests per minute per address.`;

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
 * Reports the decision on a license's count (the response's RateLimit headers), then refuses past
 * the limit with 429 and Retry-After. `requests` names what was counted, for the detail.
 */
export function enforceLicenseLimit(decision: RateDecision, report: RateLimitReport, requests: string): void {
  report(decision);
  if (!decision.allowed) throw rateLimited(decision.resetSeconds, `Too many ${requests} of this license; retry in ${decision.resetSeconds} seconds`);
}

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
