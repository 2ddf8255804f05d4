import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLicense, randomFingerprint } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tenant, type Tenant } from './world.js';

const WINDOW_MS = 600_000;

let server: TestServer;
let t: Tenant;
beforeAll(async () => {
  server = await startTestServer({ realRateLimits: true });
  // Windows are fixed and aligned to the clock: start just inside a fresh one so none rolls over mid-test.
  server.clock.enterFreshWindow(WINDOW_MS);
  t = await tenant(server, { app: { default_device_limit: 10 } });
});
afterAll(() => server.close());

const activate = (licenseKey: string, device: string) => t.call('POST', '/v1/licenses/activate', { body: { license_key: licenseKey, device_fingerprint: device, build_id: null } });

describe('activation velocity', () => {
  it('allows 5 activation requests per 10 minutes per license, then 429 with Retry-After and no new device', async () => {
    const lic = await createLicense(t.call, t.dev, { app_id: t.app.id });
    const other = await createLicense(t.call, t.dev, { app_id: t.app.id });
    const known = randomFingerprint();
    for (const device of [known, known, randomFingerprint(), randomFingerprint(), randomFingerprint()]) {
      expect((await activate(lic.license_key, device)).status).toBe(200);
    }
    const flooded = await activate(lic.license_key, randomFingerprint());
    expect(flooded.status).toBe(429);
    expect(flooded.body).toMatchObject({ error_code: 'RATE_LIMITED', status_code: 429 });
    // The headers describe the license's limit, not the address's.
    expect(flooded.headers.get('ratelimit-limit')).toBe('5');
    expect(flooded.headers.get('ratelimit-remaining')).toBe('0');
    const retryAfter = Number(flooded.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(600);
    // Even a known device is held back: the limit counts requests.
    expect((await activate(lic.license_key, known)).status).toBe(429);

    const devices = (await t.call('GET', `/v1/licenses/${lic.license_id}`, { apiKey: t.dev.apiKey })).body.devices;
    expect(devices).toHaveLength(4);

    // Per license: another license of the same app is unaffected.
    expect((await activate(other.license_key, randomFingerprint())).status).toBe(200);

    // The next window lets the license activate again.
    server.clock.advance(WINDOW_MS);
    expect((await activate(lic.license_key, randomFingerprint())).status).toBe(200);
  });

  it('is checked after the key: an unknown key stays 401 however often it is tried', async () => {
    for (let i = 0; i < 7; i++) {
      expect((await activate('ZZZZ-ZZZZ-ZZZZ-ZZZZ', randomFingerprint())).status).toBe(401);
    }
  });
});
