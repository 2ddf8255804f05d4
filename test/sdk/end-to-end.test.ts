/**
 * The SDK against the real authority (Koa + PostgreSQL): activate, lose the server, run on grace,
 * be refused after it, come back, get revoked. The SDK and the server move their clocks together.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLicenseClient, LicenseError, type LicenseClient, type LicenseClientOptions, type LicenseStatus } from '../../runtime-sdk/index.js';
import { normalizeComponent } from '../../runtime-sdk/fingerprint/canonical.js';
import { hardwareProbes, importSystemInformation, readComponents } from '../../runtime-sdk/fingerprint/components.js';
import { hostPlatform } from '../../runtime-sdk/platform.js';
import { FINGERPRINT_PATTERN } from '../../runtime-sdk/protocol.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createApp, createLicense, registerDeveloper, setPlan, type TestDeveloper } from '../support/fixtures.js';
import { client, type Call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { FakeClock, HOUR } from './support/fake-clock.js';
import { tempDir } from './support/fake-machine.js';
import { RecordingProxy } from './support/recording-proxy.js';

/** Both server incarnations sign with the same key and read the same database, as a redeploy does. */
const env = {
  LATCHKEY_SIGNING_KEYS: generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
  LATCHKEY_MASTER_KEY: randomBytes(32).toString('base64'),
};

let database: TestDatabase;
let server: TestServer | null = null;
const proxy = new RecordingProxy();
const sdkClock = new FakeClock(Date.now());
let shiftedMs = 0;
let call: Call;
let dev: TestDeveloper;
let sdkOptions: LicenseClientOptions;
const clients: LicenseClient[] = [];

async function startServer(): Promise<void> {
  server = await startTestServer({ database, env });
  server.clock.advance(shiftedMs);
  proxy.upstream = server.url;
  call = client(server.url);
}

async function stopServer(): Promise<void> {
  proxy.upstream = null;
  await server?.close();
  server = null;
}

/** Time passes for everyone: the app's clock and, when it runs, the server's. */
function advance(ms: number): void {
  shiftedMs += ms;
  sdkClock.advance(ms);
  server?.clock.advance(ms);
}

async function startApp(overrides: Partial<LicenseClientOptions> = {}): Promise<LicenseClient> {
  const license = await createLicenseClient({ ...sdkOptions, ...overrides });
  clients.push(license);
  return license;
}

beforeAll(async () => {
  database = await createTestDatabase();
  await proxy.start();
  await startServer();
  dev = await registerDeveloper(call);
  await setPlan(call, server!.adminToken, dev.id, 'pro');
  const app = await createApp(call, dev);
  const keys = await call('GET', '/v1/public/keys');
  expect(keys.status).toBe(200);
  sdkOptions = {
    appId: app.id,
    serverUrl: proxy.url,
    publicKeys: keys.body,
    fingerprintSalt: app.fingerprint_salt,
    appVersion: '2.3.0',
    cacheDir: tempDir(),
    clock: sdkClock,
    refreshOnStart: false,
    startupDelayMs: 0,
    fingerprintTimeoutMs: 10_000,
    retryLimit: 1,
    retryBaseDelayMs: 10,
  };
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.dispose()));
  await stopServer();
  await proxy.close();
  await database.drop();
});

describe('runtime SDK against the real license authority', () => {
  it('activates, runs offline within grace, is refused after it, recovers online, then sees a revocation', async () => {
    const created = await createLicense(call, dev, { app_id: sdkOptions.appId, license_type: 'perpetual', features: { tier: 'pro', seats: 3 } });

    // First start: no license yet; the user types the key.
    const first = await startApp();
    expect((await first.check()).state).toBe('unlicensed');
    const activated = await first.activate(created.license_key.toLowerCase());
    expect(activated).toMatchObject({
      state: 'valid',
      licenseId: created.license_id,
      licenseType: 'perpetual',
      features: { tier: 'pro', seats: 3 },
      policy: { offline_grace_hours: 72 },
    });
    const detail = await call('GET', `/v1/licenses/${created.license_id}`, { apiKey: dev.apiKey });
    expect(detail.body.devices).toHaveLength(1);

    // The server goes away; the app keeps starting from its cache.
    await stopServer();
    advance(24 * HOUR);
    await expect(first.refresh()).rejects.toMatchObject({ code: 'OFFLINE', retryable: true });
    const offlineStart = await startApp();
    expect(await offlineStart.check()).toMatchObject({ state: 'grace', reason: 'offline', usable: true, features: { tier: 'pro', seats: 3 } });
    advance(47 * HOUR);
    expect(await offlineStart.check()).toMatchObject({ state: 'grace', usable: true });
    advance(2 * HOUR);
    expect(await offlineStart.check()).toMatchObject({ state: 'expired', reason: 'grace_exhausted', usable: false, features: {} });
    expect((await (await startApp()).check()).state).toBe('expired');

    // Back online: one refresh with the (expired, genuine) token restores it.
    await startServer();
    expect(await offlineStart.refresh()).toMatchObject({ state: 'valid', usable: true });

    // Revoked on the server: the next refresh (background, at the next start) refuses it.
    const revoke = await call('POST', `/v1/licenses/${created.license_id}/revoke`, { apiKey: dev.apiKey });
    expect(revoke.status).toBe(200);
    const nextStart = await startApp({ refreshOnStart: true });
    const seen = new Promise<LicenseStatus>((resolve) => nextStart.on('change', resolve));
    expect((await nextStart.check()).state).toBe('valid');
    expect(await seen).toMatchObject({ state: 'revoked', reason: 'revoked_by_vendor', usable: false });
    expect(await offlineStart.refresh()).toMatchObject({ state: 'revoked' });

    // Offline again, the revocation sticks; the key cannot be activated again.
    await stopServer();
    expect((await (await startApp()).check()).state).toBe('revoked');
    await startServer();
    const refusal = await nextStart.activate(created.license_key).catch((err: unknown) => err);
    expect(refusal).toBeInstanceOf(LicenseError);
    expect(refusal).toMatchObject({ code: 'INVALID_LICENSE_KEY', retryable: false });
  });

  it('a device reset on the server deactivates this computer at its next refresh; the key activates it again', async () => {
    const created = await createLicense(call, dev, { app_id: sdkOptions.appId, license_type: 'subscription', expiry_days: 30 });
    const license = await startApp({ cacheDir: tempDir() });
    expect((await license.activate(created.license_key)).licenseExpiresAt).not.toBeNull();
    const reset = await call('POST', `/v1/licenses/${created.license_id}/reset-devices`, { apiKey: dev.apiKey });
    expect(reset.status).toBe(200);
    expect(await license.refresh()).toMatchObject({ state: 'unlicensed', reason: 'device_deactivated' });
    expect(await license.activate(created.license_key)).toMatchObject({ state: 'valid' });
  });

  it('sent the authority nothing but salted hashes: no raw hardware identifier in any request', async () => {
    const { components } = await readComponents(await hardwareProbes(hostPlatform, importSystemInformation, () => {}), 10_000);
    const rawForms = Object.values(components)
      .map(normalizeComponent)
      .filter((v): v is string => !!v && v.length >= 4)
      .flatMap((v) => [v, v.replace(/[:\-. |]/g, '')]);
    expect(proxy.requests.length).toBeGreaterThan(5);
    for (const request of proxy.requests) {
      const wire = `${request.path}\n${JSON.stringify(request.headers)}\n${request.body}`.toLowerCase();
      for (const form of rawForms) expect(wire).not.toContain(form);
      const body = request.body ? JSON.parse(request.body) : {};
      if (body.device_fingerprint !== undefined) expect(body.device_fingerprint).toMatch(FINGERPRINT_PATTERN);
    }
  });
});
