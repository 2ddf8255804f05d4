import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LICENSE_LIMITS } from '../../server/http/license-limits.js';
import { RATE_LIMITS } from '../../server/http/rate-limit.js';
import type { Owner } from '../builds/support.js';
import { expectError } from '../support/assertions.js';
import type { ApiResponse } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { appPush, check, licensedDevice, otherApp, proOwner, pushApp, readyBuild, report } from './support.js';

// Update checks and reports are limited per license, per seat, counted by the statement that finds
// the license, like token refreshes. Every request of these tests comes from one address, as an
// office's seats behind one NAT do.

const CHECKS_PER_SEAT = LICENSE_LIMITS.update_check.limit;
const REPORTS_PER_SEAT = LICENSE_LIMITS.update_report.limit;
const WINDOW_MS = LICENSE_LIMITS.update_check.windowSeconds * 1000;

let server: TestServer;
let o: Owner;
beforeAll(async () => {
  server = await startTestServer({ realRateLimits: true });
  o = await proOwner(server);
});
afterAll(() => server.close());

/** Moves the clock just inside a fresh window (windows are aligned to the clock). */
function startNewWindow(): void {
  server.clock.enterFreshWindow(WINDOW_MS);
}

const rateLimitHeaders = (res: ApiResponse) => ({
  limit: res.headers.get('ratelimit-limit'),
  remaining: res.headers.get('ratelimit-remaining'),
});

const devicesOf = async (a: Owner, licenseId: string) => (await a.call('GET', `/v1/licenses/${licenseId}`, { apiKey: a.dev.apiKey })).body.devices as unknown[];

function expectRefused(res: ApiResponse, limit: number): void {
  expectError(res, 429, 'RATE_LIMITED');
  expect(rateLimitHeaders(res)).toEqual({ limit: String(limit), remaining: '0' });
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(LICENSE_LIMITS.update_check.windowSeconds);
}

describe('update check limit', () => {
  it(`lets many seats behind one address check far past the general ${RATE_LIMITS.general.limit} a minute, each license counted on its own`, async () => {
    const a = await otherApp(o);
    const seats = await Promise.all(Array.from({ length: 4 }, () => licensedDevice(a, { license: { device_limit: 2 } })));
    startNewWindow();
    const perLicense = CHECKS_PER_SEAT * 2;
    for (const seat of seats) {
      for (let i = 1; i <= perLicense; i++) {
        const res = await check(a, seat);
        expect(res.status).toBe(204);
        expect(rateLimitHeaders(res)).toEqual({ limit: String(perLicense), remaining: String(perLicense - i) });
      }
    }
    expect(seats.length * perLicense).toBeGreaterThan(RATE_LIMITS.general.limit);
  });

  it(`refuses a seat's check past ${CHECKS_PER_SEAT} per 10 minutes with 429 and Retry-After, and the refused check records nothing`, async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a, { license: { device_limit: 1 } });
    const other = await licensedDevice(a, { license: { device_limit: 1 } });
    const build = await readyBuild(a);
    await pushApp(a);
    startNewWindow();
    for (let i = 0; i < CHECKS_PER_SEAT; i++) expect((await check(a, device)).status).toBe(200);
    const before = await devicesOf(a, device.license_id);

    // Running the pushed build would count the device as installed, and the launch would be recorded.
    const refused = await check(a, device, { build_id: build.id, version: '9.9.9', engine_version: '1.0.0.0.0.300' });
    expectRefused(refused, CHECKS_PER_SEAT);
    expect(await devicesOf(a, device.license_id)).toEqual(before);
    expect((await appPush(a))!.devices).toEqual({ installed: 0, skipped: 0, failed: 0, pending: 2, unable: 0 });

    // Per license: another license behind the same address is not held back.
    expect((await check(a, other)).status).toBe(200);

    server.clock.advance(WINDOW_MS);
    expect((await check(a, device, { build_id: build.id })).status).toBe(204);
    expect((await appPush(a))!.devices).toEqual({ installed: 1, skipped: 0, failed: 0, pending: 1, unable: 0 });
  });
});

describe('update report limit', () => {
  it(`refuses a seat's report past ${REPORTS_PER_SEAT} per 10 minutes with 429 and Retry-After, and the refused report records nothing`, async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a, { license: { device_limit: 1 } });
    const build = await readyBuild(a);
    await pushApp(a);
    startNewWindow();
    for (let i = 1; i <= REPORTS_PER_SEAT; i++) {
      const res = await report(a, device, 'skipped', build.id, { version: '1.0.0' });
      expect(res.status).toBe(204);
      expect(rateLimitHeaders(res)).toEqual({ limit: String(REPORTS_PER_SEAT), remaining: String(REPORTS_PER_SEAT - i) });
    }
    const before = await devicesOf(a, device.license_id);

    expectRefused(await report(a, device, 'installed', build.id, { version: '2.0.0' }), REPORTS_PER_SEAT);
    expect(await devicesOf(a, device.license_id)).toEqual(before);
    expect((await appPush(a))!.devices).toEqual({ installed: 0, skipped: 1, failed: 0, pending: 0, unable: 0 });
    // Checks have their own count: the device still checks.
    expect((await check(a, device)).status).toBe(204);

    server.clock.advance(WINDOW_MS);
    expect((await report(a, device, 'installed', build.id, { version: '2.0.0' })).status).toBe(204);
    expect((await appPush(a))!.devices).toEqual({ installed: 1, skipped: 0, failed: 0, pending: 0, unable: 0 });
  });
});

describe('before a license is known', () => {
  it("answers an unknown key 401 with the per-address guard's headers: no license, no license limit", async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a);
    const build = await readyBuild(a);
    const unknown = { ...device, license_key: 'ZZZZ-ZZZZ-ZZZZ-ZZZZ' };
    for (const res of [await check(a, unknown), await report(a, unknown, 'installed', build.id)]) {
      expectError(res, 401, 'INVALID_LICENSE_KEY');
      expect(res.headers.get('ratelimit-limit')).toBe(String(RATE_LIMITS.runtime.limit));
    }
  });
});
