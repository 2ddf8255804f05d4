/**
 * Issue 20 item 4, the authority's half: a device that comes back with one component changed (a
 * new disk, a new network card in a VM) is recognised by its component hashes and keeps its seat;
 * another machine still needs a seat of its own. The SDK against the real server (Koa + PostgreSQL).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLicenseClient, type LicenseClient, type LicenseClientOptions } from '../../runtime-sdk/index.js';
import { createLicense, randomFingerprint } from '../support/fixtures.js';
import { fakeMachine, tempDir, type FakeMachine } from './support/fake-machine.js';
import { startRealAuthority } from './support/real-authority.js';

const { server, call, dev, app, publicKeys } = await startRealAuthority();
const base: Omit<LicenseClientOptions, 'cacheDir'> = {
  appId: app.id,
  serverUrl: server.url,
  publicKeys,
  fingerprintSalt: app.fingerprint_salt,
  appVersion: '2.3.0',
  refreshOnStart: false,
  startupDelayMs: 0,
  retryLimit: 0,
};
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

async function devicesOf(licenseId: string): Promise<unknown[]> {
  const detail = await call('GET', `/v1/licenses/${licenseId}`, { apiKey: dev.apiKey });
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
