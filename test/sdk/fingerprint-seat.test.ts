/**
 * Issue 20 item 4, the authority's half: a device that comes back with one component changed (a
 * new disk, a new network card in a VM) is recognised by its component hashes and keeps its seat;
 * another machine still needs a seat of its own. The SDK against the real server (Koa + PostgreSQL).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLicenseClient, type LicenseClient, type LicenseClientOptions } from '../../runtime-sdk/index.js';
import { LICENSE_LIMITS } from '../../server/http/license-limits.js';
import { createApp, createLicense, randomFingerprint, registerDeveloper, setPlan, type TestDeveloper } from '../support/fixtures.js';
import { client, type Call } from '../support/http.js';
import { startTestServer } from '../support/server.js';
import { fakeMachine, tempDir, type FakeMachine } from './support/fake-machine.js';
import { startRealAuthority } from './support/real-authority.js';

const { server, call, dev, sdkOptions: base } = await startRealAuthority();
const clients: LicenseClient[] = [];

afterAll(async () => {
  await Promise.all(clients.map((c) => c.dispose()));
});

/** A fresh installation (its own cache folder) on `machine`. */
async function install(machine: FakeMachine): Promise<LicenseClient> {
  const license = await createLicenseClient({ ...base, cacheDir: tempDir(), platform: machine.platform, fingerprintProbes: machine.probes });
  clients.push(license);
  return license;
}

async function devicesOf(licenseId: string, on: { call: Call; dev: TestDeveloper } = { call, dev }): Promise<unknown[]> {
  const detail = await on.call('GET', `/v1/licenses/${licenseId}`, { apiKey: on.dev.apiKey });
  expect(detail.status).toBe(200);
  return detail.body.devices as unknown[];
}

describe('component-tolerant device matching on the authority', () => {
  it('a device with one changed non-machine-id component keeps its seat; another machine does not get one', async () => {
    const created = await createLicense(call, dev, { app_id: base.appId, license_type: 'perpetual', device_limit: 1 });
    expect((await (await install(fakeMachine('S1'))).activate(created.license_key)).state).toBe('valid');

    // The same computer with a new disk, installed afresh: a different fingerprint hash.
    const newDisk = await install(fakeMachine('S1', { 'disk.serial': 'WD-NEW-DISK-0042' }));
    expect((await newDisk.activate(created.license_key)).state).toBe('valid');
    expect(await devicesOf(created.license_id)).toHaveLength(1);
    // And its token refreshes as that device.
    expect((await newDisk.refresh()).state).toBe('valid');

    // Another computer (its own machine id and serials) finds the only seat taken.
    await expect((await install(fakeMachine('T1'))).activate(created.license_key)).rejects.toMatchObject({ code: 'DEVICE_LIMIT_REACHED' });
    // Two changes at once (disk and board): machine id plus uuid and cpu still match.
    const twoChanges = await install(fakeMachine('S1', { 'disk.serial': 'WD-NEW-DISK-0043', 'board.serial': 'BRD-NEW' }));
    expect((await twoChanges.activate(created.license_key)).state).toBe('valid');
    expect(await devicesOf(created.license_id)).toHaveLength(1);
  });

  it('floating: the same computer with a changed component keeps its own seat, its lease renamed with its record; another computer waits', async () => {
    const created = await createLicense(call, dev, { app_id: base.appId, license_type: 'perpetual', seat_model: 'floating', max_concurrent: 1, lease_ttl_minutes: 15 });
    expect((await (await install(fakeMachine('F1'))).activate(created.license_key)).state).toBe('valid');
    const seats = async () => (await call('GET', `/v1/licenses/${created.license_id}`, { apiKey: dev.apiKey })).body.seats_in_use;
    expect(await seats()).toBe(1);

    // Another computer finds the only seat leased, and the record of the one holding it is unchanged.
    const before = await devicesOf(created.license_id);
    await expect((await install(fakeMachine('G1'))).activate(created.license_key)).rejects.toMatchObject({ code: 'NO_SEAT_AVAILABLE' });
    expect(await devicesOf(created.license_id)).toEqual(before);

    // The same computer with a new disk, installed afresh: its seat, not a second one.
    const newDisk = await install(fakeMachine('F1', { 'disk.serial': 'WD-NEW-DISK-0077' }));
    expect((await newDisk.activate(created.license_key)).state).toBe('valid');
    expect(await devicesOf(created.license_id)).toHaveLength(1);
    expect(await seats()).toBe(1);
    // Its heartbeat renews that seat; and another computer still waits.
    expect((await newDisk.refresh()).state).toBe('valid');
    await expect((await install(fakeMachine('G2'))).activate(created.license_key)).rejects.toMatchObject({ code: 'NO_SEAT_AVAILABLE' });
  });

  it('floating, over-subscribed after its seats were lowered: a renamed device refused a seat renames nothing and keeps its old seat', async () => {
    const created = await createLicense(call, dev, { app_id: base.appId, license_type: 'perpetual', seat_model: 'floating', max_concurrent: 2, lease_ttl_minutes: 15 });
    const holder = await install(fakeMachine('F2'));
    expect((await holder.activate(created.license_key)).state).toBe('valid');
    expect((await (await install(fakeMachine('G3'))).activate(created.license_key)).state).toBe('valid');
    expect((await call('PUT', `/v1/licenses/${created.license_id}/seats`, { apiKey: dev.apiKey, body: { max_concurrent: 1 } })).status).toBe(200);
    const before = await devicesOf(created.license_id);

    // Two leases live for one seat now: the same computer with a new disk is refused one of its own.
    await expect((await install(fakeMachine('F2', { 'disk.serial': 'WD-NEW-DISK-0099' }))).activate(created.license_key)).rejects.toMatchObject({ code: 'NO_SEAT_AVAILABLE' });
    expect(await devicesOf(created.license_id)).toEqual(before);
    // The running copy still holds its seat under its fingerprint: its heartbeat renews it.
    expect((await holder.refresh()).state).toBe('valid');
  });

  it('a request without component hashes is answered as before; malformed ones are a 400 in the error shape', async () => {
    const created = await createLicense(call, dev, { app_id: base.appId, license_type: 'perpetual', device_limit: 2 });
    const plain = await call('POST', '/v1/licenses/activate', { body: { license_key: created.license_key, device_fingerprint: randomFingerprint() } });
    expect(plain.status).toBe(200);
    const unknownNames = await call('POST', '/v1/licenses/activate', {
      body: {
        license_key: created.license_key,
        device_fingerprint: randomFingerprint(),
        fingerprint_components: { 'os.machine_id': randomFingerprint(), 'gpu.serial': randomFingerprint() },
      },
    });
    expect(unknownNames.status).toBe(200);
    const malformed = await call('POST', '/v1/licenses/activate', {
      body: { license_key: created.license_key, device_fingerprint: randomFingerprint(), fingerprint_components: { 'os.machine_id': 'not-a-hash' } },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ error_code: expect.any(String), status_code: 400, detail: expect.any(String) });
  });

  it('concurrent activations of changed and new devices never exceed the device limit', async () => {
    const created = await createLicense(call, dev, { app_id: base.appId, license_type: 'perpetual', device_limit: 2 });
    expect((await (await install(fakeMachine('C1'))).activate(created.license_key)).state).toBe('valid');
    const contenders = [fakeMachine('C1', { 'disk.serial': 'NEW-1' }), fakeMachine('C1', { 'disk.serial': 'NEW-2' }), fakeMachine('D1'), fakeMachine('D2'), fakeMachine('D3')];
    const outcomes = await Promise.allSettled(contenders.map(async (machine) => (await install(machine)).activate(created.license_key)));
    expect(outcomes.filter((o) => o.status === 'fulfilled').length).toBeGreaterThanOrEqual(2);
    expect((await devicesOf(created.license_id)).length).toBeLessThanOrEqual(2);
  });
});

/** The component hashes of a new machine, for requests made over HTTP. */
function randomComponents(): Record<string, string> {
  return {
    'os.machine_id': randomFingerprint(),
    'system.uuid': randomFingerprint(),
    'board.serial': randomFingerprint(),
    'disk.serial': randomFingerprint(),
    cpu: randomFingerprint(),
  };
}

/**
 * A one-device license activated over HTTP, then activated again by the same machine with a new
 * disk (another installation): its record renamed, the first token names a fingerprint no longer on record.
 */
async function renamedByAnotherInstallation(on: { call: Call; dev: TestDeveloper; appId: string } = { call, dev, appId: base.appId }) {
  const { call } = on;
  const created = await createLicense(call, on.dev, { app_id: on.appId, license_type: 'perpetual', device_limit: 1 });
  const machine = randomComponents();
  const activated = await call('POST', '/v1/licenses/activate', {
    body: { license_key: created.license_key, device_fingerprint: randomFingerprint(), fingerprint_components: machine },
  });
  expect(activated.status).toBe(200);
  const changed = { ...machine, 'disk.serial': randomFingerprint() };
  const renaming = await call('POST', '/v1/licenses/activate', {
    body: { license_key: created.license_key, device_fingerprint: randomFingerprint(), fingerprint_components: changed },
  });
  expect(renaming.status).toBe(200);
  expect(await devicesOf(created.license_id, on)).toHaveLength(1);
  return { created, changed, staleToken: activated.body.token as string, renamedToken: renaming.body.token as string };
}

function tokenDevice(token: string): string {
  const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { device: string };
  return payload.device;
}

describe('a token of a device whose record another installation took over (its fingerprint changed)', () => {
  it('the same app after the hardware change refreshes with its still-valid token; so does the installation that renamed the device', async () => {
    const created = await createLicense(call, dev, { app_id: base.appId, license_type: 'perpetual', device_limit: 1 });
    const cacheDir = tempDir();
    const options = (machine: FakeMachine, dir: string) => ({ ...base, cacheDir: dir, platform: machine.platform, fingerprintProbes: machine.probes });
    const before = await createLicenseClient(options(fakeMachine('R1'), cacheDir));
    clients.push(before);
    expect((await before.activate(created.license_key)).state).toBe('valid');
    await before.dispose();

    // The disk is replaced. A second installation of the app (its own cache) activates: the authority renames the device's record.
    const newDisk = fakeMachine('R1', { 'disk.serial': 'WD-REPLACED-0099' });
    const second = await install(newDisk);
    expect((await second.activate(created.license_key)).state).toBe('valid');
    expect(await devicesOf(created.license_id)).toHaveLength(1);

    // The first installation starts on the new disk from its cache (token for the old fingerprint) and refreshes.
    const after = await createLicenseClient(options(newDisk, cacheDir));
    clients.push(after);
    expect((await after.check()).state).toBe('valid');
    expect(await after.refresh()).toMatchObject({ state: 'valid', usable: true });
    expect((await second.refresh()).state).toBe('valid');
    expect((await after.refresh()).state).toBe('valid');
    expect(await devicesOf(created.license_id)).toHaveLength(1);

    // Its cache was sealed for the fingerprint it now holds: a later start opens it.
    await after.dispose();
    const restarted = await createLicenseClient(options(newDisk, cacheDir));
    clients.push(restarted);
    expect((await restarted.check()).state).toBe('valid');
    expect((await restarted.refresh()).state).toBe('valid');
  });

  it('what it queued offline under its old fingerprint (metered consumptions) is still reported once its token moves', async () => {
    const created = await createLicense(call, dev, {
      app_id: base.appId,
      license_type: 'perpetual',
      device_limit: 1,
      meters: { export: { uses_per_period: 10, period: 'month' } },
    });
    const cacheDir = tempDir();
    const options = (machine: FakeMachine, extra: Partial<LicenseClientOptions> = {}) => ({
      ...base,
      cacheDir,
      platform: machine.platform,
      fingerprintProbes: machine.probes,
      ...extra,
    });
    const before = await createLicenseClient(options(fakeMachine('R7')));
    clients.push(before);
    expect((await before.activate(created.license_key)).state).toBe('valid');
    expect((await before.consume('export', 1)).queued).toBe(false);
    await before.dispose();
    const offline = await createLicenseClient(options(fakeMachine('R7'), { serverUrl: 'http://127.0.0.1:9' }));
    clients.push(offline);
    expect(await offline.consume('export', 2)).toMatchObject({ queued: true });
    await offline.dispose();

    // The disk is replaced and another installation renames the record; this one's token moves at its refresh.
    const newDisk = fakeMachine('R7', { 'disk.serial': 'WD-REPLACED-0777' });
    expect((await (await install(newDisk)).activate(created.license_key)).state).toBe('valid');
    const after = await createLicenseClient(options(newDisk));
    clients.push(after);
    expect((await after.refresh()).state).toBe('valid');
    const usage = await call('GET', `/v1/licenses/${created.license_id}/usage`, { apiKey: dev.apiKey });
    expect(usage.body.meters.find((m: { feature: string }) => m.feature === 'export').used).toBe(3);
  });

  it('over HTTP: the token moves to the renamed record only with component hashes that match it by the rule; another machine is refused', async () => {
    const created = await createLicense(call, dev, { app_id: base.appId, license_type: 'perpetual', device_limit: 2 });
    const machine = randomComponents();
    const oldDevice = randomFingerprint();
    const activated = await call('POST', '/v1/licenses/activate', { body: { license_key: created.license_key, device_fingerprint: oldDevice, fingerprint_components: machine } });
    expect(activated.status).toBe(200);
    const staleToken = activated.body.token as string;

    const changed = { ...machine, 'disk.serial': randomFingerprint() };
    const newDevice = randomFingerprint();
    const renaming = await call('POST', '/v1/licenses/activate', { body: { license_key: created.license_key, device_fingerprint: newDevice, fingerprint_components: changed } });
    expect(renaming.status).toBe(200);
    const other = randomComponents();
    const otherDevice = randomFingerprint();
    expect(
      (await call('POST', '/v1/licenses/activate', { body: { license_key: created.license_key, device_fingerprint: otherDevice, fingerprint_components: other } })).status,
    ).toBe(200);

    // The token alone names a fingerprint no longer on record (as an older runtime sends it).
    const alone = await call('POST', '/v1/licenses/refresh', { body: { token: staleToken } });
    expect(alone.status).toBe(403);
    expect(alone.body.error_code).toBe('DEVICE_NOT_ACTIVATED');
    // Another machine on the license (its own fingerprint and components) cannot take the stale token over, nor can one off it.
    for (const presented of [
      { device_fingerprint: otherDevice, fingerprint_components: other },
      { device_fingerprint: randomFingerprint(), fingerprint_components: { ...other, 'disk.serial': randomFingerprint() } },
      { device_fingerprint: newDevice, fingerprint_components: other },
    ]) {
      const refused = await call('POST', '/v1/licenses/refresh', { body: { token: staleToken, ...presented } });
      expect(refused.status).toBe(403);
      expect(refused.body.error_code).toBe('DEVICE_NOT_ACTIVATED');
    }
    // A fingerprint without its components is a 400 in the error shape.
    const incomplete = await call('POST', '/v1/licenses/refresh', { body: { token: staleToken, device_fingerprint: newDevice } });
    expect(incomplete.status).toBe(400);
    expect(incomplete.body).toMatchObject({ error_code: expect.any(String), status_code: 400, detail: expect.any(String) });

    // The machine as it reads now: the token is re-issued for the fingerprint on record.
    const moved = await call('POST', '/v1/licenses/refresh', { body: { token: staleToken, device_fingerprint: newDevice, fingerprint_components: changed } });
    expect(moved.status).toBe(200);
    expect(tokenDevice(moved.body.token as string)).toBe(newDevice);
    // The stale token keeps moving to the record, also after a further change renamed it again (a new board too).
    const again = { ...changed, 'board.serial': randomFingerprint() };
    const newestDevice = randomFingerprint();
    expect(
      (await call('POST', '/v1/licenses/activate', { body: { license_key: created.license_key, device_fingerprint: newestDevice, fingerprint_components: again } })).status,
    ).toBe(200);
    const later = await call('POST', '/v1/licenses/refresh', { body: { token: staleToken, device_fingerprint: newestDevice, fingerprint_components: again } });
    expect(later.status).toBe(200);
    expect(tokenDevice(later.body.token as string)).toBe(newestDevice);
    // Read under another fingerprint that still matches by the rule: the record is renamed to it.
    const rereadDevice = randomFingerprint();
    const reread = await call('POST', '/v1/licenses/refresh', { body: { token: staleToken, device_fingerprint: rereadDevice, fingerprint_components: again } });
    expect(reread.status).toBe(200);
    expect(tokenDevice(reread.body.token as string)).toBe(rereadDevice);
    expect(await devicesOf(created.license_id)).toHaveLength(2);

    // Once the developer resets the devices, the stale token is refused however the machine reads.
    expect((await call('POST', `/v1/licenses/${created.license_id}/reset-devices`, { apiKey: dev.apiKey })).status).toBeLessThan(300);
    const afterReset = await call('POST', '/v1/licenses/refresh', { body: { token: staleToken, device_fingerprint: rereadDevice, fingerprint_components: again } });
    expect(afterReset.status).toBe(403);
    expect(afterReset.body.error_code).toBe('DEVICE_NOT_ACTIVATED');
  });

  it('deactivation from the app with a token of the old fingerprint frees the renamed record', async () => {
    const { created, staleToken, renamedToken } = await renamedByAnotherInstallation();
    const deactivated = await call('POST', '/v1/licenses/deactivate', { body: { token: staleToken } });
    expect(deactivated.status).toBe(200);
    expect(deactivated.body.deactivated).toBe(true);
    expect(await devicesOf(created.license_id)).toHaveLength(0);
    const refused = await call('POST', '/v1/licenses/refresh', { body: { token: renamedToken } });
    expect(refused.body.error_code).toBe('DEVICE_NOT_ACTIVATED');
  });

  it('concurrent stale-token refreshes and activations never exceed the device limit', async () => {
    const { created, staleToken, changed } = await renamedByAnotherInstallation();
    const burst = Array.from({ length: 6 }, (_, i) => {
      const reading = { ...changed, 'board.serial': randomFingerprint() };
      return i % 2 === 0
        ? call('POST', '/v1/licenses/refresh', { body: { token: staleToken, device_fingerprint: randomFingerprint(), fingerprint_components: reading } })
        : call('POST', '/v1/licenses/activate', {
            body: { license_key: created.license_key, device_fingerprint: randomFingerprint(), fingerprint_components: { ...reading, 'os.machine_id': randomFingerprint() } },
          });
    });
    const statuses = (await Promise.all(burst)).map((r) => r.status);
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    expect(await devicesOf(created.license_id)).toHaveLength(1);
  });
});

const fingerprintsOf = async (licenseId: string, on?: { call: Call; dev: TestDeveloper }) =>
  ((await devicesOf(licenseId, on)) as { fingerprint_hash: string }[]).map((d) => d.fingerprint_hash).sort();

describe('a stale token presented with another device of the license', () => {
  it("is refused, and leaves that device's record as it was (its own later change keeps its seat)", async () => {
    const created = await createLicense(call, dev, { app_id: base.appId, license_type: 'perpetual', device_limit: 2 });
    const machine = randomComponents();
    const activated = await call('POST', '/v1/licenses/activate', {
      body: { license_key: created.license_key, device_fingerprint: randomFingerprint(), fingerprint_components: machine },
    });
    expect(activated.status).toBe(200);
    const changed = { ...machine, 'disk.serial': randomFingerprint() };
    const renamedDevice = randomFingerprint();
    expect(
      (await call('POST', '/v1/licenses/activate', { body: { license_key: created.license_key, device_fingerprint: renamedDevice, fingerprint_components: changed } })).status,
    ).toBe(200);
    const other = randomComponents();
    const otherDevice = randomFingerprint();
    expect(
      (await call('POST', '/v1/licenses/activate', { body: { license_key: created.license_key, device_fingerprint: otherDevice, fingerprint_components: other } })).status,
    ).toBe(200);

    // The stale token's record matches these components, but the fingerprint is the other device's row.
    const hijack = await call('POST', '/v1/licenses/refresh', {
      body: { token: activated.body.token, device_fingerprint: otherDevice, fingerprint_components: changed },
    });
    expect(hijack.status).toBe(403);
    expect(hijack.body.error_code).toBe('DEVICE_NOT_ACTIVATED');
    expect(await fingerprintsOf(created.license_id)).toEqual([renamedDevice, otherDevice].sort());

    // The other device's components were kept: its own new disk is still recognised as it.
    const otherChanged = await call('POST', '/v1/licenses/activate', {
      body: { license_key: created.license_key, device_fingerprint: randomFingerprint(), fingerprint_components: { ...other, 'disk.serial': randomFingerprint() } },
    });
    expect(otherChanged.status, JSON.stringify(otherChanged.body)).toBe(200);
    expect(await devicesOf(created.license_id)).toHaveLength(2);
    // And the renamed record still takes the stale token as read now.
    const moved = await call('POST', '/v1/licenses/refresh', { body: { token: activated.body.token, device_fingerprint: renamedDevice, fingerprint_components: changed } });
    expect(moved.status).toBe(200);
    expect(tokenDevice(moved.body.token as string)).toBe(renamedDevice);
  });
});

describe('a refused stale-token refresh renames nothing', () => {
  it('when the license is revoked', async () => {
    const { created, staleToken, changed, renamedToken } = await renamedByAnotherInstallation();
    expect((await call('POST', `/v1/licenses/${created.license_id}/revoke`, { apiKey: dev.apiKey, body: {} })).status).toBeLessThan(300);
    const refused = await call('POST', '/v1/licenses/refresh', {
      body: { token: staleToken, device_fingerprint: randomFingerprint(), fingerprint_components: { ...changed, 'board.serial': randomFingerprint() } },
    });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refused.status).toBeLessThan(500);
    expect(await fingerprintsOf(created.license_id)).toEqual([tokenDevice(renamedToken)]);
  });

  it('when the license is past its refresh limit (429)', async () => {
    const limitedServer = await startTestServer({ realRateLimits: true });
    try {
      const on = { call: client(limitedServer.url), dev: await registerDeveloper(client(limitedServer.url)) };
      await setPlan(on.call, limitedServer.adminToken, on.dev.id, 'pro');
      const { created, staleToken, changed, renamedToken } = await renamedByAnotherInstallation({ ...on, appId: (await createApp(on.call, on.dev)).id });
      // Just inside a fresh window (windows are aligned to the clock), so that the refreshes below all count in one.
      limitedServer.clock.enterFreshWindow(LICENSE_LIMITS.refresh.windowSeconds * 1000);
      for (let i = 0; i < LICENSE_LIMITS.refresh.limit; i++) expect((await on.call('POST', '/v1/licenses/refresh', { body: { token: renamedToken } })).status).toBe(200);
      const limited = await on.call('POST', '/v1/licenses/refresh', {
        body: { token: staleToken, device_fingerprint: randomFingerprint(), fingerprint_components: { ...changed, 'board.serial': randomFingerprint() } },
      });
      expect(limited.status).toBe(429);
      expect(await fingerprintsOf(created.license_id, on)).toEqual([tokenDevice(renamedToken)]);
    } finally {
      await limitedServer.close();
    }
  });
});

describe('a refused activation of a changed device renames nothing', () => {
  /** A license with one device activated with its components, and the same machine read after a disk change. */
  async function activatedMachine(on: { call: Call; dev: TestDeveloper; appId: string }) {
    const created = await createLicense(on.call, on.dev, { app_id: on.appId, license_type: 'perpetual', device_limit: 2 });
    const machine = randomComponents();
    const device = randomFingerprint();
    const first = await on.call('POST', '/v1/licenses/activate', { body: { license_key: created.license_key, device_fingerprint: device, fingerprint_components: machine } });
    expect(first.status).toBe(200);
    const changed = { license_key: created.license_key, device_fingerprint: randomFingerprint(), fingerprint_components: { ...machine, 'disk.serial': randomFingerprint() } };
    return { created, device, changed };
  }

  it('when the license is revoked', async () => {
    const { created, device, changed } = await activatedMachine({ call, dev, appId: base.appId });
    expect((await call('POST', `/v1/licenses/${created.license_id}/revoke`, { apiKey: dev.apiKey, body: {} })).status).toBeLessThan(300);
    const refused = await call('POST', '/v1/licenses/activate', { body: changed });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refused.status).toBeLessThan(500);
    expect(await fingerprintsOf(created.license_id)).toEqual([device]);
  });

  it('when the license is past its activation limit (429); within it, the same request renames the record', async () => {
    const limitedServer = await startTestServer({ realRateLimits: true });
    try {
      const on = { call: client(limitedServer.url), dev: await registerDeveloper(client(limitedServer.url)) };
      await setPlan(on.call, limitedServer.adminToken, on.dev.id, 'pro');
      // Just inside a fresh window (windows are aligned to the clock), so that the activations below all count in one.
      limitedServer.clock.enterFreshWindow(LICENSE_LIMITS.activation.windowSeconds * 1000);
      const { created, device, changed } = await activatedMachine({ ...on, appId: (await createApp(on.call, on.dev)).id });
      const again = { license_key: created.license_key, device_fingerprint: device };
      for (let i = 1; i < LICENSE_LIMITS.activation.limit; i++) expect((await on.call('POST', '/v1/licenses/activate', { body: again })).status).toBe(200);
      const limited = await on.call('POST', '/v1/licenses/activate', { body: changed });
      expect(limited.status).toBe(429);
      expect(await fingerprintsOf(created.license_id, on)).toEqual([device]);
      // In the next window the same reading is recognised: the record is renamed, no seat added.
      limitedServer.clock.advance(LICENSE_LIMITS.activation.windowSeconds * 1000);
      expect((await on.call('POST', '/v1/licenses/activate', { body: changed })).status).toBe(200);
      expect(await fingerprintsOf(created.license_id, on)).toEqual([changed.device_fingerprint]);
    } finally {
      await limitedServer.close();
    }
  });
});

describe('a changed device whose record is reset between its activation and its rename', () => {
  /**
   * A license with one device activated with its components. The developer's reset (and, with
   * `expire`, the license's expiry, as a store's redact sets it) lands right after the next activation
   * statement touched that record and before the rename: a trigger in this file's own database does
   * it as that statement ends, once.
   */
  async function resetAfterNextTouch(expire: boolean) {
    const created = await createLicense(call, dev, { app_id: base.appId, license_type: 'perpetual', device_limit: 1 });
    const machine = randomComponents();
    const first = await call('POST', '/v1/licenses/activate', {
      body: { license_key: created.license_key, device_fingerprint: randomFingerprint(), fingerprint_components: machine },
    });
    expect(first.status).toBe(200);
    await server.database.db.raw(
      `CREATE TABLE IF NOT EXISTS test_reset_after_touch (license_id text PRIMARY KEY, expire boolean NOT NULL);
       CREATE OR REPLACE FUNCTION test_reset_after_touch() RETURNS trigger LANGUAGE plpgsql AS $$
         DECLARE planned test_reset_after_touch;
         BEGIN
           DELETE FROM test_reset_after_touch WHERE license_id = OLD.license_id RETURNING * INTO planned;
           IF FOUND THEN
             UPDATE licenses SET device_count = 0, status = CASE WHEN planned.expire THEN 'EXPIRED' ELSE status END WHERE id = OLD.license_id;
             DELETE FROM devices WHERE license_id = OLD.license_id;
           END IF;
           RETURN NULL;
         END $$;
       CREATE OR REPLACE TRIGGER test_reset_after_touch AFTER UPDATE OF last_seen_at ON devices
         FOR EACH ROW WHEN (OLD.fingerprint_hash = NEW.fingerprint_hash) EXECUTE FUNCTION test_reset_after_touch();`,
    );
    await server.database.db('test_reset_after_touch').insert({ license_id: created.license_id, expire });
    const changedDevice = randomFingerprint();
    const changed = await call('POST', '/v1/licenses/activate', {
      body: { license_key: created.license_key, device_fingerprint: changedDevice, fingerprint_components: { ...machine, 'disk.serial': randomFingerprint() } },
    });
    // The reset did happen in between.
    expect(await server.database.db('test_reset_after_touch').where({ license_id: created.license_id })).toEqual([]);
    return { created, changed, changedDevice };
  }

  it('takes the slot the reset freed, under its new fingerprint', async () => {
    const { created, changed, changedDevice } = await resetAfterNextTouch(false);
    expect(changed.status).toBe(200);
    expect(tokenDevice(changed.body.token)).toBe(changedDevice);
    expect(await fingerprintsOf(created.license_id)).toEqual([changedDevice]);
    // The slot is taken once: another machine is refused.
    const other = await call('POST', '/v1/licenses/activate', {
      body: { license_key: created.license_key, device_fingerprint: randomFingerprint(), fingerprint_components: randomComponents() },
    });
    expect(other.body.error_code).toBe('DEVICE_LIMIT_EXCEEDED');
  });

  it('takes no slot when the license expired meanwhile, and says so', async () => {
    const { created, changed } = await resetAfterNextTouch(true);
    expect(changed.status).toBe(403);
    expect(changed.body.error_code).toBe('LICENSE_EXPIRED');
    expect(await fingerprintsOf(created.license_id)).toEqual([]);
  });
});
