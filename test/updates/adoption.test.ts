import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Owner } from '../builds/support.js';
import { expectError } from '../support/assertions.js';
import { randomFingerprint } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { appPush, licensedDevice, offered, otherApp, proOwner, pushApp, readyBuild, report } from './support.js';

let server: TestServer;
let o: Owner;
beforeAll(async () => {
  server = await startTestServer();
  o = await proOwner(server);
});
afterAll(() => server.close());

const devicesOf = async (a: Owner, licenseId: string) => (await a.call('GET', `/v1/licenses/${licenseId}`, { apiKey: a.dev.apiKey })).body.devices as any[];
const counts = async (a: Owner) => {
  const push = (await appPush(a))!;
  return { ...push.devices, complete: push.complete };
};

describe('POST /v1/updates/report', () => {
  it('moves devices from pending to skipped and installed, and the push to complete', async () => {
    const a = await otherApp(o);
    const installer = await licensedDevice(a);
    const skipper = await licensedDevice(a);
    const build = await readyBuild(a);
    await pushApp(a);
    expect(await counts(a)).toEqual({ installed: 0, skipped: 0, failed: 0, pending: 2, unable: 0, complete: false });

    expect((await report(a, skipper, 'skipped', build.id, { version: '1.0.0' })).status).toBe(204);
    expect(await offered(a, skipper)).toBeNull();
    expect(await counts(a)).toEqual({ installed: 0, skipped: 1, failed: 0, pending: 1, unable: 0, complete: false });

    const res = await report(a, installer, 'installed', build.id, { version: '2.0.0', engine_version: '1.0.0.0.0.180' });
    expect(res.status).toBe(204);
    expect(res.body).toBe('');
    expect(await counts(a)).toEqual({ installed: 1, skipped: 1, failed: 0, pending: 0, unable: 0, complete: true });
    expect((await devicesOf(a, installer.license_id))[0]).toMatchObject({ app_version: '2.0.0', engine_version: '1.0.0.0.0.180', platform: 'linux-x64' });
  });

  it('is idempotent, and an install replaces a skip but a skip never replaces an install', async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a);
    const other = await licensedDevice(a);
    const build = await readyBuild(a);
    await pushApp(a);
    for (let i = 0; i < 2; i++) expect((await report(a, device, 'skipped', build.id)).status).toBe(204);
    expect(await counts(a)).toMatchObject({ skipped: 1, pending: 1 });
    expect((await report(a, device, 'installed', build.id)).status).toBe(204);
    expect((await report(a, device, 'skipped', build.id)).status).toBe(204);
    expect(await counts(a)).toMatchObject({ installed: 1, skipped: 0, pending: 1 });
    expect(await offered(a, other)).toBe(build.id);
  });

  it('keeps a skip until a newer build is pushed, including a re-push of the same build', async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a);
    const skipped = await readyBuild(a);
    await pushApp(a, { release_notes: 'first' });
    expect((await report(a, device, 'skipped', skipped.id)).status).toBe(204);
    await pushApp(a, { release_notes: 'same build, new notes' });
    expect(await offered(a, device)).toBeNull();
    const newer = await readyBuild(a);
    await pushApp(a);
    expect(await offered(a, device)).toBe(newer.id);
    expect(await counts(a)).toMatchObject({ skipped: 0, pending: 1 });
  });

  it('clearing the push leaves the adoption as it was', async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a);
    const build = await readyBuild(a);
    await pushApp(a);
    expect((await report(a, device, 'installed', build.id)).status).toBe(204);
    expect((await a.call('DELETE', `/v1/apps/${a.app.id}/push-update`, { token: a.dev.accessToken })).status).toBe(204);
    expect(await offered(a, device)).toBeNull();
    await pushApp(a, { target_build_id: build.id });
    expect(await offered(a, device)).toBeNull();
    expect(await counts(a)).toEqual({ installed: 1, skipped: 0, failed: 0, pending: 0, unable: 0, complete: true });
  });

  it('refuses a build of another app (404), an unknown device (403), a revoked or wrong key (401), and records nothing', async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a);
    const build = await readyBuild(a);
    const foreign = await readyBuild(await otherApp(o));
    await pushApp(a);
    const before = await devicesOf(a, device.license_id);
    expectError(await report(a, device, 'installed', foreign.id), 404, 'BUILD_NOT_FOUND');
    expectError(await report(a, device, 'installed', 'bld_missing'), 404, 'BUILD_NOT_FOUND');
    expectError(await report(a, { ...device, fingerprint: randomFingerprint() }, 'installed', build.id), 403, 'DEVICE_NOT_ACTIVATED');
    expectError(await report(a, { ...device, license_key: 'AAAA-BBBB-CCCC-DDDD' }, 'installed', build.id), 401, 'INVALID_LICENSE_KEY');
    expectError(await report(await otherApp(o), device, 'installed', build.id), 401, 'INVALID_LICENSE_KEY');
    expect(await devicesOf(a, device.license_id)).toEqual(before);
    expect(await counts(a)).toMatchObject({ installed: 0, pending: 1 });

    expect((await a.call('POST', `/v1/licenses/${device.license_id}/revoke`, { apiKey: a.dev.apiKey })).status).toBe(200);
    expectError(await report(a, device, 'installed', build.id), 401, 'INVALID_LICENSE_KEY');
  });

  it('refuses bad input with 400 and records nothing', async () => {
    const a = await otherApp(o);
    const device = await licensedDevice(a);
    const build = await readyBuild(a);
    await pushApp(a);
    const before = await devicesOf(a, device.license_id);
    const cases: [string, Record<string, unknown>][] = [
      ['installed', { event: 'uninstalled' }],
      ['installed', { version: '' }],
      ['installed', { platform: 'linux' }],
      ['installed', { engine_version: '1 0' }],
      ['installed', { device_fingerprint: 'F'.repeat(64) }],
      ['skipped', { build_id: '' }],
      ['failed', {}],
      ['failed', { reason: 'disk_full' }],
      ['failed', { reason: null }],
      ['installed', { reason: 'install_failed' }],
      ['skipped', { reason: 'download_failed' }],
    ];
    for (const [event, overrides] of cases) expectError(await report(a, device, event as 'installed', build.id, overrides), 400, 'VALIDATION_FAILED');
    expect(await devicesOf(a, device.license_id)).toEqual(before);
    expect(await counts(a)).toMatchObject({ installed: 0, skipped: 0, pending: 1 });
  });
});

describe('a failed install (event failed, with a reason)', () => {
  it('counts the device as Failed, not done with the push, and keeps offering it the build: the runtime backs off on its own', async () => {
    const a = await otherApp(o);
    const failing = await licensedDevice(a);
    // A second device, not asked yet: pending.
    await licensedDevice(a);
    const build = await readyBuild(a);
    await pushApp(a);
    expect((await report(a, failing, 'failed', build.id, { version: '1.0.0', reason: 'package_rejected' })).status).toBe(204);
    expect(await counts(a)).toEqual({ installed: 0, skipped: 0, failed: 1, pending: 1, unable: 0, complete: false });
    expect(await offered(a, failing)).toBe(build.id);
    // Failing again is still one failed device.
    expect((await report(a, failing, 'failed', build.id, { version: '1.0.0', reason: 'install_failed' })).status).toBe(204);
    expect(await counts(a)).toMatchObject({ failed: 1, pending: 1 });
    expect((await devicesOf(a, failing.license_id))[0]).toMatchObject({ app_version: '1.0.0' });
  });

  it('an install or a skip replaces a failure; a failure never replaces an install or a skip', async () => {
    const a = await otherApp(o);
    const installer = await licensedDevice(a);
    const skipper = await licensedDevice(a);
    const build = await readyBuild(a);
    await pushApp(a);
    for (const device of [installer, skipper]) expect((await report(a, device, 'failed', build.id, { reason: 'download_failed' })).status).toBe(204);
    expect(await counts(a)).toMatchObject({ failed: 2, pending: 0, complete: false });
    expect((await report(a, installer, 'installed', build.id)).status).toBe(204);
    expect((await report(a, skipper, 'skipped', build.id)).status).toBe(204);
    expect(await counts(a)).toEqual({ installed: 1, skipped: 1, failed: 0, pending: 0, unable: 0, complete: true });
    for (const device of [installer, skipper]) expect((await report(a, device, 'failed', build.id, { reason: 'rolled_back' })).status).toBe(204);
    expect(await counts(a)).toEqual({ installed: 1, skipped: 1, failed: 0, pending: 0, unable: 0, complete: true });
    expect(await offered(a, installer)).toBeNull();
    expect(await offered(a, skipper)).toBeNull();
  });
});
