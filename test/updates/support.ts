import { expect } from 'vitest';
import { ENGINE_VERSION } from '../../runtime-sdk/engine/version.js';
import { settled, upload, uploadBuild, type Owner } from '../builds/support.js';
import { machOFile, peFile } from '../support/executables.js';
import { createApp, createLicense, randomFingerprint, registerDeveloper, setPlan } from '../support/fixtures.js';
import { client, type ApiResponse } from '../support/http.js';
import type { TestServer } from '../support/server.js';

/** A Pro developer with one app for Linux and Windows (and `appBody` on top). */
export async function proOwner(server: TestServer, appBody: Record<string, unknown> = {}): Promise<Owner> {
  const call = client(server.url);
  const dev = await registerDeveloper(call);
  await setPlan(call, server.adminToken, dev.id, 'pro');
  return { server, call, dev, app: await createApp(call, dev, appBody) };
}

/** Another app of the same developer. */
export const otherApp = async (o: Owner, appBody: Record<string, unknown> = {}): Promise<Owner> => ({ ...o, app: await createApp(o.call, o.dev, appBody) });

let uploads = 0;

/**
 * A READY build (delivered as uploaded: quick to process). The clock moves a second first, so
 * builds made one after another are strictly ordered by creation time, which the push rules read.
 * With `signed`, a Windows or macOS build's package is then replaced with a signed one, which a
 * push of it needs (SPEC Versioning 3).
 */
export async function readyBuild(o: Owner, options: { platform?: string; version?: string; signed?: boolean } = {}): Promise<Record<string, any>> {
  o.server.clock.advance(1000);
  const fields: Record<string, string> = { platform: options.platform ?? 'cross_platform' };
  if (options.version) fields.version = options.version;
  const build = await settled(o, (await uploadBuild(o, { data: `package ${++uploads}`, name: 'tool.bin' }, fields)).id);
  expect(build.status).toBe('READY');
  return options.signed ? replaceWithSigned(o, build as { id: string; platform: string }) : build;
}

/** Replace with Signed Package: a PE with an Authenticode table for Windows, a Mach-O with LC_CODE_SIGNATURE for macOS; answers the build as it then is. */
export async function replaceWithSigned(o: Owner, build: { id: string; platform: string }): Promise<Record<string, any>> {
  const signed = build.platform.startsWith('win-') ? peFile({ signature: 'pkcs7' }) : machOFile({ signed: true });
  const res = await upload(o, {
    method: 'PUT',
    path: `/v1/apps/${o.app.id}/builds/${build.id}/signed-package`,
    file: { data: new Uint8Array(signed), name: 'signed.bin' },
    fileField: 'package',
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

export interface Device {
  license_id: string;
  license_key: string;
  fingerprint: string;
  platform: string;
}

/** An ACTIVE license of the app with one device activated on it (Linux, a current engine, unless told). */
export async function licensedDevice(o: Owner, options: { platform?: string; license?: Record<string, unknown> } = {}): Promise<Device> {
  const license = await createLicense(o.call, o.dev, { app_id: o.app.id, ...options.license });
  return activatedDevice(o, license, options.platform);
}

/** Activates one more device on `license`. */
export async function activatedDevice(o: Owner, license: { license_id: string; license_key: string }, platform = 'linux-x64'): Promise<Device> {
  const fingerprint = randomFingerprint();
  const body = { license_key: license.license_key, device_fingerprint: fingerprint, build_id: null, platform, engine_version: ENGINE_VERSION };
  const res = await o.call('POST', '/v1/licenses/activate', { body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { license_id: license.license_id, license_key: license.license_key, fingerprint, platform };
}

/** An update check as the SDK sends it, from `device` running `build_id` (null: none yet). */
export function check(o: Owner, device: Device, overrides: Record<string, unknown> = {}): Promise<ApiResponse> {
  return o.call('POST', '/v1/updates/check', {
    body: {
      license_key: device.license_key,
      device_fingerprint: device.fingerprint,
      app_id: o.app.id,
      build_id: null,
      version: '1.0.0',
      platform: device.platform,
      engine_version: ENGINE_VERSION,
      ...overrides,
    },
  });
}

/** The build id the check offers, or null when it answers 204. */
export async function offered(o: Owner, device: Device, overrides: Record<string, unknown> = {}): Promise<string | null> {
  const res = await check(o, device, overrides);
  expect([200, 204], JSON.stringify(res.body)).toContain(res.status);
  if (res.status === 204) return null;
  return JSON.parse(Buffer.from(res.body.manifest.split('.')[1], 'base64url').toString()).build_id;
}

export function report(o: Owner, device: Device, event: 'installed' | 'skipped' | 'failed', buildId: string, overrides: Record<string, unknown> = {}): Promise<ApiResponse> {
  return o.call('POST', '/v1/updates/report', {
    body: { license_key: device.license_key, device_fingerprint: device.fingerprint, app_id: o.app.id, event, build_id: buildId, version: '2.0.0', ...overrides },
  });
}

export const pushPath = (o: Owner) => `/v1/apps/${o.app.id}/push-update`;
export const licensePushPath = (licenseId: string) => `/v1/licenses/${licenseId}/push-update`;

/** Pushes to the app and expects success; answers the active push. */
export async function pushApp(o: Owner, body: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const res = await o.call('POST', pushPath(o), { token: o.dev.accessToken, body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.push;
}

/** The app's active push, or null. */
export async function appPush(o: Owner): Promise<Record<string, any> | null> {
  const res = await o.call('GET', pushPath(o), { token: o.dev.accessToken });
  expect(res.status).toBe(200);
  return res.body.push;
}

/** A 409 of the push rules: the standard body plus docs/contract.md's `reason`. */
export function expectPushConflict(res: ApiResponse, reason: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(409);
  expect(res.body).toEqual({ detail: expect.any(String), error_code: 'PUSH_CONFLICT', status_code: 409, reason, request_id: expect.any(String) });
}
