import type Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RequestError } from '../../server/errors.js';
import { createRateLimiter, RATE_LIMITS, type RateLimiter } from '../../server/http/rate-limit.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ShiftableClock } from '../support/server.js';

// Two rate limiters on one database are two server processes: each leases hits of the shared
// PostgreSQL count and spends them in memory. Tested below the HTTP layer, so a limit large
// enough for leases to be taken can be run through in a moment.

const MULTIPLIER = 50;
const LIMIT = RATE_LIMITS.general.limit * MULTIPLIER;
/** What one process may hold unspent when the other runs out: its last lease, beyond a request. */
const MOST_STRANDED_PER_PROCESS = 63;

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.drop());

/** A Koa context as far as the limiter uses it: the response headers it sets. */
function fakeContext(): Koa.Context & { headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  return { headers, set: (name: string, value: string) => (headers[name.toLowerCase()] = value) } as never;
}

/** Admits one request; whether it was let through, and the headers it got. */
async function admit(limiter: RateLimiter, subject: string): Promise<{ allowed: boolean; headers: Record<string, string> }> {
  const ctx = fakeContext();
  try {
    await limiter.admit(ctx, 'general', subject);
    return { allowed: true, headers: ctx.headers };
  } catch (err) {
    if (err instanceof RequestError && err.code === 'RATE_LIMITED') return { allowed: false, headers: ctx.headers };
    throw err;
  }
}

/** Two processes on one database, sharing one clock a little inside a fresh window. */
function twoProcesses(multiplier: number): [RateLimiter, RateLimiter] {
  const clock = new ShiftableClock();
  clock.enterFreshWindow(RATE_LIMITS.general.windowSeconds * 1000);
  return [createRateLimiter(database.db, clock, multiplier), createRateLimiter(database.db, clock, multiplier)];
}

describe('rate-limit leases across processes', () => {
  it(`never admit more than the limit (${LIMIT}) under concurrent load on two processes`, async () => {
    const processes = twoProcesses(MULTIPLIER);
    const subject = `dev:lease-${Math.random()}`;
    let allowed = 0;
    // 32 requests in flight at a time, alternating between the processes, well past the limit.
    for (let sent = 0; sent < LIMIT * 1.5; sent += 32) {
      const batch = await Promise.all(Array.from({ length: 32 }, (_, i) => admit(processes[i % 2]!, subject)));
      allowed += batch.filter((r) => r.allowed).length;
    }
    expect(allowed).toBeLessThanOrEqual(LIMIT);
    expect(allowed).toBeGreaterThanOrEqual(LIMIT - 2 * MOST_STRANDED_PER_PROCESS);
    // Both refuse from now on, each without asking the database again.
    expect((await admit(processes[0], subject)).allowed).toBe(false);
    expect((await admit(processes[1], subject)).allowed).toBe(false);
  });

  it('count exactly, request by request, when fewer than 128 hits are left (every docs/contract.md limit)', async () => {
    const processes = twoProcesses(1);
    const subject = `ip:lease-${Math.random()}`;
    const outcomes = [];
    for (let i = 0; i < RATE_LIMITS.general.limit + 2; i++) outcomes.push(await admit(processes[i % 2]!, subject));
    expect(outcomes.map((o) => o.allowed)).toEqual([...Array(RATE_LIMITS.general.limit).fill(true), false, false]);
    expect(outcomes.slice(0, 3).map((o) => o.headers['ratelimit-remaining'])).toEqual(['99', '98', '97']);
    expect(outcomes.at(-1)!.headers).toMatchObject({ 'ratelimit-limit': '100', 'ratelimit-remaining': '0' });
  });
});
