import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createLicenseClient, type Clock, type LicenseClient } from '../../../runtime-sdk/index.js';
import { DOCUMENT_TYPES, verifyRuntimeToken, verifyUpdateManifest, type JwkSet } from '../../../runtime-sdk/protocol.js';
import { isUsable } from '../../../runtime-sdk/status.js';
import { createUpdater } from '../../../runtime-sdk/updates/index.js';
import { seedDeveloper, seedLicense, seedProPlan, seedReadyBuild } from '../../bench/seed.js';
import { client, type Call } from '../../support/http.js';
import { fakeMachine } from '../../sdk/support/fake-machine.js';
import type { LatchkeyProcess } from '../environment.js';
import type { FigureSheet } from '../figures.js';
import { forgeriesOf, type Forgery } from '../forgeries.js';
import { TamperingProxy } from '../tampering-proxy.js';

/** Enough for the update check's engine rule (1.0.0.0.0.178 and newer). */
const ENGINE = '1.0.0.0.0.200';
const PLATFORM = 'linux-x64';
const MANIFEST_LIFETIME_MS = 30 * 60_000;

export interface ForgeryFigures {
  tried: number;
  accepted: number;
}

/**
 * Forged runtime tokens and update manifests against the SDK, through a man in the middle in front
 * of the real authority: altered claims, re-signed by other keys, alg swaps, truncations, signature
 * bit flips, and genuine documents replayed on another device, platform or license, expired, or
 * older than one already seen. Each is judged twice: by the SDK's client end to end (activation
 * answered with the forgery; an update check answered with it, where acceptance means the user is
 * asked) and by its verifier directly. None may be accepted.
 */
export async function forgerySuite(sheet: FigureSheet, server: LatchkeyProcess): Promise<ForgeryFigures> {
  const call = client(server.url);
  const dev = await seedDeveloper(call);
  await seedProPlan(call, server.adminToken, dev);
  const app = (await call('POST', '/v1/apps', { apiKey: dev.apiKey, body: { name: 'Forgery suite', platforms: [PLATFORM] } })).body as { id: string; fingerprint_salt: string };
  const license = await seedLicense(call, dev, { app_id: app.id, device_limit: 50 });
  await seedReadyBuild(call, dev, app.id, '2.0.0');
  const pushed = await call('POST', `/v1/apps/${app.id}/push-update`, { apiKey: dev.apiKey, body: { release_notes: 'Forgery suite' } });
  if (pushed.status !== 201 && pushed.status !== 200) throw new Error(`push: ${pushed.status} ${JSON.stringify(pushed.body)}`);
  const keys = (await call('GET', '/v1/public/keys')).body as JwkSet;
  const publicX = keys.keys[0]!.x;

  const proxy = await new TamperingProxy(server.url).start();
  const dirs: string[] = [];
  const machine = fakeMachine('F0RG3');
  const clientAt = (clock?: Clock): Promise<LicenseClient> => {
    const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-chaos-sdk-'));
    dirs.push(cacheDir);
    return createLicenseClient({
      appId: app.id,
      serverUrl: proxy.url,
      publicKeys: keys,
      fingerprintSalt: app.fingerprint_salt,
      appVersion: '1.0.0',
      buildId: null,
      engineVersion: ENGINE,
      cacheDir,
      platform: machine.platform,
      fingerprintProbes: machine.probes,
      refreshOnStart: false,
      startupDelayMs: 0,
      retryLimit: 0,
      memoryProtection: 'masked',
      ...(clock ? { clock } : {}),
    });
  };
  const figures: ForgeryFigures = { tried: 0, accepted: 0 };
  const judged = (kind: string, accepted: boolean) => {
    figures.tried++;
    if (accepted) {
      figures.accepted++;
      sheet.violated(1, `forgery accepted: ${kind}`);
    }
  };

  try {
    // The genuine token, as the SDK receives it, and its device.
    let genuineToken = '';
    proxy.replaceToken = (token) => (genuineToken = token);
    const genuine = await clientAt();
    if (!isUsable((await genuine.activate(license.license_key)).state)) throw new Error('the genuine token was refused: the suite itself is broken');
    proxy.replaceToken = undefined;
    const device = (JSON.parse(Buffer.from(genuineToken.split('.')[1]!, 'base64url').toString()) as { device: string }).device;
    const otherDevice = randomBytes(32).toString('hex');
    const otherDeviceToken = await activateDirectly(call, license.license_key, otherDevice);

    const tokenForgeries: Forgery[] = [...forgeriesOf(genuineToken, publicX, DOCUMENT_TYPES.updateManifest), { kind: 'token of another device', jws: otherDeviceToken }];
    for (const forgery of tokenForgeries) {
      proxy.replaceToken = () => forgery.jws;
      const sdk = await clientAt();
      const status = await sdk.activate(license.license_key).catch(() => undefined);
      judged(`runtime token (SDK activation): ${forgery.kind}`, status !== undefined && isUsable(status.state));
      await sdk.dispose();
      judged(
        `runtime token (verifier): ${forgery.kind}`,
        accepts(() => verifyRuntimeToken(forgery.jws, keys, { appId: app.id, device })),
      );
    }
    proxy.replaceToken = undefined;

    // Manifests: the genuine one is offered (the user is asked); no forgery may get that far.
    let asked = 0;
    let genuineManifest = '';
    // The app is this process's own script (the updater accepts no other file); every question is
    // answered "later", so nothing is downloaded or replaced.
    const updaterOf = (sdk: LicenseClient) => createUpdater({ license: sdk, prompt: { ask: async () => (asked++, 'later') } });
    const updater = updaterOf(genuine);
    proxy.replaceManifest = (manifest) => (genuineManifest = manifest);
    const offered = await updater.checkInBackground();
    if (offered.status !== 'later' || asked !== 1) throw new Error(`the genuine manifest was not offered (${JSON.stringify(offered)}): the suite itself is broken`);

    const otherDeviceManifest = await checkDirectly(call, license.license_key, otherDevice, app.id);
    const otherLicense = await seedLicense(call, dev, { app_id: app.id });
    await activateDirectly(call, otherLicense.license_key, device);
    const otherLicenseManifest = await checkDirectly(call, otherLicense.license_key, device, app.id);
    const otherPlatformManifest = await checkDirectly(call, license.license_key, device, app.id, 'mac-arm64');
    const manifestForgeries: Forgery[] = [
      ...forgeriesOf(genuineManifest, publicX, DOCUMENT_TYPES.runtimeToken),
      { kind: 'manifest of another device', jws: otherDeviceManifest },
      { kind: 'manifest of another license', jws: otherLicenseManifest },
      { kind: 'manifest of another platform', jws: otherPlatformManifest },
      { kind: 'runtime token in place of a manifest', jws: genuineToken },
    ];
    for (const forgery of manifestForgeries) {
      proxy.replaceManifest = () => forgery.jws;
      const before = asked;
      await updater.checkInBackground();
      judged(`update manifest (SDK check): ${forgery.kind}`, asked !== before);
      judged(
        `update manifest (verifier): ${forgery.kind}`,
        accepts(() =>
          verifyUpdateManifest(forgery.jws, keys, {
            appId: app.id,
            platform: PLATFORM,
            device,
            licenseId: license.license_id,
            nowSeconds: Math.floor(Date.now() / 1000),
            highestSerialSeen: 0,
          }),
        ),
      );
    }

    // Genuine manifests out of their time: expired (the device's clock past `exp`), and an older push replayed after a newer one was seen.
    proxy.replaceManifest = undefined;
    const late = await clientAt({ now: () => new Date(Date.now() + MANIFEST_LIFETIME_MS + 60_000) });
    if (!isUsable((await late.activate(license.license_key)).state)) throw new Error('a client with a later clock was refused: the suite itself is broken');
    proxy.replaceManifest = () => genuineManifest;
    let askedLate = 0;
    await createUpdater({ license: late, prompt: { ask: async () => (askedLate++, 'later') } }).checkInBackground();
    judged('update manifest (SDK check): expired', askedLate > 0);
    await late.dispose();

    const repushed = await call('POST', `/v1/apps/${app.id}/push-update`, { apiKey: dev.apiKey, body: { release_notes: 'Newer push' } });
    if (repushed.status >= 300) throw new Error(`second push: ${repushed.status} ${JSON.stringify(repushed.body)}`);
    proxy.replaceManifest = undefined;
    const newer = await updater.checkInBackground();
    if (newer.status !== 'later') throw new Error(`the newer push was not offered (${JSON.stringify(newer)}): the suite itself is broken`);
    proxy.replaceManifest = () => genuineManifest;
    const before = asked;
    await updater.checkInBackground();
    judged('update manifest (SDK check): an older push replayed after a newer one', asked !== before);
    await genuine.dispose();
  } finally {
    await proxy.close();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  }
  return figures;
}

function accepts(verify: () => unknown): boolean {
  try {
    verify();
    return true;
  } catch {
    return false;
  }
}

async function activateDirectly(call: Call, licenseKey: string, fingerprint: string): Promise<string> {
  const res = await call('POST', '/v1/licenses/activate', { body: { license_key: licenseKey, device_fingerprint: fingerprint, build_id: null } });
  if (res.status !== 200) throw new Error(`activation: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.token;
}

async function checkDirectly(call: Call, licenseKey: string, fingerprint: string, appId: string, platform = PLATFORM): Promise<string> {
  const res = await call('POST', '/v1/updates/check', {
    body: { license_key: licenseKey, device_fingerprint: fingerprint, app_id: appId, build_id: null, version: '1.0.0', platform, engine_version: ENGINE },
  });
  if (res.status !== 200) throw new Error(`update check: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.manifest;
}
