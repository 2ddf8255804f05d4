import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { registerDeveloper, type TestDeveloper } from '../support/fixtures.js';
import { client, type ApiResponse, type Call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

const WINDOW_MS = 60_000;

// Two processes behind one load balancer: separate servers, one database.
let first: TestServer;
let second: TestServer;
let callFirst: Call;
let callSecond: Call;
let dev: TestDeveloper;

beforeAll(async () => {
  // Processes behind one load balancer share the master key, so each accepts the other's tokens.
  const env = { LATCHKEY_MASTER_KEY: randomBytes(32).toString('base64') };
  first = await startTestServer({ realRateLimits: true, env });
  second = await startTestServer({ realRateLimits: true, env, database: first.database });
  callFirst = client(first.url);
  callSecond = client(second.url);
  dev = await registerDeveloper(callFirst);
});
afterAll(async () => {
  await second.close();
  await first.close();
});

/**
 * Moves both servers' clocks a little past the start of the next fixed window: every counter starts
 * from zero, and the test has most of a minute before the window could roll over under it.
 */
function startNewWindow(): void {
  first.clock.enterFreshWindow(WINDOW_MS);
  second.clock.offsetMs = first.clock.offsetMs;
}
beforeEach(startNewWindow);

function rateLimitHeaders(res: ApiResponse) {
  return {
    limit: Number(res.headers.get('ratelimit-limit')),
    remaining: Number(res.headers.get('ratelimit-remaining')),
    reset: Number(res.headers.get('ratelimit-reset')),
  };
}

/** Sends `count` requests one after another and returns the statuses. */
async function repeat(count: number, send: () => Promise<ApiResponse>): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push((await send()).status);
  return statuses;
}

function expectRateLimited(res: ApiResponse): void {
  expectError(res, 429, 'RATE_LIMITED');
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(retryAfter).toBe(rateLimitHeaders(res).reset);
  expect(rateLimitHeaders(res).remaining).toBe(0);
}

const listApps = (call: Call, who: TestDeveloper = dev) => call('GET', '/v1/apps', { token: who.accessToken });
const badLogin = (call: Call) => call('POST', '/v1/auth/login', { body: { email: dev.email, password: 'not the password' } });
/** An authentication-class request that costs no password hashing. */
const me = (call: Call) => call('GET', '/v1/auth/me', { token: dev.accessToken });

describe('rate-limit headers', () => {
  it('come with successes and counts down', async () => {
    const one = rateLimitHeaders(await listApps(callFirst));
    const two = rateLimitHeaders(await listApps(callFirst));
    expect(one.limit).toBe(60);
    expect(one.remaining).toBe(59);
    expect(two.remaining).toBe(58);
    expect(one.reset).toBeGreaterThanOrEqual(1);
    expect(one.reset).toBeLessThanOrEqual(60);
  });

  it('come with errors too', async () => {
    for (const res of [await callFirst('GET', '/v1/apps'), await callFirst('GET', '/v1/apps?limit=0', { token: dev.accessToken }), await badLogin(callFirst)]) {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.headers.get('ratelimit-limit')).toMatch(/^\d+$/);
      expect(res.headers.get('ratelimit-remaining')).toMatch(/^\d+$/);
      expect(res.headers.get('ratelimit-reset')).toMatch(/^\d+$/);
    }
  });

  it('come with requests no operation handles, counted as general traffic', async () => {
    const unknownRoute = await callFirst('GET', '/v1/nothing-here');
    const wrongMethod = await callFirst('PATCH', '/v1/apps');
    expect([unknownRoute.status, wrongMethod.status]).toEqual([404, 405]);
    expect(rateLimitHeaders(unknownRoute)).toMatchObject({ limit: 100, remaining: 99 });
    expect(rateLimitHeaders(wrongMethod)).toMatchObject({ limit: 100, remaining: 98 });
  });
});

describe('limits per class', () => {
  it('authentication endpoints allow 10 requests a minute; the 11th is a 429 with Retry-After', async () => {
    expect(await repeat(10, () => badLogin(callFirst))).toEqual(Array(10).fill(401));
    expectRateLimited(await badLogin(callFirst));
    // The refusal is about the rate, not the credentials: a correct login is refused as well.
    expectRateLimited(await callFirst('POST', '/v1/auth/login', { body: { email: dev.email, password: dev.password } }));
  });

  it('app management allows 60 requests a minute per developer', async () => {
    const other = await registerDeveloper(callFirst);
    expect(await repeat(60, () => listApps(callFirst))).toEqual(Array(60).fill(200));
    expectRateLimited(await listApps(callFirst));
    // Counted per developer: someone else is not slowed down.
    expect((await listApps(callFirst, other)).status).toBe(200);
  });

  it('a new window starts the count again', async () => {
    expect(await repeat(10, () => me(callFirst))).toEqual(Array(10).fill(200));
    expectRateLimited(await me(callFirst));
    first.clock.advance(WINDOW_MS);
    second.clock.advance(WINDOW_MS);
    const res = await me(callFirst);
    expect(res.status).toBe(200);
    expect(rateLimitHeaders(res).remaining).toBe(9);
  });
});

describe('several server processes', () => {
  it('share one count through the database', async () => {
    const statuses = await repeat(10, () => listApps(callFirst));
    statuses.push(...(await repeat(50, () => listApps(callSecond))));
    expect(statuses).toEqual(Array(60).fill(200));
    expectRateLimited(await listApps(callFirst));
    expectRateLimited(await listApps(callSecond));
  });

  it('share the authentication limit too', async () => {
    expect(await repeat(5, () => me(callFirst))).toEqual(Array(5).fill(200));
    expect(await repeat(5, () => me(callSecond))).toEqual(Array(5).fill(200));
    expectRateLimited(await me(callSecond));
    expectRateLimited(await me(callFirst));
  });
});

describe('guessing from many addresses', () => {
  const SIGN_IN_WINDOW_MS = 15 * 60_000;
  let proxied: TestServer;
  let call: Call;
  beforeAll(async () => {
    // Behind a proxy the server trusts, each request says its client's address.
    proxied = await startTestServer({ realRateLimits: true, env: { LATCHKEY_TRUST_PROXY: 'true' } });
    call = client(proxied.url);
  });
  afterAll(() => proxied.close());
  const from = (address: string) => ({ 'x-forwarded-for': address });

  it('holds one email to 20 sign-in attempts in 15 minutes, whatever addresses they come from; other emails are not slowed', async () => {
    proxied.clock.enterFreshWindow(SIGN_IN_WINDOW_MS);
    const victim = await registerDeveloper(call);
    const attempt = (address: string, email = victim.email, password = 'not the password') => call('POST', '/v1/auth/login', { body: { email, password }, headers: from(address) });
    // registerDeveloper signed in once: 19 more attempts, each from an address of its own.
    let host = 0;
    expect(await repeat(18, () => attempt(`198.51.100.${++host}`))).toEqual(Array(18).fill(401));
    // The answer's RateLimit headers are its address's count, not the email's: nobody watches another's count go down.
    expect(rateLimitHeaders(await attempt('198.51.100.250'))).toMatchObject({ limit: 10, remaining: 9 });
    for (const refused of [await attempt('203.0.113.77'), await attempt('203.0.113.78', victim.email, victim.password)]) {
      // Even the right password, from a new address: the count is the email's, until its window ends.
      expectError(refused, 429, 'RATE_LIMITED');
      expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(SIGN_IN_WINDOW_MS / 1000);
      // Refused by the email's count: the headers say so.
      expect(rateLimitHeaders(refused)).toMatchObject({ limit: 20, remaining: 0 });
    }
    expect((await attempt('203.0.113.79', `someone-else-${randomBytes(4).toString('hex')}@example.com`)).status).toBe(401);
    // Fifteen minutes on, the email may sign in again.
    proxied.clock.advance(SIGN_IN_WINDOW_MS);
    expect((await attempt('203.0.113.80', victim.email, victim.password)).status).toBe(200);
  });

  it('counts an IPv6 client as its /64: rotating addresses inside it does not reset the limit', async () => {
    proxied.clock.enterFreshWindow(WINDOW_MS);
    // Sign-in attempts for emails of no account: counted per address (block), not per account.
    const badLoginFrom = (address: string) =>
      call('POST', '/v1/auth/login', { body: { email: `nobody-${randomBytes(4).toString('hex')}@example.com`, password: 'guess' }, headers: from(address) });
    let host = 0;
    expect(await repeat(10, () => badLoginFrom(`2001:db8:1:2::${(++host).toString(16)}`))).toEqual(Array(10).fill(401));
    expectRateLimited(await badLoginFrom('2001:db8:1:2:ffff:ffff:ffff:fffe'));
    expect((await badLoginFrom('2001:db8:1:3::1')).status).toBe(401);
  });
});
