import { RequestError, type ErrorCode } from '../errors.js';

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

/** The fixed window a rule is in at one moment; windows are aligned to the clock, so every process agrees on them. */
export interface FixedWindow {
  start: Date;
  /** When the window ends, in epoch milliseconds. */
  endsAt: number;
  /** The rule's limit times the configured multiplier, at least 1. */
  limit: number;
  resetSeconds: number;
  /** The decision on a count taken in this window; `units` multiplies the limit (a limit per seat). */
  decide(hits: number, units?: number): RateDecision;
}

export function fixedWindow(rule: RateRule, now: Date, multiplier: number): FixedWindow {
  const limit = Math.max(1, Math.floor(rule.limit * multiplier));
  const windowMs = rule.windowSeconds * 1000;
  const nowMs = now.getTime();
  const start = Math.floor(nowMs / windowMs) * windowMs;
  const resetSeconds = Math.max(1, Math.ceil((start + windowMs - nowMs) / 1000));
  // Method shorthand: tsx (esbuild keepNames) wraps every arrow function it creates in a naming
  // call, which showed in profiles of the request path.
  return {
    start: new Date(start),
    endsAt: start + windowMs,
    limit,
    resetSeconds,
    decide(hits, units = 1) {
      const scaled = limit * units;
      return { allowed: hits <= scaled, limit: scaled, remaining: Math.max(0, scaled - hits), resetSeconds };
    },
  };
}

/** Where a response's headers are set: a Koa context, or the runtime lane's answer (runtime-lane.ts). */
export interface ResponseHeaders {
  set(name: string, value: string): void;
}

export function setRateLimitHeaders(response: ResponseHeaders, decision: RateDecision): void {
  response.set('RateLimit-Limit', String(decision.limit));
  response.set('RateLimit-Remaining', String(decision.remaining));
  response.set('RateLimit-Reset', String(decision.resetSeconds));
}

/** How a class answers past its limit, when not with the generic RATE_LIMITED and the window's reset. */
export interface RateRefusal {
  code: ErrorCode;
  detail: string;
  /** A fixed `Retry-After` (docs/contract.md's "retry after 60 seconds") instead of the seconds left in the window. */
  retryAfterSeconds: number;
}

/** Sets the RateLimit headers of `decision`; throws the 429 when it refuses. */
export function enforce(response: ResponseHeaders, decision: RateDecision, refusal?: RateRefusal): void {
  setRateLimitHeaders(response, decision);
  if (!decision.allowed) {
    throw refusal ? rateLimited(refusal.retryAfterSeconds, refusal.detail, refusal.code) : rateLimited(decision.resetSeconds);
  }
}

export function rateLimited(retryAfterSeconds: number, detail = 'Too many requests; retry later', code: ErrorCode = 'RATE_LIMITED'): RequestError {
  return new RequestError(code, detail, { headers: { 'Retry-After': String(retryAfterSeconds) } });
}
