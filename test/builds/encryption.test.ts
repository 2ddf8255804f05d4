import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateDeviceKeyPair, unwrapContentKey } from '../../runtime-sdk/engine/content-key.js';
import { VAULT_ASSET } from '../../runtime-sdk/engine/vault.js';
import type { RuntimeTokenClaims } from '../../runtime-sdk/protocol.js';
import { createLicense, setPlan } from '../support/fixtures.js';
import { zipOf, type Entries } from './archives.js';
import { inspectExecutable } from './executables.js';
import { downloadPackage, owner, protectionWorld, runProtected, settled, uploadBuild } from './support.js';

// License-bound encryption (docs/protocol.md, "Protected builds"): the app's code and files are in
// the delivered file only encrypted, under a key the authority releases to licensed devices alone.

const { server, o, work, home } = await protectionWorld('encrypted', { platforms: ['linux-x64'] });

/** Strings only the app's own code and files hold: none may be found in what customers download. */
const SECRETS = ['QuokkaZanzibar-7731', 'renderQuokkaBanner', 'asset-secret-Ooloo', 'tla-moonrise-42'];

/** A CommonJS app that reads files beside its code with fs (readFileSync, readdirSync, fs.promises, streams). */
const CJS_APP: Entries = {
  'package.json': JSON.stringify({ name: 'quokka', version: '3.1.0', main: 'lib/main.js' }),
  'lib/main.js': [
    "'use strict';",
    "const fs = require('node:fs');",
    "const path = require('node:path');",
    "const { renderQuokkaBanner } = require('./banner');",
    "const data = path.join(__dirname, '..', 'data');",
    "console.log(renderQuokkaBanner(fs.readFileSync(path.join(data, 'greeting.txt'), 'utf8').trim()));",
    "console.log('files:', fs.readdirSync(data).join(','), fs.existsSync(path.join(data, 'nope.txt')));",
    "fs.promises.readFile(path.join(data, 'cows', 'moo.cow'), 'utf8').then((cow) => {",
    '  console.log(cow.trim());',
    "  fs.createReadStream(path.join(data, 'greeting.txt')).on('data', (chunk) => console.log('streamed', chunk.length));",
    '});',
  ].join('\n'),
  'lib/banner.js': "exports.renderQuokkaBanner = (text) => '*** QuokkaZanzibar-7731 ' + text + ' ***';\n",
  'data/greeting.txt': 'asset-secret-Ooloo\n',
  'data/cows/moo.cow': '(oo) moo\n',
};

/** An ES module app with top-level await that reads a file relative to import.meta.url. */
const ESM_APP: Entries = {
  'package.json': JSON.stringify({ name: 'moonrise', version: '1.0.0', type: 'module', main: 'index.js' }),
  'index.js': [
    "import { readFile } from 'node:fs/promises';",
    "const note = await readFile(new URL('./notes/today.txt', import.meta.url), 'utf8');",
    'await new Promise((resolve) => setTimeout(resolve, 5));',
    "console.log('tla-moonrise-42', note.trim());",
  ].join('\n'),
  'notes/today.txt': 'asset-secret-Ooloo today\n',
};

/** What the app prints when run unprotected with this Node: the protected one must print the same. */
function runPlain(entries: Entries, entry: string): string {
  const dir = fs.mkdtempSync(path.join(work, 'plain-'));
  for (const [name, content] of Object.entries(entries)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), content);
  }
  const run = spawnSync(process.execPath, [path.join(dir, entry)], { encoding: 'utf8' });
  expect(run.status).toBe(0);
  return run.stdout;
}

/** Every byte sequence a cracker would look at: the file, its base64 runs decoded, and every compressed stream in either. */
function readableViews(file: Buffer): Buffer[] {
  const views = [file];
  for (const run of file.toString('latin1').match(/[A-Za-z0-9+/_-]{64,}={0,2}/g) ?? []) views.push(Buffer.from(run, 'base64'));
  const inflated: Buffer[] = [];
  for (const view of views) {
    for (let at = 0; at < view.length - 2; at++) {
      const gzip = view[at] === 0x1f && view[at + 1] === 0x8b;
      const zlib = view[at] === 0x78 && [0x01, 0x5e, 0x9c, 0xda].includes(view[at + 1]!);
      if (!gzip && !zlib) continue;
      for (const inflate of gzip ? [gunzipSync] : [inflateSync]) {
        try {
          inflated.push(inflate(view.subarray(at)));
        } catch {
          // Not a stream that starts here.
        }
      }
    }
    for (const decode of [inflateRawSync, brotliDecompressSync]) {
      try {
        inflated.push(decode(view));
      } catch {
        // Not one whole stream.
      }
    }
  }
  return [...views, ...inflated];
}

describe.each([
  ['a CommonJS app reading its files', CJS_APP, 'lib/main.js'],
  ['an ES module app with top-level await', ESM_APP, 'index.js'],
])('%s, protected for cross_platform', (_name, entries, entry) => {
  let build: Record<string, any>;
  let bundle: string;
  let licenseKey: string;
  let licenseId: string;

  beforeAll(async () => {
    const uploaded = await uploadBuild(o, { data: new Uint8Array(await zipOf(entries)), name: 'app.zip' }, { platform: 'cross_platform' });
    // What applies depends on what the upload holds: the 201 claims nothing yet.
    expect(uploaded.protection_level).toBeNull();
    build = await settled(o, uploaded.id);
    bundle = await downloadPackage(o, build as any, work);
    const license = await createLicense(o.call, o.dev, { app_id: o.app.id, device_limit: 10 });
    licenseKey = license.license_key;
    licenseId = license.license_id;
  });

  it('is READY and says encrypted', () => {
    expect(build).toMatchObject({ status: 'READY', package_format: 'javascript_bundle', protection_level: 'encrypted' });
  });

  it('holds none of the app in the clear: not its strings, names or files, in any base64 run or compressed stream', () => {
    const views = readableViews(fs.readFileSync(bundle));
    for (const secret of SECRETS) {
      for (const view of views) expect(view.includes(Buffer.from(secret))).toBe(false);
    }
  });

  it('runs nothing of the app without a license', async () => {
    const run = await runProtected(bundle, { home: home() });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
  });

  it('with a license prints what the unprotected app prints, byte for byte, then refuses the first start after a revocation', async () => {
    const user = home();
    const first = await runProtected(bundle, { home: user, env: { LATCHKEY_LICENSE_KEY: licenseKey } });
    expect(first.stdout).toBe(runPlain(entries, entry));
    expect(first.code).toBe(0);
    // Offline starts within grace decrypt from the cache: the key was stored with the token.
    const cached = await runProtected(bundle, { home: user });
    expect(cached.stdout).toBe(first.stdout);

    expect((await o.call('POST', `/v1/licenses/${licenseId}/revoke`, { token: o.dev.accessToken })).status).toBe(200);
    // The start asks the authority before the app runs (a 1.5 s budget): refused at once.
    const after = await runProtected(bundle, { home: user });
    expect(after.code).toBe(2);
    expect(after.stdout).toBe('');
  });
});

describe('the encrypted app', () => {
  it('refuses to start when a byte of it was changed, even with a valid license', async () => {
    const build = await settled(o, (await uploadBuild(o, { data: new Uint8Array(await zipOf(CJS_APP)), name: 'app.zip' }, { platform: 'cross_platform' })).id);
    const bundle = await downloadPackage(o, build as any, work);
    const text = fs.readFileSync(bundle, 'latin1');
    const vault = text.match(/[A-Za-z0-9+/]{1000,}={0,2}/)![0];
    const at = text.indexOf(vault) + Math.floor(vault.length / 2);
    const patched = `${text.slice(0, at)}${text[at] === 'A' ? 'B' : 'A'}${text.slice(at + 1)}`;
    fs.writeFileSync(bundle, patched, 'latin1');
    const key = (await createLicense(o.call, o.dev, { app_id: o.app.id })).license_key;
    const run = await runProtected(bundle, { home: home(), env: { LATCHKEY_LICENSE_KEY: key } });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('This app has been modified and cannot start');
    expect(run.stdout).toBe('');
  });

  it('is not unlocked for a license of another app', async () => {
    const other = await owner(server, { platforms: ['linux-x64'] });
    const build = await settled(o, (await uploadBuild(o, { data: new Uint8Array(await zipOf(CJS_APP)), name: 'app.zip' }, { platform: 'cross_platform' })).id);
    const bundle = await downloadPackage(o, build as any, work);
    await setPlan(other.call, server.adminToken, other.dev.id, 'pro');
    const foreignKey = (await createLicense(other.call, other.dev, { app_id: other.app.id })).license_key;
    const run = await runProtected(bundle, { home: home(), env: { LATCHKEY_LICENSE_KEY: foreignKey } });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
  });
});

describe('the encrypted app as a linux-x64 single executable', () => {
  let executable: string;
  let licenseKey: string;

  beforeAll(async () => {
    const build = await settled(o, (await uploadBuild(o, { data: new Uint8Array(await zipOf(CJS_APP)), name: 'app.zip' }, { platform: 'linux-x64' })).id);
    expect(build, build.failure_reason).toMatchObject({ status: 'READY', package_format: 'single_executable', protection_level: 'encrypted' });
    executable = await downloadPackage(o, build as any, work);
    licenseKey = (await createLicense(o.call, o.dev, { app_id: o.app.id })).license_key;
  }, 120_000);

  it('holds none of the app in the clear, its vault an asset beside the runtime', () => {
    const bytes = fs.readFileSync(executable);
    // What protection added is the blob: its base64 runs and compressed streams are searched; the file as a whole for the plain strings.
    const { seaBlob } = inspectExecutable(bytes);
    for (const secret of SECRETS) {
      expect(bytes.includes(Buffer.from(secret))).toBe(false);
      for (const view of readableViews(seaBlob!)) expect(view.includes(Buffer.from(secret))).toBe(false);
    }
  });

  it('runs the app with a license, and refuses when a byte of its vault was changed', async () => {
    const userHome = home();
    const first = await runProtected(executable, { home: userHome, env: { LATCHKEY_LICENSE_KEY: licenseKey } });
    expect(first).toMatchObject({ code: 0, stdout: runPlain(CJS_APP, 'lib/main.js') });
    // The executable carries sodium-native: its addon was written once into the user's app data and loads as a Node addon.
    const addons = (fs.readdirSync(userHome, { recursive: true }) as string[]).filter((file) => /sodium-native-[0-9a-f]{32}\.node$/.test(file));
    expect(addons).toHaveLength(1);
    const addon = { exports: {} as Record<string, unknown> };
    process.dlopen(addon, path.join(userHome, addons[0]!));
    expect(typeof addon.exports.sodium_malloc).toBe('function');
    // A file there with other bytes (one flipped, the size kept) is never loaded: it is written again from the carried addon.
    const addonFile = path.join(userHome, addons[0]!);
    const original = fs.readFileSync(addonFile);
    const altered = Buffer.from(original);
    altered[altered.length >> 1]! ^= 0x01;
    fs.chmodSync(addonFile, 0o700);
    fs.writeFileSync(addonFile, altered);
    const again = await runProtected(executable, { home: userHome });
    expect(again).toMatchObject({ code: 0, stdout: first.stdout });
    expect(fs.readFileSync(addonFile).equals(original)).toBe(true);

    const bytes = fs.readFileSync(executable);
    // The SEA blob lists its assets after the script: the last occurrence of the name is the asset's, the vault follows it.
    const vault = bytes.indexOf('LKV2', bytes.lastIndexOf(VAULT_ASSET));
    expect(vault).toBeGreaterThan(0);
    bytes[vault + 200]! ^= 0x01;
    const patched = path.join(work, 'patched-app');
    fs.writeFileSync(patched, bytes, { mode: 0o755 });
    const run = await runProtected(patched, { home: home(), env: { LATCHKEY_LICENSE_KEY: licenseKey } });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('This app has been modified and cannot start');
    expect(run.stdout).toBe('');
  }, 60_000);
});

describe('the content key in the runtime token', () => {
  it('is wrapped to the device key on record: a token alone cannot move it to another installation, the license key can', async () => {
    const build = await settled(o, (await uploadBuild(o, { data: new Uint8Array(await zipOf(CJS_APP)), name: 'app.zip' }, { platform: 'cross_platform' })).id);
    const license = await createLicense(o.call, o.dev, { app_id: o.app.id });
    const device = 'c'.repeat(64);
    const [first, second] = [generateDeviceKeyPair(), generateDeviceKeyPair()];
    const context = { buildId: build.id, licenseId: license.license_id, device };
    const keyIn = (token: string) => (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as RuntimeTokenClaims).content_key!;

    const activated = await o.call('POST', '/v1/licenses/activate', {
      body: { license_key: license.license_key, device_fingerprint: device, build_id: build.id, device_key: first.x },
    });
    expect(activated.status).toBe(200);
    const key = unwrapContentKey(keyIn(activated.body.token), first, context);
    expect(key).toHaveLength(32);

    const byToken = await o.call('POST', '/v1/licenses/refresh', { body: { token: activated.body.token, build_id: build.id, device_key: second.x } });
    expect(byToken.status).toBe(200);
    expect(unwrapContentKey(keyIn(byToken.body.token), second, context)).toBeNull();
    expect(unwrapContentKey(keyIn(byToken.body.token), first, context)).toEqual(key);

    const byKey = await o.call('POST', '/v1/licenses/refresh', {
      body: { license_key: license.license_key, device_fingerprint: device, build_id: build.id, device_key: second.x },
    });
    expect(unwrapContentKey(keyIn(byKey.body.token), second, context)).toEqual(key);

    // A malformed device key is refused.
    const malformed = await o.call('POST', '/v1/licenses/refresh', { body: { token: activated.body.token, build_id: build.id, device_key: 'not-a-key' } });
    expect(malformed.status).toBe(400);
  });

  it('travels in an offline license file, wrapped to the device key of the request file', async () => {
    const build = await settled(o, (await uploadBuild(o, { data: new Uint8Array(await zipOf(CJS_APP)), name: 'app.zip' }, { platform: 'cross_platform' })).id);
    const license = await createLicense(o.call, o.dev, { app_id: o.app.id });
    const device = 'd'.repeat(64);
    const [requested, other] = [generateDeviceKeyPair(), generateDeviceKeyPair()];
    const context = { buildId: build.id, licenseId: license.license_id, device };
    const request = {
      format: 'latchkey-activation-request/1',
      app_id: o.app.id,
      license_key: license.license_key,
      device_fingerprint: device,
      device_key: requested.x,
      build_id: build.id,
    };
    const answered = await o.call('POST', '/v1/licenses/offline-activation', { body: request });
    expect(answered.status).toBe(200);
    const file = JSON.parse(Buffer.from(answered.body.license_file.split('.')[1], 'base64url').toString('utf8')) as { token: string };
    const wrapped = (JSON.parse(Buffer.from(file.token.split('.')[1]!, 'base64url').toString('utf8')) as RuntimeTokenClaims).content_key!;
    expect(unwrapContentKey(wrapped, requested, context)).toHaveLength(32);
    expect(unwrapContentKey(wrapped, other, context)).toBeNull();
  });
});
