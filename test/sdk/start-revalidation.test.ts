/**
 * Issue 20 item 7: `revalidate: { blockingMs }` asks the real authority (Koa + PostgreSQL) before
 * `createLicenseClient` answers, so a revoked license is refused at the first online start; a
 * missing or hung network costs at most the budget, and the start goes on from the cache.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLicenseClient, LicenseError, type LicenseClient, type LicenseClientOptions } from '../../runtime-sdk/index.js';
import { createLicense } from '../support/fixtures.js';
import { FakeClock, HOUR } from './support/fake-clock.js';
import { fakeMachine, tempDir } from './support/fake-machine.js';
import { startRealAuthority } from './support/real-authority.js';
import { RecordingProxy } from './support/recording-proxy.js';
import { SilentServer } from './support/silent-server.js';

const BLOCKING = { revalidate: { blockingMs: 5_000 } } as const;
const { server, call, dev, app, publicKeys } = await startRealAuthority();
const machine = fakeMachine('RV1');
const base: LicenseClientOptions = {
  appId: app.id,
  serverUrl: server.url,
  publicKeys,
  fingerprintSalt: app.fingerprint_salt,
  appVersion: '1.0.0',
  platform: machine.platform,
  fingerprintProbes: machine.probes,
  memoryProtection: 'masked',
  retryLimit: 1,
  retryBaseDelayMs: 10,
};
/** The app's clock, the server's time at the start of each test. */
let clock: FakeClock;
const clients: LicenseClient[] = [];

beforeEach(() => {
  clock = new FakeClock(Date.now());
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
});

async function start(options: Partial<LicenseClientOptions>): Promise<LicenseClient> {
  const license = await createLicenseClient({ ...base, clock, ...options });
  clients.push(license);
  return license;
}

/** A fresh cache holding an activation of a new license; answers the cache folder and the license. */
async function activated(): Promise<{ cacheDir: string; licenseId: string }> {
  const created = await createLicense(call, dev, { app_id: base.appId, license_type: 'perpetual' });
  const cacheDir = tempDir();
  const first = await start({ cacheDir });
  expect((await first.activate(created.license_key)).state).toBe('valid');
  await first.dispose();
  return { cacheDir, licenseId: created.license_id };
}

describe('revalidate: { blockingMs }', () => {
  it('refuses a revoked license at the first online start', async () => {
    const { cacheDir, licenseId } = await activated();
    expect((await call('POST', `/v1/licenses/${licenseId}/revoke`, { apiKey: dev.apiKey })).status).toBe(200);

    const next = await start({ cacheDir, ...BLOCKING });
    expect(await next.check()).toMatchObject({ state: 'revoked', reason: 'revoked_by_vendor', usable: false });
  });

  it('with the default (background), the same start still runs once from the cache', async () => {
    const { cacheDir, licenseId } = await activated();
    expect((await call('POST', `/v1/licenses/${licenseId}/revoke`, { apiKey: dev.apiKey })).status).toBe(200);

    const next = await start({ cacheDir, startupDelayMs: 60_000 });
    expect(await next.check()).toMatchObject({ state: 'valid', usable: true });
  });

  it('starts from the cache within grace when the authority cannot be reached', async () => {
    const { cacheDir } = await activated();
    clock.advance(3 * HOUR);

    // Every connection dropped, as on a network that goes nowhere.
    const nowhere = await new RecordingProxy().start();
    try {
      const offline = await start({ cacheDir, serverUrl: nowhere.url, ...BLOCKING });
      // The start asked (and retried) before answering, and went on from the cache.
      expect(nowhere.requests.map((r) => r.path)).toEqual(['/v1/licenses/refresh', '/v1/licenses/refresh']);
      expect(await offline.check()).toMatchObject({ state: 'grace', reason: 'offline', usable: true });
    } finally {
      await nowhere.close();
    }
  });

  // Without the budget the request would wait out its 60 s timeout, past the test's own.
  it('starts from the cache once the budget is spent when the authority never answers', { timeout: 15_000 }, async () => {
    const { cacheDir } = await activated();
    const silent = await new SilentServer().start();
    try {
      const hung = await start({ cacheDir, serverUrl: silent.url, requestTimeoutMs: 60_000, revalidate: { blockingMs: 300 } });
      expect(await hung.check()).toMatchObject({ state: 'valid', usable: true });
      expect(silent.connections).toBeGreaterThan(0);
    } finally {
      await silent.close();
    }
  });

  it('keeps a license the authority confirms valid, and needs nothing when not activated', async () => {
    const { cacheDir } = await activated();
    expect(await (await start({ cacheDir, ...BLOCKING })).check()).toMatchObject({ state: 'valid', usable: true });
    expect(await (await start({ cacheDir: tempDir(), ...BLOCKING })).check()).toMatchObject({ state: 'unlicensed', reason: 'not_activated' });
  });
});

describe('the revalidate option', () => {
  it.each([
    ['a word other than background', 'blocking'],
    ['a zero budget', { blockingMs: 0 }],
    ['a negative budget', { blockingMs: -5 }],
    ['a fractional budget', { blockingMs: 1.5 }],
    ['a budget in seconds by mistake', { blockingMs: 60_000 }],
    ['a budget that is not a number', { blockingMs: '500' }],
    ['an unknown field', { blockingMs: 500, retries: 2 }],
    ['null', null],
  ])('refuses %s', async (_name, revalidate) => {
    const err = await createLicenseClient({ ...base, cacheDir: tempDir(), revalidate: revalidate as never }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LicenseError);
    expect(err).toMatchObject({ code: 'INVALID_OPTIONS' });
    expect((err as Error).message).toContain('revalidate');
  });

  it('refuses a blocking revalidation with refreshOnStart: false, which contradicts it', async () => {
    const err = await createLicenseClient({ ...base, cacheDir: tempDir(), refreshOnStart: false, revalidate: { blockingMs: 500 } }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'INVALID_OPTIONS' });
  });
});
