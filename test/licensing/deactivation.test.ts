/**
 * Issue 22 item 1, the authority's half: deactivation from the app over HTTP (POST
 * /v1/licenses/deactivate with the runtime token), its per-license quota set on the app, and the
 * license's deactivation history that the developer reads.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { createApp, createLicense, randomFingerprint } from '../support/fixtures.js';
import { startTestServer } from '../support/server.js';
import { DAY_MS, tenant } from './world.js';

const WINDOW_SECONDS = 30 * 86_400;

const server = await startTestServer();
afterAll(() => server.close());
const t = await tenant(server);

const deactivate = (token: string) => t.call('POST', '/v1/licenses/deactivate', { body: { token } });
const history = (licenseId: string, query = '') => t.call('GET', `/v1/licenses/${licenseId}/deactivations${query}`, { apiKey: t.dev.apiKey });
const devicesOf = async (licenseId: string) => {
  const res = await t.call('GET', `/v1/licenses/${licenseId}`, { apiKey: t.dev.apiKey });
  expect(res.status).toBe(200);
  return (res.body.devices as { fingerprint_hash: string }[]).map((d) => d.fingerprint_hash);
};

/** An ISO time the server took between `before` and now (its clock runs). */
function expectServerTime(iso: string, before: Date): void {
  const at = new Date(iso).getTime();
  expect(at).toBeGreaterThanOrEqual(before.getTime());
  expect(at).toBeLessThanOrEqual(server.clock.now().getTime());
}

/** Activates a new device on the license; its fingerprint and runtime token. */
async function activateDevice(licenseKey: string): Promise<{ device: string; token: string }> {
  const device = randomFingerprint();
  const res = await t.call('POST', '/v1/licenses/activate', { body: { license_key: licenseKey, device_fingerprint: device } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { device, token: res.body.token as string };
}

async function license(deviceLimit: number, appId = t.app.id) {
  return createLicense(t.call, t.dev, { app_id: appId, device_limit: deviceLimit });
}

describe('deactivation from the app', () => {
  it("frees the device's seat for another device and records it in the history as the app's", async () => {
    const lic = await license(1);
    const first = await activateDevice(lic.license_key);
    const before = server.clock.now();
    const res = await deactivate(first.token);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      license_id: lic.license_id,
      deactivated: true,
      deactivations_remaining: 2,
      next_deactivation_available_at: expect.any(String),
    });
    // One left: available now.
    expectServerTime(res.body.next_deactivation_available_at, before);
    expect(await devicesOf(lic.license_id)).toEqual([]);
    // The only seat is free again: another device activates within the limit.
    const second = await activateDevice(lic.license_key);
    expect(await devicesOf(lic.license_id)).toEqual([second.device]);

    const listed = await history(lic.license_id);
    expect(listed.status).toBe(200);
    expect(listed.headers.get('x-total-count')).toBe('1');
    expect(listed.body).toEqual([{ fingerprint_hash: first.device, source: 'app', deactivated_at: res.body.next_deactivation_available_at }]);
    // The deactivated device's token no longer refreshes.
    expectError(await t.call('POST', '/v1/licenses/refresh', { body: { token: first.token } }), 403, 'DEVICE_NOT_ACTIVATED');
  });

  it('is idempotent: a device no longer activated answers deactivated false and is not counted', async () => {
    const lic = await license(2);
    const { token } = await activateDevice(lic.license_key);
    expect((await deactivate(token)).body).toMatchObject({ deactivated: true, deactivations_remaining: 2 });
    for (let i = 0; i < 3; i++) {
      const again = await deactivate(token);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ license_id: lic.license_id, deactivated: false, deactivations_remaining: 2 });
    }
    expect((await history(lic.license_id)).body).toHaveLength(1);
  });

  it('counts concurrent twins of one deactivation once', async () => {
    const lic = await license(2);
    const { token } = await activateDevice(lic.license_key);
    const other = await activateDevice(lic.license_key);
    const answers = await Promise.all(Array.from({ length: 8 }, () => deactivate(token)));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(answers.filter((a) => a.body.deactivated === true)).toHaveLength(1);
    for (const a of answers) expect(a.body.deactivations_remaining).toBe(2);
    expect((await history(lic.license_id)).body).toHaveLength(1);
    expect(await devicesOf(lic.license_id)).toEqual([other.device]);
    // The slot count stayed right: the limit of 2 admits exactly one more device.
    await activateDevice(lic.license_key);
    const refused = await t.call('POST', '/v1/licenses/activate', { body: { license_key: lic.license_key, device_fingerprint: randomFingerprint() } });
    expectError(refused, 403, 'DEVICE_LIMIT_EXCEEDED');
  });

  it('refuses a fourth deactivation in 30 days with 429 and Retry-After, changing nothing; the window frees it', async () => {
    const lic = await license(4);
    const devices = [];
    for (let i = 0; i < 4; i++) devices.push(await activateDevice(lic.license_key));
    let last;
    for (const [i, d] of devices.slice(0, 3).entries()) {
      last = await deactivate(d.token);
      expect(last.body).toMatchObject({ deactivated: true, deactivations_remaining: 2 - i });
    }
    // None left: the next comes when the oldest of the three leaves the 30 days.
    const oldest = ((await history(lic.license_id)).body as { deactivated_at: string }[]).at(-1)!;
    const freedAt = new Date(oldest.deactivated_at).getTime() + 30 * DAY_MS;
    expect(last!.body.next_deactivation_available_at).toBe(new Date(freedAt).toISOString());
    const fourth = devices[3]!;
    const refused = await deactivate(fourth.token);
    expectError(refused, 429, 'DEACTIVATION_QUOTA_EXCEEDED');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(Math.floor((freedAt - server.clock.now().getTime()) / 1000));
    expect(retryAfter).toBeLessThanOrEqual(WINDOW_SECONDS);
    // Nothing changed: the device keeps its seat and its token refreshes.
    expect(await devicesOf(lic.license_id)).toEqual([fourth.device]);
    expect((await history(lic.license_id)).body).toHaveLength(3);
    expect((await t.call('POST', '/v1/licenses/refresh', { body: { token: fourth.token } })).status).toBe(200);

    server.clock.advance(retryAfter * 1000);
    try {
      // Once the oldest leave the window, the token (past its offline grace by now, yet genuine) deactivates.
      const before = server.clock.now();
      const later = await deactivate(fourth.token);
      expect(later.status).toBe(200);
      expect(later.body).toMatchObject({ deactivated: true, deactivations_remaining: 2 });
      const listed = (await history(lic.license_id)).body as { fingerprint_hash: string; deactivated_at: string }[];
      expect(listed.map((d) => d.fingerprint_hash)).toEqual([
        fourth.device,
        ...devices
          .slice(0, 3)
          .map((d) => d.device)
          .reverse(),
      ]);
      expectServerTime(listed[0]!.deactivated_at, before);
    } finally {
      server.clock.advance(-retryAfter * 1000);
    }
  });

  it('uses the quota the developer sets on the app, validated', async () => {
    const app = await createApp(t.call, t.dev, { name: 'Quota One' });
    expect(app.app_deactivations_per_30_days).toBe(3);
    for (const bad of [0, 1001, 1.5, '2', null]) {
      const res = await t.call('PUT', `/v1/apps/${app.id}`, { token: t.dev.accessToken, body: { app_deactivations_per_30_days: bad } });
      expectError(res, 400, 'VALIDATION_FAILED');
    }
    const set = await t.call('PUT', `/v1/apps/${app.id}`, { token: t.dev.accessToken, body: { app_deactivations_per_30_days: 1 } });
    expect(set.status).toBe(200);
    expect(set.body.app_deactivations_per_30_days).toBe(1);

    const lic = await license(2, app.id);
    const a = await activateDevice(lic.license_key);
    const b = await activateDevice(lic.license_key);
    expect((await deactivate(a.token)).body).toMatchObject({ deactivated: true, deactivations_remaining: 0 });
    expectError(await deactivate(b.token), 429, 'DEACTIVATION_QUOTA_EXCEEDED');
    // A device no longer activated is answered, not refused, even with the quota spent.
    expect((await deactivate(a.token)).body).toMatchObject({ deactivated: false, deactivations_remaining: 0 });
  });

  it("records the developer's reset of the devices in the history, not counted against the app quota", async () => {
    const lic = await license(3);
    const a = await activateDevice(lic.license_key);
    const b = await activateDevice(lic.license_key);
    server.clock.advance(60_000);
    try {
      const before = server.clock.now();
      const reset = await t.call('POST', `/v1/licenses/${lic.license_id}/reset-devices`, { apiKey: t.dev.apiKey });
      expect(reset.body).toMatchObject({ devices_removed: 2 });
      const listed = await history(lic.license_id);
      expect(listed.body).toHaveLength(2);
      expect(listed.body.map((d: { fingerprint_hash: string }) => d.fingerprint_hash).sort()).toEqual([a.device, b.device].sort());
      for (const d of listed.body) {
        expect(d.source).toBe('developer');
        expectServerTime(d.deactivated_at, before);
      }
      // The reset's devices answer false; a new device's deactivation still has the full quota.
      expect((await deactivate(a.token)).body).toMatchObject({ deactivated: false, deactivations_remaining: 3 });
      const c = await activateDevice(lic.license_key);
      server.clock.advance(60_000);
      const byApp = await deactivate(c.token);
      expect(byApp.body).toMatchObject({ deactivated: true, deactivations_remaining: 2 });
      // Newest first, paginated like every list.
      const page = await history(lic.license_id, '?limit=1');
      expect(page.headers.get('x-total-count')).toBe('3');
      expect(page.body).toEqual([{ fingerprint_hash: c.device, source: 'app', deactivated_at: byApp.body.next_deactivation_available_at }]);
    } finally {
      server.clock.advance(-120_000);
    }
  });

  it("keeps each developer's history to themselves", async () => {
    const lic = await license(1);
    const { token } = await activateDevice(lic.license_key);
    await deactivate(token);
    const stranger = await tenant(server);
    expectError(await stranger.call('GET', `/v1/licenses/${lic.license_id}/deactivations`, { apiKey: stranger.dev.apiKey }), 404, 'LICENSE_NOT_FOUND');
    expectError(await history('lic_000000000000000000000000'), 404, 'LICENSE_NOT_FOUND');
    expectError(await t.call('GET', `/v1/licenses/${lic.license_id}/deactivations`), 401);
    expectError(await history(lic.license_id, '?limit=0'), 400, 'VALIDATION_FAILED');
  });

  it('refuses bad input with the standard error body', async () => {
    expectError(await t.call('POST', '/v1/licenses/deactivate', { body: {} }), 400, 'VALIDATION_FAILED');
    expectError(await t.call('POST', '/v1/licenses/deactivate', { body: { token: 42 } }), 400, 'VALIDATION_FAILED');
    expectError(await t.call('POST', '/v1/licenses/deactivate', { body: { token: 'x'.repeat(20_000) } }), 400, 'VALIDATION_FAILED');
    expectError(await t.call('POST', '/v1/licenses/deactivate', { raw: { data: '{"token":', contentType: 'application/json' } }), 400, 'INVALID_JSON');
    expectError(await deactivate('not.a.token'), 401, 'INVALID_RUNTIME_TOKEN');
    // A license key is not a runtime token.
    const lic = await license(1);
    expectError(await deactivate(lic.license_key), 401, 'INVALID_RUNTIME_TOKEN');
  });
});
