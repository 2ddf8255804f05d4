import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EICAR_SIGNATURE } from '../../server/builds/scanning/eicar.js';
import { owner, settled, uploadBuild, type Owner } from '../builds/support.js';
import { expectError } from '../support/assertions.js';
import { createLicense } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { appPush, expectPushConflict, licensedDevice, otherApp, proOwner, pushApp, pushPath, readyBuild } from './support.js';

let server: TestServer;
let o: Owner;
beforeAll(async () => {
  server = await startTestServer();
  o = await proOwner(server);
});
afterAll(() => server.close());

const post = (owner: Owner, body: Record<string, unknown> = {}) => owner.call('POST', pushPath(owner), { token: owner.dev.accessToken, body });
const buildPath = (owner: Owner, id: string, rest = '') => `/v1/apps/${owner.app.id}/builds/${id}${rest}`;
const getBuild = async (owner: Owner, id: string) => (await owner.call('GET', buildPath(owner, id), { token: owner.dev.accessToken })).body;
const setDeliveryMode = (owner: Owner, body: Record<string, unknown>) => owner.call('PUT', `/v1/apps/${owner.app.id}`, { token: owner.dev.accessToken, body });

/** A fresh app of the Pro developer with a license holder, so each case starts from no push. */
async function freshApp(appBody: Record<string, unknown> = {}): Promise<Owner> {
  const app = await otherApp(o, appBody);
  await licensedDevice(app);
  return app;
}

describe('POST /v1/apps/{app_id}/push-update', () => {
  it('pushes the newest READY build by default, skipping newer builds that failed', async () => {
    const a = await freshApp();
    await readyBuild(a);
    const newest = await readyBuild(a, { version: '2.0.0' });
    await settled(a, (await uploadBuild(a, { data: new Uint8Array(EICAR_SIGNATURE), name: 'x.com' })).id);
    const push = await pushApp(a, { release_notes: 'Faster sync.\nFewer bugs.' });
    expect(push).toEqual({
      target_build_id: newest.id,
      version: '2.0.0',
      platform: 'cross_platform',
      release_notes: 'Faster sync.\nFewer bugs.',
      serial: expect.any(Number),
      pushed_at: expect.any(String),
      devices: { installed: 0, skipped: 0, failed: 0, pending: 1, unable: 0 },
      complete: false,
    });
    expect(await appPush(a)).toEqual(push);
  });

  it('under released_only pushes the newest released build, not a newer unreleased one', async () => {
    const a = await freshApp({ delivery_mode: 'released_only' });
    const released = await readyBuild(a);
    expect((await a.call('POST', buildPath(a, released.id, '/release'), { token: a.dev.accessToken })).status).toBe(200);
    await readyBuild(a);
    expect((await pushApp(a)).target_build_id).toBe(released.id);
  });

  it('under released_only refuses an unreleased target with reason build_not_released, unless release_current releases it', async () => {
    const a = await freshApp({ delivery_mode: 'released_only' });
    const build = await readyBuild(a);
    expectPushConflict(await post(a, { target_build_id: build.id }), 'build_not_released');
    expect(await appPush(a)).toBeNull();
    expect((await getBuild(a, build.id)).released).toBe(false);

    expect((await pushApp(a, { target_build_id: build.id, release_current: true })).target_build_id).toBe(build.id);
    expect((await getBuild(a, build.id)).released).toBe(true);
  });

  it('under delivery mode all pushes an unreleased build', async () => {
    const a = await freshApp();
    const build = await readyBuild(a);
    expect((await pushApp(a, { target_build_id: build.id })).target_build_id).toBe(build.id);
    expect((await getBuild(a, build.id)).released).toBe(false);
  });

  it('needs a READY build: none at all, none released, a named one not READY', async () => {
    const a = await freshApp({ delivery_mode: 'released_only' });
    expectError(await post(a), 409, 'NO_READY_BUILD');
    await readyBuild(a);
    expectError(await post(a), 409, 'NO_READY_BUILD');
    const failed = await settled(a, (await uploadBuild(a, { data: new Uint8Array(EICAR_SIGNATURE), name: 'x.com' })).id);
    expectError(await post(a, { target_build_id: failed.id, release_current: true }), 409, 'BUILD_NOT_READY');
    expect(await appPush(a)).toBeNull();
  });

  it('needs an active license holder: revoked and expired licenses do not count', async () => {
    const a = await otherApp(o);
    await readyBuild(a);
    expectError(await post(a), 409, 'NO_ACTIVE_LICENSE');
    const revoked = await createLicense(a.call, a.dev, { app_id: a.app.id });
    expect((await a.call('POST', `/v1/licenses/${revoked.license_id}/revoke`, { apiKey: a.dev.apiKey })).status).toBe(200);
    await createLicense(a.call, a.dev, { app_id: a.app.id, expires_at: new Date(server.clock.now().getTime() + 60_000).toISOString() });
    server.clock.advance(120_000);
    expectError(await post(a), 409, 'NO_ACTIVE_LICENSE');
    await createLicense(a.call, a.dev, { app_id: a.app.id });
    expect((await pushApp(a)).devices).toEqual({ installed: 0, skipped: 0, failed: 0, pending: 0, unable: 0 });
  });

  it('needs the Pro plan', async () => {
    const free = await owner(server);
    await readyBuild(free);
    await createLicense(free.call, free.dev, { app_id: free.app.id, license_type: 'trial' });
    expectError(await post(free), 403, 'PLAN_REQUIRED');
    expect((await free.call('GET', pushPath(free), { token: free.dev.accessToken })).body.push).toBeNull();
  });

  it('replaces the active push with a higher serial each time, the same target included', async () => {
    const a = await freshApp();
    const first = await readyBuild(a);
    const pushes = [await pushApp(a, { target_build_id: first.id, release_notes: 'one' })];
    pushes.push(await pushApp(a, { target_build_id: first.id, release_notes: 'two' }));
    const second = await readyBuild(a);
    pushes.push(await pushApp(a, { release_notes: 'three' }));
    expect(pushes.map((p) => p.target_build_id)).toEqual([first.id, first.id, second.id]);
    expect(pushes[1]!.serial).toBeGreaterThan(pushes[0]!.serial);
    expect(pushes[2]!.serial).toBeGreaterThan(pushes[1]!.serial);
    expect(await appPush(a)).toMatchObject({ target_build_id: second.id, release_notes: 'three', serial: pushes[2]!.serial });
  });

  it('refuses a build older than the active target until the push is cleared, naming the active target', async () => {
    const a = await freshApp();
    const older = await readyBuild(a);
    const newer = await readyBuild(a);
    const active = await pushApp(a, { target_build_id: newer.id });
    const res = await post(a, { target_build_id: older.id });
    expectPushConflict(res, 'older_than_active_target');
    expect(res.body.detail).toContain(newer.id);
    expect(await appPush(a)).toEqual(active);

    const cleared = await a.call('DELETE', pushPath(a), { token: a.dev.accessToken });
    expect(cleared.status).toBe(204);
    expect(await appPush(a)).toBeNull();
    const rolledBack = await pushApp(a, { target_build_id: older.id });
    expect(rolledBack.target_build_id).toBe(older.id);
    expect(rolledBack.serial).toBeGreaterThan(active.serial);
  });

  it('clearing an app without a push is a 204 too', async () => {
    const a = await freshApp();
    expect((await a.call('DELETE', pushPath(a), { token: a.dev.accessToken })).status).toBe(204);
    expect(await appPush(a)).toBeNull();
  });

  it('refuses bad input with 400 and changes nothing', async () => {
    const a = await freshApp();
    const build = await readyBuild(a);
    const active = await pushApp(a, { target_build_id: build.id, release_notes: 'kept' });
    const bodies = [
      { release_notes: 'x'.repeat(10_001) },
      { release_notes: 'colour \u001b[31mred' },
      { release_notes: 42 },
      { target_build_id: '' },
      { target_build_id: 'b'.repeat(65) },
      { release_current: 'yes' },
      { release_notes: 'ok', surprise: true },
    ];
    for (const body of bodies) expectError(await post(a, body), 400, 'VALIDATION_FAILED');
    const raw = await a.call('POST', pushPath(a), { token: a.dev.accessToken, raw: { data: '{"release_notes":', contentType: 'application/json' } });
    expect(raw.status).toBe(400);
    expect(await appPush(a)).toEqual(active);
  });

  it("answers 404 for another developer's app and build, and changes nothing", async () => {
    const a = await freshApp();
    const stranger = await proOwner(server);
    await licensedDevice(stranger);
    const foreign = await readyBuild(a);
    expectError(await post(stranger, { target_build_id: foreign.id }), 404, 'BUILD_NOT_FOUND');
    expectError(await post(a, { target_build_id: 'bld_missing' }), 404, 'BUILD_NOT_FOUND');
    const active = await pushApp(a);
    for (const method of ['POST', 'GET', 'DELETE']) {
      const res = await stranger.call(method, pushPath(a), { token: stranger.dev.accessToken, body: method === 'POST' ? {} : undefined });
      expectError(res, 404, 'APP_NOT_FOUND');
    }
    expect(await appPush(a)).toEqual(active);
  });

  it('two simultaneous pushes leave exactly one active push, with the higher serial', async () => {
    const a = await freshApp();
    const build = await readyBuild(a);
    const [one, two] = await Promise.all([pushApp(a, { target_build_id: build.id, release_notes: 'one' }), pushApp(a, { target_build_id: build.id, release_notes: 'two' })]);
    expect(one!.serial).not.toBe(two!.serial);
    const winner = one!.serial > two!.serial ? one! : two!;
    expect(await appPush(a)).toMatchObject({ serial: winner.serial, release_notes: winner.release_notes });
    expect(await server.database.db('app_pushes').where({ app_id: a.app.id }).count<{ count: number }[]>('* as count')).toEqual([{ count: 1 }]);
  });
});

describe('rules on other operations', () => {
  it('unreleasing the target of the active push is a 409 active_push_target until the push is cleared', async () => {
    const a = await freshApp();
    const build = await readyBuild(a);
    expect((await a.call('POST', buildPath(a, build.id, '/release'), { token: a.dev.accessToken })).status).toBe(200);
    await pushApp(a, { target_build_id: build.id });
    expectPushConflict(await a.call('DELETE', buildPath(a, build.id, '/release'), { token: a.dev.accessToken }), 'active_push_target');
    expect((await getBuild(a, build.id)).released).toBe(true);

    expect((await a.call('DELETE', pushPath(a), { token: a.dev.accessToken })).status).toBe(204);
    const res = await a.call('DELETE', buildPath(a, build.id, '/release'), { token: a.dev.accessToken });
    expect(res.status).toBe(200);
    expect(res.body.released).toBe(false);
  });

  it('switching to released_only while the push targets an unreleased build is a 409, unless release_current releases it', async () => {
    const a = await freshApp();
    const build = await readyBuild(a);
    await pushApp(a, { target_build_id: build.id });
    expectPushConflict(await setDeliveryMode(a, { delivery_mode: 'released_only', name: 'Renamed' }), 'push_target_not_released');
    const app = (await a.call('GET', `/v1/apps/${a.app.id}`, { token: a.dev.accessToken })).body;
    expect(app).toMatchObject({ delivery_mode: 'all', name: a.app.name });
    expect((await getBuild(a, build.id)).released).toBe(false);

    const res = await setDeliveryMode(a, { delivery_mode: 'released_only', release_current: true });
    expect(res.status).toBe(200);
    expect(res.body.delivery_mode).toBe('released_only');
    expect((await getBuild(a, build.id)).released).toBe(true);
  });

  it('switching to released_only needs nothing more when the push target is released or there is no push', async () => {
    const a = await freshApp();
    expect((await setDeliveryMode(a, { delivery_mode: 'released_only' })).status).toBe(200);
    expect((await setDeliveryMode(a, { delivery_mode: 'all' })).status).toBe(200);
  });

  it('release_current needs delivery_mode in the same body', async () => {
    const a = await freshApp();
    expectError(await setDeliveryMode(a, { release_current: true }), 400, 'VALIDATION_FAILED');
    expectError(await setDeliveryMode(a, { name: 'X', release_current: true }), 400, 'VALIDATION_FAILED');
  });

  it("another developer switching the app's delivery mode gets 404, whatever the push", async () => {
    const a = await freshApp();
    await pushApp(a, { target_build_id: (await readyBuild(a)).id });
    const stranger = await proOwner(server);
    const res = await stranger.call('PUT', `/v1/apps/${a.app.id}`, { token: stranger.dev.accessToken, body: { delivery_mode: 'released_only' } });
    expectError(res, 404, 'APP_NOT_FOUND');
  });

  it('deleting the target build clears the app push and the per-license pushes to it', async () => {
    const a = await freshApp();
    const kept = await readyBuild(a);
    const target = await readyBuild(a);
    const device = await licensedDevice(a);
    const other = await licensedDevice(a);
    await pushApp(a, { target_build_id: target.id });
    const toTarget = await a.call('POST', `/v1/licenses/${device.license_id}/push-update`, { token: a.dev.accessToken, body: { target_build_id: target.id } });
    expect(toTarget.status).toBe(200);
    const toKept = await a.call('POST', `/v1/licenses/${other.license_id}/push-update`, { token: a.dev.accessToken, body: { target_build_id: kept.id } });
    expect(toKept.status).toBe(200);

    expect((await a.call('DELETE', buildPath(a, target.id), { token: a.dev.accessToken })).status).toBe(204);
    expect(await appPush(a)).toBeNull();
    const licensePush = async (licenseId: string) => (await a.call('GET', `/v1/licenses/${licenseId}/push-update`, { token: a.dev.accessToken })).body.push;
    expect(await licensePush(device.license_id)).toBeNull();
    expect((await licensePush(other.license_id)).target_build_id).toBe(kept.id);
  });
});
