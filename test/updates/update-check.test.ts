import { createHash } from 'node:crypto';
import { verifyUpdateManifest, type UpdateManifestClaims } from '@latchkey/runtime-sdk/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Owner } from '../builds/support.js';
import { expectError } from '../support/assertions.js';
import { createLicense, randomFingerprint, setPlan } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { activatedDevice, appPush, check, licensedDevice, offered, otherApp, proOwner, pushApp, readyBuild, type Device } from './support.js';

let server: TestServer;
let o: Owner;
beforeAll(async () => {
  server = await startTestServer();
  o = await proOwner(server);
});
afterAll(() => server.close());

const nowSeconds = () => Math.floor(server.clock.now().getTime() / 1000);
const devicesOf = async (a: Owner, licenseId: string) => (await a.call('GET', `/v1/licenses/${licenseId}`, { apiKey: a.dev.apiKey })).body.devices as any[];

describe('POST /v1/updates/check', () => {
  it('answers a manifest signed by the published keys, bound to this device, naming the exact bytes to download', async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a);
    const build = await readyBuild(a, { version: '2.4.0' });
    const push = await pushApp(a, { release_notes: 'Dark mode.\n\tAnd more.' });

    const res = await check(a, device);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['manifest']);
    const jwks = (await a.call('GET', '/v1/public/keys')).body;
    const claims: UpdateManifestClaims = verifyUpdateManifest(res.body.manifest, jwks, {
      appId: a.app.id,
      platform: 'linux-x64',
      device: device.fingerprint,
      licenseId: device.license_id,
      nowSeconds: nowSeconds(),
      highestSerialSeen: 0,
    });
    expect(claims).toEqual({
      iss: 'latchkey',
      sub: device.license_id,
      app_id: a.app.id,
      platform: 'linux-x64',
      device: device.fingerprint,
      build_id: build.id,
      version: '2.4.0',
      sha256: build.sha256,
      length: build.protected_size_bytes,
      url: expect.stringMatching(/^http:\/\//),
      release_notes: 'Dark mode.\n\tAnd more.',
      serial: push.serial,
      iat: expect.any(Number),
      exp: expect.any(Number),
    });
    expect(claims.exp - claims.iat).toBe(30 * 60);
    const header = JSON.parse(Buffer.from(res.body.manifest.split('.')[0], 'base64url').toString());
    expect(header).toEqual({ alg: 'EdDSA', kid: jwks.keys[0].kid, typ: 'latchkey-update-manifest+jwt' });

    const download = Buffer.from(await (await fetch(claims.url)).arrayBuffer());
    expect(download.length).toBe(claims.length);
    expect(createHash('sha256').update(download).digest('hex')).toBe(claims.sha256);

    // Another device's check cannot pass for this one's, and it expires.
    const other = await activatedDevice(a, device);
    const theirs = (await check(a, other)).body.manifest;
    const expectation = { appId: a.app.id, platform: 'linux-x64', device: device.fingerprint, nowSeconds: nowSeconds(), highestSerialSeen: 0 };
    expect(() => verifyUpdateManifest(theirs, jwks, expectation)).toThrow(/another device/);
    expect(() => verifyUpdateManifest(res.body.manifest, jwks, { ...expectation, nowSeconds: claims.exp })).toThrow(/expired/);
  });

  it('labels a build without a version with its id', async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a);
    const build = await readyBuild(a);
    await pushApp(a);
    const manifest = (await check(a, device)).body.manifest;
    expect(JSON.parse(Buffer.from(manifest.split('.')[1], 'base64url').toString()).version).toBe(build.id);
  });

  it('answers 204 when the app has no push', async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a);
    await readyBuild(a);
    const res = await check(a, device);
    expect(res.status).toBe(204);
    expect(res.body).toBe('');
  });

  it('offers a single-OS build only to devices of that platform; the others stay pending and the push incomplete', async () => {
    const a = await otherApp(o);
    const linux = await licensedDevice(a);
    const windows = await licensedDevice(a, { platform: 'win-x64' });
    const build = await readyBuild(a, { platform: 'linux-x64' });
    await pushApp(a);
    expect(await offered(a, linux)).toBe(build.id);
    expect(await offered(a, windows)).toBeNull();
    expect(await offered(a, linux, { build_id: build.id })).toBeNull();
    expect((await appPush(a))!).toMatchObject({ devices: { installed: 1, skipped: 0, pending: 1, unable: 0 }, complete: false });
  });

  it('[Push 5] matches devices on operating system only', async () => {
    const a = await otherApp(o, { platforms: ['win-x64', 'win-arm64', 'mac-arm64'] });
    const windowsArm = await licensedDevice(a, { platform: 'win-arm64' });
    const windowsX64 = await licensedDevice(a, { platform: 'win-x64' });
    const mac = await licensedDevice(a, { platform: 'mac-arm64' });
    const build = await readyBuild(a, { platform: 'win-x64', signed: true });
    await pushApp(a);
    expect(await offered(a, windowsArm)).toBe(build.id);
    expect(await offered(a, windowsX64)).toBe(build.id);
    expect(await offered(a, mac)).toBeNull();
    // The manifest names the device's own platform, which its SDK checks.
    const claims = JSON.parse(Buffer.from((await check(a, windowsArm)).body.manifest.split('.')[1], 'base64url').toString());
    expect(claims.platform).toBe('win-arm64');
    expect((await appPush(a))!).toMatchObject({ devices: { pending: 3 }, complete: false });
  });

  it('offers a cross_platform build to every device', async () => {
    const a = await otherApp(o);
    const linux = await licensedDevice(a);
    const windows = await licensedDevice(a, { platform: 'win-x64' });
    const build = await readyBuild(a);
    await pushApp(a);
    expect(await offered(a, linux)).toBe(build.id);
    expect(await offered(a, windows)).toBe(build.id);
  });

  it(`offers nothing to an engine older than 1.0.0.0.0.178, or one it cannot read, and counts the device as unable`, async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a);
    const build = await readyBuild(a);
    await pushApp(a);
    for (const engine_version of ['1.0.0.0.0.177', '1.0.0.0.0.76', '0.9.9.9.9.999', '1.0.0.0.178', 'beta', '1.0.0.0.0.178-rc1']) {
      expect(await offered(a, device, { engine_version }), engine_version).toBeNull();
    }
    expect((await appPush(a))!.devices).toEqual({ installed: 0, skipped: 0, failed: 0, pending: 1, unable: 1 });
    for (const engine_version of ['1.0.0.0.0.178', '1.0.0.0.1.0', '2.0.0.0.0.0']) {
      expect(await offered(a, device, { engine_version }), engine_version).toBe(build.id);
    }
    expect((await appPush(a))!.devices).toEqual({ installed: 0, skipped: 0, failed: 0, pending: 1, unable: 0 });
  });

  it('treats a device running the target build as installed, and offers it nothing', async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a);
    const build = await readyBuild(a);
    await pushApp(a);
    expect(await offered(a, device, { build_id: build.id })).toBeNull();
    expect(await offered(a, device)).toBeNull();
    expect((await appPush(a))!).toMatchObject({ devices: { installed: 1, skipped: 0, pending: 0, unable: 0 }, complete: true });
  });

  it('records the platform, engine and running version of every check', async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a);
    await check(a, device, { version: '3.1.4', engine_version: '1.0.0.0.0.200' });
    expect((await devicesOf(a, device.license_id))[0]).toMatchObject({ platform: 'linux-x64', engine_version: '1.0.0.0.0.200', app_version: '3.1.4' });
  });

  it('gives expired licenses nothing (204), revoked and unknown keys and keys of another app 401, unknown devices 403', async () => {
    const a = await otherApp(o);
    await readyBuild(a);
    const expiring = await createLicense(a.call, a.dev, { app_id: a.app.id, expires_at: new Date(server.clock.now().getTime() + 60_000).toISOString() });
    const expired = await activatedDevice(a, expiring);
    const revoked = await licensedDevice(a);
    const device = await licensedDevice(a);
    await pushApp(a);
    server.clock.advance(120_000);
    expect((await a.call('POST', `/v1/licenses/${revoked.license_id}/revoke`, { apiKey: a.dev.apiKey })).status).toBe(200);

    expect((await check(a, expired)).status).toBe(204);
    expectError(await check(a, revoked), 401, 'INVALID_LICENSE_KEY');
    expectError(await check(a, { ...device, license_key: 'AAAA-BBBB-CCCC-DDDD' }), 401, 'INVALID_LICENSE_KEY');
    const elsewhere = await otherApp(o);
    expectError(await check(elsewhere, device), 401, 'INVALID_LICENSE_KEY');
    expectError(await check(a, { ...device, fingerprint: randomFingerprint() }), 403, 'DEVICE_NOT_ACTIVATED');
    // The push governs the devices of active licenses only.
    expect((await appPush(a))!.devices).toEqual({ installed: 0, skipped: 0, failed: 0, pending: 1, unable: 0 });
    expect((await check(a, device)).status).toBe(200);
  });

  it('[Update check] works with only the license key and the fingerprint hash', async () => {
    const a = await otherApp(o);
    const windows = await licensedDevice(a, { platform: 'win-x64' });
    const linux = await licensedDevice(a);
    const build = await readyBuild(a, { platform: 'win-x64', version: '2.0.0', signed: true });
    const push = await pushApp(a, { release_notes: 'Faster.' });
    const minimal = (device: Device) => a.call('POST', '/v1/updates/check', { body: { license_key: device.license_key, device_fingerprint: device.fingerprint } });

    // The app from the license, the platform and engine from the device's activation record.
    const res = await minimal(windows);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const jwks = (await a.call('GET', '/v1/public/keys')).body;
    const claims = verifyUpdateManifest(res.body.manifest, jwks, {
      appId: a.app.id,
      platform: 'win-x64',
      device: windows.fingerprint,
      licenseId: windows.license_id,
      nowSeconds: nowSeconds(),
      highestSerialSeen: 0,
    });
    expect(claims).toMatchObject({ build_id: build.id, version: '2.0.0', sha256: build.sha256, length: build.protected_size_bytes, release_notes: 'Faster.', serial: push.serial });
    // Another operating system on record: nothing.
    expect((await minimal(linux)).status).toBe(204);

    // A device that said once it runs the target is not offered it again by a bare check, and counts as installed.
    expect(await offered(a, windows, { build_id: build.id })).toBeNull();
    expect((await minimal(windows)).status).toBe(204);
    expect((await appPush(a))!.devices).toMatchObject({ installed: 1, pending: 1 });

    // The credential is still checked, and bad input is still refused.
    expectError(await a.call('POST', '/v1/updates/check', { body: { license_key: 'AAAA-BBBB-CCCC-DDDD', device_fingerprint: windows.fingerprint } }), 401, 'INVALID_LICENSE_KEY');
    expectError(await a.call('POST', '/v1/updates/check', { body: { license_key: windows.license_key, device_fingerprint: randomFingerprint() } }), 403, 'DEVICE_NOT_ACTIVATED');
    for (const body of [
      { license_key: windows.license_key },
      { device_fingerprint: windows.fingerprint },
      { license_key: windows.license_key, device_fingerprint: 'ABC' },
      { license_key: 'not a key', device_fingerprint: windows.fingerprint },
      { license_key: windows.license_key, device_fingerprint: windows.fingerprint, platform: 'amiga-m68k' },
    ]) {
      expectError(await a.call('POST', '/v1/updates/check', { body }), 400, 'VALIDATION_FAILED');
    }
  });

  it('refuses bad input with 400 and records nothing', async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a);
    const before = await devicesOf(a, device.license_id);
    const cases: Record<string, unknown>[] = [
      { platform: 'amiga-m68k' },
      { engine_version: '' },
      { version: 'x'.repeat(65) },
      { build_id: 42 },
      { device_fingerprint: 'ABC' },
      { license_key: 'not a key' },
      { app_id: '' },
    ];
    for (const overrides of cases) expectError(await check(a, device, overrides), 400, 'VALIDATION_FAILED');
    expectError(await a.call('POST', '/v1/updates/check', { body: { license_key: device.license_key } }), 400, 'VALIDATION_FAILED');
    expect(await devicesOf(a, device.license_id)).toEqual(before);
  });

  it('accepts fields it does not know, for SDKs newer than the server', async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a);
    expect((await check(a, device, { channel: 'beta' })).status).toBe(204);
  });

  it('is documented as answering a manifest or 204', async () => {
    const op = (await o.call('GET', '/v1/openapi.json')).body.paths['/v1/updates/check'].post;
    expect(op.security).toEqual([]);
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '204', '400', '401', '403']));
  });
});

describe('which push applies', () => {
  const licensePush = (a: Owner, device: Device, body: Record<string, unknown> = {}) =>
    a.call('POST', `/v1/licenses/${device.license_id}/push-update`, { token: a.dev.accessToken, body });

  it('a per-license push replaces the app push for that license only, until a later app push overrides it', async () => {
    const a = await otherApp(o);
    const chosen = await licensedDevice(a);
    const others = await licensedDevice(a);
    const beta = await readyBuild(a, { version: '3.0.0-beta' });
    const stable = await readyBuild(a, { version: '2.9.0' });
    const appLevel = await pushApp(a, { target_build_id: stable.id });

    const res = await licensePush(a, chosen, { target_build_id: beta.id, release_notes: 'Just for you' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      license_id: chosen.license_id,
      app_id: a.app.id,
      push: expect.objectContaining({ target_build_id: beta.id, release_notes: 'Just for you', devices: { installed: 0, skipped: 0, failed: 0, pending: 1, unable: 0 } }),
    });
    expect(res.body.push.serial).toBeGreaterThan(appLevel.serial);
    expect(await offered(a, chosen)).toBe(beta.id);
    expect(await offered(a, others)).toBe(stable.id);
    // The app push no longer counts the license that has its own.
    expect((await appPush(a))!.devices.pending).toBe(1);

    const later = await pushApp(a, { target_build_id: stable.id, release_notes: 'Everyone' });
    expect(await offered(a, chosen)).toBe(stable.id);
    expect(later.devices.pending).toBe(2);
    expect((await a.call('GET', `/v1/licenses/${chosen.license_id}/push-update`, { token: a.dev.accessToken })).body.push).toBeNull();
  });

  it('a per-license push may name an unreleased build under released_only, and clearing it brings the app push back', async () => {
    const a = await otherApp(o, { delivery_mode: 'released_only' });
    const device = await licensedDevice(a);
    const released = await readyBuild(a);
    expect((await a.call('POST', `/v1/apps/${a.app.id}/builds/${released.id}/release`, { token: a.dev.accessToken })).status).toBe(200);
    const unreleased = await readyBuild(a);
    await pushApp(a);
    expect((await licensePush(a, device, { target_build_id: unreleased.id })).status).toBe(200);
    expect(await offered(a, device)).toBe(unreleased.id);
    expect((await a.call('DELETE', `/v1/licenses/${device.license_id}/push-update`, { token: a.dev.accessToken })).status).toBe(204);
    expect(await offered(a, device)).toBe(released.id);
  });

  it('a per-license push defaults to the newest READY build and works without an app push', async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a);
    await readyBuild(a);
    const newest = await readyBuild(a);
    const res = await licensePush(a, device);
    expect(res.status).toBe(200);
    expect(res.body.push.target_build_id).toBe(newest.id);
    expect(await offered(a, device)).toBe(newest.id);
  });

  it('a per-license push needs the Pro plan, an ACTIVE license of the developer and a READY build of its app', async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a);
    expectError(await licensePush(a, device), 409, 'NO_READY_BUILD');
    const foreign = await readyBuild(await otherApp(o));
    expectError(await licensePush(a, device, { target_build_id: foreign.id }), 404, 'BUILD_NOT_FOUND');
    await readyBuild(a);
    expect((await a.call('POST', `/v1/licenses/${device.license_id}/revoke`, { apiKey: a.dev.apiKey })).status).toBe(200);
    expectError(await licensePush(a, device), 409, 'NO_ACTIVE_LICENSE');

    const stranger = await proOwner(server);
    const theirs = await licensedDevice(a);
    for (const method of ['POST', 'GET', 'DELETE']) {
      const res = await stranger.call(method, `/v1/licenses/${theirs.license_id}/push-update`, { token: stranger.dev.accessToken, body: method === 'POST' ? {} : undefined });
      expectError(res, 404, 'LICENSE_NOT_FOUND');
    }
    await setPlan(a.call, server.adminToken, a.dev.id, 'free');
    try {
      expectError(await licensePush(a, theirs), 403, 'PLAN_REQUIRED');
    } finally {
      await setPlan(a.call, server.adminToken, a.dev.id, 'pro');
    }
    expectError(await licensePush(a, theirs, { release_notes: 'x'.repeat(10_001) }), 400, 'VALIDATION_FAILED');
    expect((await a.call('GET', `/v1/licenses/${theirs.license_id}/push-update`, { token: a.dev.accessToken })).body.push).toBeNull();
  });
});
