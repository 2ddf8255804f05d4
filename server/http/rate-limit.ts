import type Koa from 'koa';
import type { Clock } from '../clock.js';
import { sha256Hex } from '../crypto/secrets.js';
import type { Db } from '../db/knex.js';
import { rateBlockOf } from './client-address.js';
import { createProcessCounters } from './process-counters.js';
import { createLeasedCounters } from './rate-lease.js';
import { enforce, fixedWindow, type RateRefusal, type ResponseHeaders, type RateRule } from './rate-window.js';

/**
 * The class of each operation (docs/contract.md's Limits table), counted per developer behind any of their
 * credentials, else per address, in PostgreSQL so the limits hold across processes.
 * `runtime`: activation, refresh and the other calls of installed apps are limited per license
 * (LICENSE_LIMITS, counted by the statement that finds the license); in front of them only this
 * coarse per-address guard, counted in each process's memory: it costs no round trip, and an
 * office of many seats behind one address is not held to one shared count.
 */
export const RATE_LIMITS = {
  auth: { limit: 10, windowSeconds: 60, counted: 'database' },
  apps: { limit: 60, windowSeconds: 60, counted: 'database' },
  builds: { limit: 30, windowSeconds: 60, counted: 'database' },
  general: { limit: 100, windowSeconds: 60, counted: 'database' },
  runtime: { limit: 600, windowSeconds: 60, counted: 'process' },
  /**
   * The entitlement webhook and its companion endpoints, per developer (docs/contract.md names no number). Generous, and
   * counted in each process's memory: a broker does not retry a 4xx, so a 429 would drop a store's decision.
   */
  entitlements: { limit: 1200, windowSeconds: 60, counted: 'process' },
  /** POST /v1/marketplace/licenses, per developer. */
  marketplace: { limit: 60, windowSeconds: 60, counted: 'database' },
  /** Redemption attempts (the public endpoint and the hosted page's form together), per address; every attempt counts. */
  redemption: {
    limit: 5,
    windowSeconds: 60,
    counted: 'database',
    refusal: { code: 'REDEMPTION_RATE_LIMITED', detail: 'Rate limit exceeded: too many redemption attempts; retry after 60 seconds', retryAfterSeconds: 60 },
  },
  /**
   * Liveness and readiness, per address, counted in each process's memory: no database round trip
   * (readiness must answer while the database is away), and a balancer polling every second uses 60.
   */
  health: { limit: 1200, windowSeconds: 60, counted: 'process' },
  /**
   * The portal's own answers (its page, files and session calls), per address, in each process's
   * memory: a page load fetches a score of files. What the portal forwards to the API counts in the
   * API operation's class too, whose headers its answer carries.
   */
  portal: { limit: 1200, windowSeconds: 60, counted: 'process' },
  /** Password reset requests per email address (besides the `auth` limit of the requester's address). */
  password_reset: { limit: 5, windowSeconds: 3600, counted: 'database' },
  /**
   * Sign-in attempts per email address, successful or not, from any address (besides the `auth`
   * limit of each): guessing one account's password from many addresses is held to this too.
   */
  sign_in: { limit: 20, windowSeconds: 900, counted: 'database' },
} as const satisfies Record<string, RateRule & { counted: 'database' | 'process'; refusal?: RateRefusal }>;

export type RateLimitClass = keyof typeof RATE_LIMITS;

/** Who a request counts against: the developer behind any of their credentials, else the address; or an email address a request names (kept as its hash). */
export const rateSubject = {
  developer: (developerId: string) => `dev:${developerId}`,
  /** An IPv6 client counts as its /64 (rateBlockOf). */
  address: (ip: string) => `ip:${rateBlockOf(ip)}`,
  email: (email: string) => `email:${sha256Hex(email.trim().toLowerCase())}`,
};

export interface RateLimiter {
  /** Counts one request of class `cls` by `subject`; sets the RateLimit headers; throws 429 past the limit. */
  admit(response: ResponseHeaders, cls: RateLimitClass, subject: string): Promise<void>;
  /**
   * Counts a second limit of the same request (an email address's, besides the requester's): its
   * RateLimit headers are set only when it refuses. Otherwise the answer keeps describing the
   * requester's own count, and nobody can watch another subject's count go down.
   */
  admitAlso(response: ResponseHeaders, cls: RateLimitClass, subject: string): Promise<void>;
  /** Forgets windows that ended long ago. */
  sweep(): Promise<void>;
}

export function createRateLimiter(db: Db, clock: Clock, multiplier: number): RateLimiter {
  const inDatabase = createLeasedCounters(db);
  const inProcess = createProcessCounters();
  const limiter: RateLimiter = {
    async admit(response, cls, subject) {
      const rule = RATE_LIMITS[cls];
      const now = clock.now();
      const window = fixedWindow(rule, now, multiplier);
      const bucket = `${cls}:${subject}`;
      if (rule.counted === 'process') {
        enforce(response, window.decide(inProcess.count(bucket, window, now.getTime())));
        return;
      }
      const { allowed, remaining } = await inDatabase.take(bucket, window, now.getTime());
      enforce(response, { allowed, remaining, limit: window.limit, resetSeconds: window.resetSeconds }, 'refusal' in rule ? rule.refusal : undefined);
    },
    async admitAlso(response, cls, subject) {
      const held = new Map<string, string>();
      try {
        await limiter.admit({ set: (name, value) => void held.set(name, value) }, cls, subject);
      } catch (err) {
        for (const [name, value] of held) response.set(name, value);
        throw err;
      }
    },
    async sweep() {
      await db.raw(`DELETE FROM rate_limit_hits WHERE window_start < ?`, [new Date(clock.now().getTime() - 86_400_000)]);
    },
  };
  return limiter;
}

/**
 * Requests that no operation handled (unknown routes, wrong methods) count as general traffic of
 * their address too: every response carries the RateLimit headers, and probing is not free.
 * Placed before the routers; operations and the ops endpoints are left alone.
 */
export function limitUnhandledRequests(rateLimiter: RateLimiter): Koa.Middleware {
  return async (ctx, next) => {
    await next();
    if (ctx.state.routePath === undefined && ctx.body == null) await rateLimiter.admit(ctx, 'general', rateSubject.address(ctx.ip));
  };
}
