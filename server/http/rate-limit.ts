import type Koa from 'koa';
import { RequestError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Db } from '../db/knex.js';

/** SPEC.md's Limits table; one entry per class of operation. */
export const RATE_LIMITS = {
  auth: { limit: 10, windowSeconds: 60 },
  apps: { limit: 60, windowSeconds: 60 },
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

export interface RateLimiter {
  /** Counts one request of `cls` for `key`; sets the RateLimit headers; throws 429 past the limit. */
  hit(ctx: Koa.Context, cls: RateLimitClass, key: string): Promise<void>;
  /** Counts one event in a named bucket under an explicit rule (services' own limits). */
  consume(bucket: string, rule: RateRule): Promise<RateDecision>;
  /** Forgets windows that ended long ago. */
  sweep(): Promise<void>;
}

/**
 * Fixed-window counters in PostgreSQL, so limits hold across every server process. One upsert per
 * request on an UNLOGGED table keeps the cost to a single round trip with no WAL flush.
 */
export function createRateLimiter(db: Db, clock: Clock, multiplier: number): RateLimiter {
  async function consume(bucket: string, rule: RateRule): Promise<RateDecision> {
    const limit = Math.max(1, Math.floor(rule.limit * multiplier));
    const windowMs = rule.windowSeconds * 1000;
    const now = clock.now().getTime();
    const windowStart = Math.floor(now / windowMs) * windowMs;
    const { rows } = await db.raw<{ rows: { hits: number }[] }>(
      `INSERT INTO rate_limit_hits (bucket, window_start, hits) VALUES (?, ?, 1)
       ON CONFLICT (bucket, window_start) DO UPDATE SET hits = rate_limit_hits.hits + 1
       RETURNING hits`,
      [bucket, new Date(windowStart)],
    );
    const hits = rows[0]!.hits;
    return {
      allowed: hits <= limit,
      limit,
      remaining: Math.max(0, limit - hits),
      resetSeconds: Math.max(1, Math.ceil((windowStart + windowMs - now) / 1000)),
    };
  }

  return {
    consume,
    async hit(ctx, cls, key) {
      const d = await consume(`${cls}:${key}`, RATE_LIMITS[cls]);
      ctx.set('RateLimit-Limit', String(d.limit));
      ctx.set('RateLimit-Remaining', String(d.remaining));
      ctx.set('RateLimit-Reset', String(d.resetSeconds));
      if (!d.allowed) throw rateLimited(d.resetSeconds);
    },
    async sweep() {
      await db.raw(`DELETE FROM rate_limit_hits WHERE window_start < ?`, [new Date(clock.now().getTime() - 86_400_000)]);
    },
  };
}

export function rateLimited(retryAfterSeconds: number, detail = 'Too many requests; retry later'): RequestError {
  return new RequestError('RATE_LIMITED', detail, { headers: { 'Retry-After': String(retryAfterSeconds) } });
}
