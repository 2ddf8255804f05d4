import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ENGINE_VERSION } from '../../../runtime-sdk/engine/version.js';
import type { UpdateManifestClaims } from '../../../runtime-sdk/protocol.js';
import { TestSigner } from '../support/authority-keys.js';
import { error } from '../support/fake-authority.js';
import { snapshotTree } from '../support/install-tree.js';
import { RulesFs } from '../support/rules-fs.js';
import { pushOf, ScriptedPrompt, UPDATE_KEY, UpdateWorld } from '../support/updater-harness.js';

const V2 = Buffer.from('console.log("v2")\n');
let world: UpdateWorld;

beforeEach(async () => {
  world = await new UpdateWorld().start();
  world.authority.push = pushOf(world.packages, V2);
});
afterEach(() => world.close());

/** Runs one check that must fail with `code`, and proves nothing happened: no question, no restart, the install tree byte for byte as it was. */
async function expectRefused(code: string, failure?: string, options: { asked?: boolean; fs?: RulesFs } = {}) {
  const before = snapshotTree(world.installDir);
  const prompt = new ScriptedPrompt(['install']);
  const updater = await world.launch({ prompt, ...(options.fs ? { fs: options.fs } : {}) });
  const outcome = await updater.checkInBackground();
  expect(outcome).toMatchObject({ status: 'failed', code });
  if (failure) expect(outcome.status === 'failed' && outcome.message).toContain(`(${failure})`);
  expect(prompt.offers).toHaveLength(options.asked ? 1 : 0);
  expect(snapshotTree(world.installDir)).toEqual(before);
  expect(world.process.spawned).toEqual([]);
  expect(world.process.exits).toEqual([]);
}

const rewrite = (change: Partial<Record<keyof UpdateManifestClaims, unknown>>) => (claims: UpdateManifestClaims) => ({ ...claims, ...change });

describe('update check', () => {
  it('sends the license key, the device fingerprint hash, the running build and version, the platform and the engine version', async () => {
    const updater = await world.launch({ prompt: new ScriptedPrompt(['later']) });
    await updater.checkInBackground();
    const check = world.authority.requests.find((r) => r.path === '/v1/updates/check')!;
    const activation = JSON.parse(world.authority.requests[0]!.body) as { device_fingerprint: string };
    expect(JSON.parse(check.body)).toEqual({
      license_key: UPDATE_KEY,
      device_fingerprint: activation.device_fingerprint,
      app_id: world.authority.appId,
      build_id: 'bld_v1',
      version: '1.0.0',
      platform: 'linux-x64',
      engine_version: ENGINE_VERSION,
    });
  });

  it('answers no-update when no push applies (204)', async () => {
    world.authority.push = null;
    const prompt = new ScriptedPrompt();
    expect(await (await world.launch({ prompt })).checkInBackground()).toEqual({ status: 'no-update' });
    expect(prompt.offers).toEqual([]);
  });
});

describe('a manifest that does not verify changes nothing and the app keeps running', () => {
  it.each([
    ['another key with the pinned kid (bad signature)', () => (world.authority.manifestSigner = new TestSigner(world.authority.signer.kid)), 'bad_signature'],
    ['a key that is not pinned', () => (world.authority.manifestSigner = new TestSigner()), 'unknown_key'],
    ['an expired manifest', () => (world.authority.mutateManifest = (c) => ({ ...c, exp: c.iat - 1 })), 'expired'],
    ["another device's manifest", () => (world.authority.mutateManifest = rewrite({ device: 'a'.repeat(64) })), 'wrong_device'],
    ["another app's manifest", () => (world.authority.mutateManifest = rewrite({ app_id: 'app_other' })), 'wrong_app'],
    ["another platform's manifest", () => (world.authority.mutateManifest = rewrite({ platform: 'win-x64' })), 'wrong_platform'],
    ["another license's manifest", () => (world.authority.mutateManifest = rewrite({ sub: 'lic_other' })), 'wrong_license'],
    ['claims without a hash', () => (world.authority.mutateManifest = rewrite({ sha256: undefined })), 'malformed'],
    ['a negative length', () => (world.authority.mutateManifest = rewrite({ length: -1 })), 'malformed'],
    ['a download URL that is not http(s)', () => (world.authority.mutateManifest = rewrite({ url: 'file:///etc/passwd' })), 'malformed'],
    ['a runtime token passed off as a manifest', () => world.authority.scripted.push({ status: 200, body: { manifest: world.authority.issuedTokens[0] } }), 'wrong_type'],
    ['a manifest that is not a JWS', () => world.authority.scripted.push({ status: 200, body: { manifest: 'not.a-jws' } }), 'malformed'],
  ])('%s', async (_label, arrange, failure) => {
    arrange();
    await expectRefused('MANIFEST_REJECTED', failure);
  });

  it('a replayed manifest: a serial lower than one already seen', async () => {
    world.authority.push = pushOf(world.packages, V2, { serial: 9 });
    expect(await (await world.launch({ prompt: new ScriptedPrompt(['later']) })).checkInBackground()).toMatchObject({ status: 'later' });
    world.authority.push = pushOf(world.packages, V2, { serial: 8, build_id: 'bld_v2_old' });
    await expectRefused('MANIFEST_REJECTED', 'replayed');
  });

  it('a wrong hash: the download is refused and deleted before anything outside the cache is touched', async () => {
    world.authority.push = pushOf(world.packages, V2, { sha256: 'e'.repeat(64) });
    await expectRefused('PACKAGE_REJECTED', undefined, { asked: true });
    expect(fs.readdirSync(path.join(world.dataDir, 'updates'))).toEqual([]);
  });
});

describe('a failed check is swallowed', () => {
  it.each([
    ['the authority is offline', () => (world.authority.down = true), 'CHECK_FAILED'],
    ['a 5xx answer', () => world.authority.scripted.push(error(503, 'SERVICE_UNAVAILABLE', 'down for maintenance')), 'CHECK_FAILED'],
    ['an answer without a manifest', () => world.authority.scripted.push({ status: 200, body: 'not json at all' }), 'CHECK_FAILED'],
    ['a refused key (4xx)', () => world.authority.scripted.push(error(401, 'INVALID_LICENSE_KEY', 'revoked')), 'CHECK_REFUSED'],
  ])('%s', async (_label, arrange, code) => {
    arrange();
    await expectRefused(code);
  });

  it('a disk that refuses the updater state', async () => {
    const fsRefusing = new RulesFs('darwin').refuse('writeFile', (file) => file.startsWith(world.dataDir), 'ENOSPC', 10);
    await expectRefused('DISK_FAILED', undefined, { fs: fsRefusing });
  });

  it('a corrupt state file is read as a fresh state', async () => {
    fs.writeFileSync(path.join(world.dataDir, 'updater-state.json'), '{"format": "latchkey-updater-state", "version": 1, "highestSerialSeen": "many"');
    const prompt = new ScriptedPrompt(['later']);
    expect(await (await world.launch({ prompt })).checkInBackground()).toMatchObject({ status: 'later', offer: { version: '2.0.0', releaseNotes: 'Faster sync.' } });
  });
});
