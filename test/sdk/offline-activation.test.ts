/**
 * Issue 22 item 3: offline (air-gapped) activation against the real authority (Koa + PostgreSQL).
 * The SDK never reaches the network (its server URL is a port nothing listens on): it exports a
 * request file, the test carries it to `POST /v1/licenses/offline-activation` over HTTP, and the SDK
 * imports the license file. Device limits are the online ones; a file altered, forged, expired, or
 * made for another computer or installation is refused and changes nothing.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LicenseClient } from '../../runtime-sdk/index.js';
import { createApp, createLicense } from '../support/fixtures.js';
import { tempDir } from './support/fake-machine.js';
import { licenseErrorOf } from './support/license-error.js';
import { installations } from './support/installations.js';
import { startRealAuthority } from './support/real-authority.js';

const { server, call, dev, app, publicKeys } = await startRealAuthority();
/** Nothing listens on port 9 (discard): every request the SDK would make fails as OFFLINE. */
const UNREACHABLE = 'http://127.0.0.1:9';
const installs = installations({ serverUrl: UNREACHABLE, publicKeys });
const { start } = installs;
const install = (name: string, forApp = app) => installs.install(name, forApp);

/** The customer's trip to the vendor: the request file's text posted as is, the license file back. */
async function exchange(requestFile: string) {
  return call('POST', '/v1/licenses/offline-activation', { raw: { data: requestFile, contentType: 'application/json' } });
}

async function licenseFileFor(license: LicenseClient, key: string): Promise<string> {
  const res = await exchange(await license.exportActivationRequest(key));
  expect(res.status).toBe(200);
  return res.body.license_file as string;
}

/** A compact JWS with `claims`, signed by a key the authority never had but under its key id. */
function forge(genuine: string, claims: object): string {
  const [header] = genuine.split('.');
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const { privateKey } = generateKeyPairSync('ed25519');
  const signature = sign(null, Buffer.from(`${header}.${payload}`), privateKey).toString('base64url');
  return `${header}.${payload}.${signature}`;
}

const claimsOf = (jws: string) => JSON.parse(Buffer.from(jws.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;

describe('offline activation', () => {
  it('exports a request, imports the license file after a restart with no network, and the next restart is still licensed', async () => {
    const created = await createLicense(call, dev, { app_id: app.id, device_limit: 1, features: { export: true } });
    const at = install('OA1');
    const exporting = await start(at);

    const requestFile = await exporting.exportActivationRequest(created.license_key.toLowerCase());
    // The device key pair the request names waits, sealed, beside the cache until the import.
    const pendingKey = path.join(at.cacheDir, 'license.cache.request');
    expect(fs.existsSync(pendingKey)).toBe(true);
    expect(fs.readFileSync(pendingKey, 'utf8')).not.toContain(JSON.parse(requestFile).device_key);
    const request = JSON.parse(requestFile) as Record<string, unknown>;
    expect(request).toMatchObject({ format: 'latchkey-activation-request/1', app_id: app.id, license_key: created.license_key, build_id: null });
    expect(request.device_fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(request.device_key).toMatch(/^[A-Za-z0-9_-]{43}$/);

    // Days may pass on an air-gapped machine: the app restarts before the license file comes back.
    await exporting.dispose();
    const license = await start(at);

    const res = await exchange(requestFile);
    expect(res.status).toBe(200);
    expect(new Date(res.body.file_expires_at).getTime()).toBeGreaterThan(Date.now());
    const file = claimsOf(res.body.license_file);
    expect(file).toMatchObject({ format: 'latchkey-license-file/1', app_id: app.id, device: request.device_fingerprint, device_key: request.device_key });
    // The file is dated with its token's issue, where grace starts.
    expect(claimsOf(file.token as string).iat).toBe(file.iat);

    const status = await license.importLicenseFile(res.body.license_file);
    expect(status).toMatchObject({ usable: true, licenseId: created.license_id, features: { export: true }, policy: { device_limit: 1, offline_grace_hours: 72 } });
    expect(status.graceEndsAt!.getTime()).toBe((file.iat as number) * 1000 + 72 * 3_600_000);
    // The network was never reachable: a refresh says so, and the license stays usable.
    expect((await licenseErrorOf(license.refresh())).code).toBe('OFFLINE');
    expect((await license.check()).usable).toBe(true);
    await license.dispose();
    expect(fs.existsSync(pendingKey)).toBe(false);

    const restarted = await start(at, { refreshOnStart: true });
    expect(await restarted.check()).toMatchObject({ usable: true, licenseId: created.license_id });

    // The authority counts the device like an online activation.
    const devices = await call('GET', `/v1/licenses/${created.license_id}`, { apiKey: dev.apiKey });
    expect(devices.body.devices.map((d: { fingerprint_hash: string }) => d.fingerprint_hash)).toEqual([request.device_fingerprint]);
  });

  it.each([
    ['2 minutes', 2 * 60_000],
    ['10 minutes', 10 * 60_000],
  ])('on a machine whose clock runs %s behind the authority, the imported license stays usable across restarts', async (_behind, behindMs) => {
    const created = await createLicense(call, dev, { app_id: app.id, device_limit: 1 });
    const at = install(`OA-SLOW-${behindMs}`);
    const slowClock = { now: () => new Date(Date.now() - behindMs) };
    const license = await start(at, { clock: slowClock });
    const status = await license.importLicenseFile(await licenseFileFor(license, created.license_key));
    expect(status).toMatchObject({ state: 'valid', usable: true });
    await license.dispose();
    // The next start, and one a day later (the same slow clock), read the cache as it was sealed.
    expect(await (await start(at, { clock: slowClock })).check()).toMatchObject({ state: 'valid', usable: true });
    const dayLater = { now: () => new Date(Date.now() - behindMs + 24 * 3_600_000) };
    expect(await (await start(at, { clock: dayLater })).check()).toMatchObject({ state: 'grace', usable: true });
  });

  it('rejects an export whose device key pair could not be kept: its license file could never be imported', async () => {
    const created = await createLicense(call, dev, { app_id: app.id });
    const at = install('OA9');
    const license = await start(at);
    // A folder (not empty) where the pending key file goes: writing it fails, even for root.
    fs.mkdirSync(path.join(at.cacheDir, 'license.cache.request', 'occupied'), { recursive: true });
    await expect(license.exportActivationRequest(created.license_key)).rejects.toThrow();
  });

  it('applies the device limit exactly as online activation, both ways', async () => {
    const created = await createLicense(call, dev, { app_id: app.id, device_limit: 1 });
    const online = await start(install('OB1'), { serverUrl: server.url });
    expect((await online.activate(created.license_key)).state).toBe('valid');

    const airGapped = await start(install('OB2'));
    const requestFile = await airGapped.exportActivationRequest(created.license_key);
    const offline = await exchange(requestFile);
    const request = JSON.parse(requestFile) as { device_fingerprint: string };
    const onlineTwin = await call('POST', '/v1/licenses/activate', { body: { license_key: created.license_key, device_fingerprint: request.device_fingerprint } });
    expect(offline.status).toBe(403);
    expect(offline.body).toEqual({ detail: onlineTwin.body.detail, error_code: 'DEVICE_LIMIT_EXCEEDED', status_code: 403, request_id: expect.any(String) });
    expect(onlineTwin.body.error_code).toBe('DEVICE_LIMIT_EXCEEDED');

    // The seat taken offline is refused to a computer online; a fresh request of the same device takes none.
    const second = await createLicense(call, dev, { app_id: app.id, device_limit: 1 });
    const file = await licenseFileFor(airGapped, second.license_key);
    expect((await airGapped.importLicenseFile(file)).usable).toBe(true);
    expect((await licenseErrorOf(online.activate(second.license_key))).code).toBe('DEVICE_LIMIT_REACHED');
    const again = await licenseFileFor(airGapped, second.license_key);
    expect((await airGapped.importLicenseFile(again)).licenseId).toBe(second.license_id);
  });

  it('refuses an altered or forged license file and keeps the status', async () => {
    const created = await createLicense(call, dev, { app_id: app.id, device_limit: 1 });
    const license = await start(install('OC1'));
    const genuine = await licenseFileFor(license, created.license_key);
    const [header, payload, signature] = genuine.split('.');
    const claims = claimsOf(genuine);

    const altered = `${header}.${Buffer.from(JSON.stringify({ ...claims, file_expires_at: (claims.file_expires_at as number) + 86_400 })).toString('base64url')}.${signature}`;
    const swappedSignature = `${header}.${payload}.${Buffer.from(signature!, 'base64url').reverse().toString('base64url')}`;
    for (const bad of [altered, swappedSignature, forge(genuine, claims), 'not a license file', JSON.stringify({ license_file: genuine })]) {
      const err = await licenseErrorOf(license.importLicenseFile(bad));
      expect(err.code).toBe('INVALID_LICENSE_FILE');
      expect(err.userMessage).toMatch(/not valid for this app/);
    }
    expect(await license.check()).toMatchObject({ usable: false, reason: 'not_activated' });
    // The genuine one, whitespace around it as a text file has, still imports.
    expect((await license.importLicenseFile(`\n${genuine}\n`)).usable).toBe(true);
  });

  it('refuses a license file made for another computer, another installation or another app', async () => {
    const created = await createLicense(call, dev, { app_id: app.id, device_limit: 3 });
    const first = install('OD1');
    const file = await licenseFileFor(await start(first), created.license_key);

    const otherComputer = await start(install('OD2'));
    expect((await licenseErrorOf(otherComputer.importLicenseFile(file))).code).toBe('LICENSE_FILE_WRONG_DEVICE');
    // Same computer, another installation (its own cache and device key): the content key is not for it.
    const otherInstallation = await start({ ...first, cacheDir: tempDir() });
    expect((await licenseErrorOf(otherInstallation.importLicenseFile(file))).code).toBe('LICENSE_FILE_WRONG_DEVICE');
    expect((await otherInstallation.check()).usable).toBe(false);

    const otherApp = await createApp(call, dev, { name: 'Offline Other' });
    const sameMachineOtherApp = await start({ ...first, app: otherApp });
    expect((await licenseErrorOf(sameMachineOtherApp.importLicenseFile(file))).code).toBe('INVALID_LICENSE_FILE');
  });

  it('refuses a floating license with 409 FLOATING_LICENSE_ONLINE_ONLY, taking no seat: no heartbeat could ever renew it', async () => {
    const created = await createLicense(call, dev, { app_id: app.id, seat_model: 'floating', max_concurrent: 2 });
    const res = await exchange(await (await start(install('OA-FLOAT'))).exportActivationRequest(created.license_key));
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error_code: 'FLOATING_LICENSE_ONLINE_ONLY', status_code: 409, detail: expect.stringContaining('floating') });
    const detail = await call('GET', `/v1/licenses/${created.license_id}`, { apiKey: dev.apiKey });
    expect(detail.body).toMatchObject({ seats_in_use: 0, devices: [] });
    // A revoked one reads like any revoked key.
    expect((await call('POST', `/v1/licenses/${created.license_id}/revoke`, { apiKey: dev.apiKey })).status).toBe(200);
    const revoked = await exchange(await (await start(install('OA-FLOAT-2'))).exportActivationRequest(created.license_key));
    expect(revoked.body).toMatchObject({ error_code: 'INVALID_LICENSE_KEY', status_code: 401 });
  });

  it('refuses a license file past its import deadline', async () => {
    const created = await createLicense(call, dev, { app_id: app.id, device_limit: 1 });
    const at = install('OE1');
    const file = await licenseFileFor(await start(at), created.license_key);
    const deadline = (claimsOf(file).file_expires_at as number) * 1000;
    const late = await start(at, { clock: { now: () => new Date(deadline + 1000) } });
    const err = await licenseErrorOf(late.importLicenseFile(file));
    expect(err.code).toBe('LICENSE_FILE_EXPIRED');
    expect((await late.check()).usable).toBe(false);
  });
});

describe('POST /v1/licenses/offline-activation', () => {
  it('answers bad request files with the standard error body', async () => {
    const created = await createLicense(call, dev, { app_id: app.id, device_limit: 1 });
    const request = JSON.parse(await (await start(install('OF1'))).exportActivationRequest(created.license_key)) as Record<string, unknown>;
    const post = (body: unknown) => call('POST', '/v1/licenses/offline-activation', { body });

    const wrongFormat = await post({ ...request, format: 'latchkey-activation-request/9' });
    expect(wrongFormat.status).toBe(400);
    expect(wrongFormat.body).toMatchObject({ error_code: 'VALIDATION_FAILED', status_code: 400 });
    expect((await post({ ...request, device_key: undefined })).body.error_code).toBe('VALIDATION_FAILED');
    const notJson = await call('POST', '/v1/licenses/offline-activation', { raw: { data: 'latchkey!', contentType: 'application/json' } });
    expect(notJson.body).toMatchObject({ error_code: 'INVALID_JSON', status_code: 400 });
    const huge = await post({ ...request, created_at: 'x'.repeat(2_000_000) });
    expect(huge.body).toMatchObject({ error_code: 'PAYLOAD_TOO_LARGE', status_code: 413 });

    const otherApp = await createApp(call, dev, { name: 'Offline Wrong App' });
    const wrongApp = await post({ ...request, app_id: otherApp.id });
    expect(wrongApp.body).toMatchObject({ error_code: 'INVALID_LICENSE_KEY', status_code: 401 });
    const unknownKey = await post({ ...request, license_key: 'AAAA-BBBB-CCCC-DDDD' });
    expect(unknownKey.body).toMatchObject({ error_code: 'INVALID_LICENSE_KEY', status_code: 401 });
    // None of it took the seat.
    expect((await post(request)).status).toBe(200);
  });
});
