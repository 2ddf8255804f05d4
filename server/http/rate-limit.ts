import type Koa from 'koa';
import { RequestError } from '../errors.js';
import type { Clock } from '../clock.js';
import { hotQuery, type Db } from '../db/knex.js';

/** SPEC.md's Limits table; one entry per class of operation. */
export const RATE_LIMITS = {
  auth: { limit: 10, windowSeconds: 60 },
  apps: { limit: 60, windowSeconds: 60 },
  builds: { limit: 30, windowSeconds: 60 },
  general: { limit: 100, windowSeconds: 60 },
} as const satisfies Record<string, RateRule>;

export type RateLimitClass = keyof typeof RATE_LIMITS;

export interface RateRule {
  limit: number;
  windowSeconds: number;
}

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetSeconds: number;
}

/** Who a request counts against: the developer behind any of their credentials, else the address. */
export const rateSubject = {
  developer: (developerId: string) => `dev:${developerId}`,
  address: (ip: string) => `ip:${ip}`,
};

/** The current fixed window of one class of operation, taken once per request. */
export interface RateWindow {
  start: Date;
  /** The bucket of a subject in this class. */
  bucket(subject: string): string;
  /** Counts one request of `subject`; sets the RateLimit headers; throws 429 past the limit. */
  count(ctx: Koa.Context, subject: string): Promise<void>;
  /** Does what `count` does with a count some other statement took (see `verifyApiKey`). */
  settle(ctx: Koa.Context, hits: number): void;
}

export interface RateLimiter {
  /** Counts one request of `cls` for `key`; sets the RateLimit headers; throws 429 past the limit. */
  hit(ctx: Koa.Context, cls: RateLimitClass, key: string): Promise<void>;
  window(cls: RateLimitClass): RateWindow;
  /** Counts one event in a named bucket under an explicit rule (services' own limits). */
  consume(bucket: string, rule: RateRule): Promise<RateDecision>;
  /** The current window of `rule`, for a service that counts the hit inside a query of its own. */
  windowOf(rule: RateRule): { start: Date; decide(hits: number): RateDecision };
  /** Forgets windows that ended long ago. */
  sweep(): Promise<void>;
}

const bucketName = (cls: RateLimitClass, subject: string) => `${cls}:${subject}`;

const COUNT_HIT_SQL = countHitCte({ bucket: '$1::text', windowStart: '$2::timestamptz', from: '(VALUES (1)) AS one' });

/**
 * Fixed-window counters in PostgreSQL, so limits hold across every server process. One upsert per
 * request on an UNLOGGED table keeps the cost to a single round trip with no WAL flush.
 */
export function createRateLimiter(db: Db, clock: Clock, multiplier: number): RateLimiter {
  // Per-request objects use method shorthand: tsx (esbuild keepNames) wraps every arrow function
  // it creates in a naming call, which showed in profiles of the request path.

  /** The window `rule` is in now, and how a count in it turns into a decision. */
  function currentWindow(rule: RateRule) {
    const limit = Math.max(1, Math.floor(rule.limit * multiplier));
    const windowMs = rule.windowSeconds * 1000;
    const now = clock.now().getTime();
    const start = Math.floor(now / windowMs) * windowMs;
    return {
      start: new Date(start),
      decide(hits: number): RateDecision {
        return {
          allowed: hits <= limit,
          limit,
          remaining: Math.max(0, limit - hits),
          resetSeconds: Math.max(1, Math.ceil((start + windowMs - now) / 1000)),
        };
      },
    };
  }

  async function countHit(bucket: string, windowStart: Date): Promise<number> {
    const rows = await hotQuery<{ hits: number }>(db, COUNT_HIT_SQL, [bucket, windowStart]);
    return rows[0]!.hits;
  }

  function applyDecision(ctx: Koa.Context, d: RateDecision): void {
    ctx.set('RateLimit-Limit', String(d.limit));
    ctx.set('RateLimit-Remaining', String(d.remaining));
    ctx.set('RateLimit-Reset', String(d.resetSeconds));
    if (!d.allowed) throw rateLimited(d.resetSeconds);
  }

  function window(cls: RateLimitClass): RateWindow {
    const { start, decide } = currentWindow(RATE_LIMITS[cls]);
    return {
      start,
      bucket(subject) {
        return bucketName(cls, subject);
      },
      settle(ctx, hits) {
        applyDecision(ctx, decide(hits));
      },
      async count(ctx, subject) {
        applyDecision(ctx, decide(await countHit(bucketName(cls, subject), start)));
      },
    };
  }

  return {
    window,
    hit: (ctx, cls, key) => window(cls).count(ctx, key),
    windowOf: currentWindow,
    async consume(bucket, rule) {
      const current = currentWindow(rule);
      return current.decide(await countHit(bucket, current.start));
    },
    async sweep() {
      await db.raw(`DELETE FROM rate_limit_hits WHERE window_start < ?`, [new Date(clock.now().getTime() - 86_400_000)]);
    },
  };
}

/**
 * Requests that no operation handled (unknown routes, wrong methods) count as general traffic of
 * their address too: every response carries the RateLimit headers, and probing is not free.
 * Placed before the routers; operations and the ops endpoints are left alone.
 */
export function limitUnhandledRequests(rateLimiter: RateLimiter): Koa.Middleware {
  return async (ctx, next) => {
    await next();
    if (ctx.state.routePath === undefined && ctx.body == null) await rateLimiter.hit(ctx, 'general', rateSubject.address(ctx.ip));
  };
}

/**
 * A CTE body that counts one hit, for hot paths that fold the count into the query they run
 * anyway: `bucket` and `windowStart` are SQL expressions, `from` the row source (no row, no hit).
 */
export function countHitCte(parts: { bucket: string; windowStart: string; from: string }): string {
  return `INSERT INTO rate_limit_hits (bucket, window_start, hits)
          SELECT ${parts.bucket}, ${parts.windowStart}, 1 FROM ${parts.from}
          ON CONFLICT (bucket, window_start) DO UPDATE SET hits = rate_limit_hits.hits + 1
          RETURNING hits`;
}

export function rateLimited(retryAfterSeconds: number, detail = 'Too many requests; retry later'): RequestError {
  return new RequestError('RATE_LIMITED', detail, { headers: { 'Retry-After': String(retryAfterSeconds) } });
}
