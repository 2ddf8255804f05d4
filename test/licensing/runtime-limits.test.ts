import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LICENSE_LIMITS } from '../../server/http/license-limits.js';
import { RATE_LIMITS } from '../../server/http/rate-limit.js';
import { expectError } from '../support/assertions.js';
import { createLicense, randomFingerprint } from '../support/fixtures.js';
import { client, type ApiResponse } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tenant, type Tenant } from './world.js';

// Activation and refresh are limited per license, counted by the statement that finds the
// license; in front of them only a coarse per-address guard in each process's memory. Every
// request of these tests comes from one address, as an office's seats behind one NAT do.

const REFRESH_WINDOW_MS = LICENSE_LIMITS.refresh.windowSeconds * 1000;
const DEVICE_LIMIT = 2;
const REFRESHES_PER_LICENSE = LICENSE_LIMITS.refresh.limit * DEVICE_LIMIT;

let server: TestServer;
let t: Tenant;
beforeAll(async () => {
  server = await startTestServer({ realRateLimits: true });
  t = await tenant(server, { app: { default_device_limit: DEVICE_LIMIT } });
});
afterAll(() => server.close());

/** Moves the clock just inside a fresh refresh window (windows are aligned to the clock). */
function startNewWindow(): void {
  server.clock.enterFreshWindow(REFRESH_WINDOW_MS);
}

const rateLimitHeaders = (res: ApiResponse) => ({
  limit: res.headers.get('ratelimit-limit'),
  remaining: res.headers.get('ratelimit-remaining'),
});

async function activatedDevice() {
  const lic = await createLicense(t.call, t.dev, { app_id: t.app.id });
  const res = await t.call('POST', '/v1/licenses/activate', { body: { license_key: lic.license_key, device_fingerprint: randomFingerprint(), build_id: null } });
  expect(res.status).toBe(200);
  expect(rateLimitHeaders(res)).toEqual({ limit: String(LICENSE_LIMITS.activation.limit), remaining: String(LICENSE_LIMITS.activation.limit - 1) });
  return { lic, token: res.body.token as string };
}

const refresh = (token: string) => t.call('POST', '/v1/licenses/refresh', { body: { token } });

describe('token refresh limit', () => {
  it(`allows ${LICENSE_LIMITS.refresh.limit} refreshes per seat per 10 minutes, far more than the general 100 a minute per address`, async () => {
    startNewWindow();
    const { token } = await activatedDevice();
    const other = await activatedDevice();
    const statuses: number[] = [];
    let last: ApiResponse | undefined;
    for (let i = 0; i < REFRESHES_PER_LICENSE; i++) {
      last = await refresh(token);
      statuses.push(last.status);
    }
    expect(statuses).toEqual(Array(REFRESHES_PER_LICENSE).fill(200));
    expect(rateLimitHeaders(last!)).toEqual({ limit: String(REFRESHES_PER_LICENSE), remaining: '0' });

    const refused = await refresh(token);
    expectError(refused, 429, 'RATE_LIMITED');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(LICENSE_LIMITS.refresh.windowSeconds);
    // Per license: another license behind the same address is not held back.
    expect((await refresh(other.token)).status).toBe(200);

    server.clock.advance(REFRESH_WINDOW_MS);
    expect((await refresh(token)).status).toBe(200);
  });
});

describe('per-address guard', () => {
  it(`refuses an address past ${RATE_LIMITS.runtime.limit} runtime requests a minute in one process`, async () => {
    // A server of its own: the guard counts every runtime request of the address in this process.
    const guarded = await startTestServer({ realRateLimits: true, database: server.database });
    try {
      guarded.clock.enterFreshWindow(RATE_LIMITS.runtime.windowSeconds * 1000);
      const call = client(guarded.url);
      const unknownKey = () => call('POST', '/v1/licenses/activate', { body: { license_key: 'ZZZZ-ZZZZ-ZZZZ-ZZZZ', device_fingerprint: randomFingerprint(), build_id: null } });
      const first = await unknownKey();
      expectError(first, 401, 'INVALID_LICENSE_KEY');
      // Before a license is known, the headers are the guard's.
      expect(rateLimitHeaders(first)).toEqual({ limit: String(RATE_LIMITS.runtime.limit), remaining: String(RATE_LIMITS.runtime.limit - 1) });
      for (let i = 1; i < RATE_LIMITS.runtime.limit; i++) expect((await unknownKey()).status).toBe(401);
      expectError(await unknownKey(), 429, 'RATE_LIMITED');
    } finally {
      await guarded.close();
    }
  });
});
