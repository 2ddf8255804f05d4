import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, type Call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

// Test requests come from 127.0.0.1: one server lists it as its proxy, the other lists only 10.0.0.0/8.
let trusting: TestServer;
let untrusting: TestServer;
beforeAll(async () => {
  trusting = await startTestServer({ realRateLimits: true, env: { LATCHKEY_TRUST_PROXY: '127.0.0.1' } });
  untrusting = await startTestServer({ realRateLimits: true, env: { LATCHKEY_TRUST_PROXY: '10.0.0.0/8' }, database: trusting.database });
});
afterAll(async () => {
  await untrusting.close();
  await trusting.close();
});

const AUTH_LIMIT = 10;

/** Moves the server's clock just past the start of a minute: its fixed windows start from zero. */
function startNewWindow(server: TestServer): void {
  server.clock.enterFreshWindow(60_000);
}

/** A sign-in request the auth limit counts per address (an empty body: refused after counting, before any password hashing). */
const signInFrom = (call: Call, forwardedFor: string) => call('POST', '/v1/auth/login', { body: {}, headers: { 'x-forwarded-for': forwardedFor } });

describe('X-Forwarded-For', () => {
  it('is ignored from a peer that is not a trusted proxy: every request counts for the peer', async () => {
    startNewWindow(untrusting);
    const call = client(untrusting.url);
    const statuses = [];
    for (let i = 0; i <= AUTH_LIMIT; i++) statuses.push((await signInFrom(call, `198.51.100.${i + 1}`)).status);
    expect(statuses.slice(0, AUTH_LIMIT)).toEqual(Array(AUTH_LIMIT).fill(400));
    expect(statuses[AUTH_LIMIT]).toBe(429);
  });

  it('is honoured from a trusted proxy, read from the right: what the client wrote left of it counts for nothing', async () => {
    startNewWindow(trusting);
    const call = client(trusting.url);
    for (let i = 0; i < AUTH_LIMIT; i++) expect((await signInFrom(call, '203.0.113.1')).status).toBe(400);
    expect((await signInFrom(call, '203.0.113.1')).status).toBe(429);
    // Claiming another address in front of the one the proxy saw changes nothing.
    expect((await signInFrom(call, '203.0.113.2, 203.0.113.1')).status).toBe(429);
    // Another client behind the same proxy has a count of its own.
    expect((await signInFrom(call, '203.0.113.2')).status).toBe(400);
  });
});

describe('X-Forwarded-For on the runtime lane (its per-address guard, shown while no license is named)', () => {
  const remainingFor = async (server: TestServer, forwardedFor: string) => {
    const body = { license_key: 'ZZZZ-ZZZZ-ZZZZ-ZZZZ', device_fingerprint: 'a'.repeat(64), build_id: null };
    const res = await client(server.url)('POST', '/v1/licenses/activate', { body, headers: { 'x-forwarded-for': forwardedFor } });
    expect(res.status).toBe(401);
    return Number(res.headers.get('ratelimit-remaining'));
  };

  it('counts each client behind a trusted proxy on its own, and only the peer behind any other', async () => {
    startNewWindow(trusting);
    expect(await remainingFor(trusting, '198.51.100.201')).toBe(await remainingFor(trusting, '198.51.100.202'));
    startNewWindow(untrusting);
    const first = await remainingFor(untrusting, '198.51.100.203');
    expect(await remainingFor(untrusting, '198.51.100.204')).toBe(first - 1);
  });
});

describe('X-Forwarded-Proto', () => {
  const sessionCookies = async (server: TestServer) => {
    const res = await fetch(`${server.url}/portal/session`, { headers: { 'x-forwarded-proto': 'https' } });
    expect(res.status).toBe(200);
    return res.headers.getSetCookie();
  };

  it('makes cookies Secure only when a trusted proxy sends it', async () => {
    const fromTrusted = await sessionCookies(trusting);
    expect(fromTrusted.length).toBeGreaterThan(0);
    expect(fromTrusted.every((c) => /;\s*secure/i.test(c))).toBe(true);
    const fromOther = await sessionCookies(untrusting);
    expect(fromOther.length).toBeGreaterThan(0);
    expect(fromOther.some((c) => /;\s*secure/i.test(c))).toBe(false);
  });
});
