/**
 * docs/contract.md Versioning 3: Windows and macOS builds are signed by the developer and uploaded
 * (Replace with Signed Package) before they are pushed; the replacement's signature is read from its
 * structure (Authenticode certificate table in the PE, LC_CODE_SIGNATURE in the Mach-O).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EICAR_SIGNATURE } from '../../server/builds/scanning/eicar.js';
import { filesOf, owner, upload, type Owner } from '../builds/support.js';
import { expectError } from '../support/assertions.js';
import { runLatchkey } from '../support/cli.js';
import { fatMachOFile, machOFile, peFile } from '../support/executables.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { expectPushConflict, licensedDevice, licensePushPath, otherApp, proOwner, pushApp, pushPath, readyBuild } from './support.js';

let server: TestServer;
let o: Owner;
beforeAll(async () => {
  server = await startTestServer();
  o = await proOwner(server, { platforms: ['linux-x64', 'win-x64', 'mac-arm64'] });
});
afterAll(() => server.close());

const buildPath = (owner: Owner, id: string, rest = '') => `/v1/apps/${owner.app.id}/builds/${id}${rest}`;
const replace = (owner: Owner, id: string, data: Uint8Array, name = 'Notes-signed.exe') =>
  upload(owner, { method: 'PUT', path: buildPath(owner, id, '/signed-package'), file: { data: new Uint8Array(data), name }, fileField: 'package' });
const getBuild = async (owner: Owner, id: string) => (await owner.call('GET', buildPath(owner, id), { token: owner.dev.accessToken })).body;
const download = async (owner: Owner, id: string) => {
  const link = await owner.call('GET', buildPath(owner, id, '/download'), { token: owner.dev.accessToken });
  return Buffer.from(await (await fetch(link.body.download_url)).arrayBuffer());
};

describe('[Versioning 3] pushing a Windows or macOS build', () => {
  it('[Versioning 3] refuses an unsigned Windows or macOS build with 409 build_not_signed, naming Replace with Signed Package', async () => {
    for (const platform of ['win-x64', 'mac-arm64']) {
      const a = await otherApp(o, { platforms: ['linux-x64', 'win-x64', 'mac-arm64'] });
      const device = await licensedDevice(a, { platform });
      const build = await readyBuild(a, { platform });
      for (const body of [{}, { target_build_id: build.id }]) {
        const res = await a.call('POST', pushPath(a), { token: a.dev.accessToken, body });
        expectPushConflict(res, 'build_not_signed');
        expect(res.body.detail).toContain('Replace with Signed Package');
        expect(res.body.detail).toContain(`/v1/apps/${a.app.id}/builds/${build.id}/signed-package`);
      }
      // A push to one license follows the same rule.
      const res = await a.call('POST', licensePushPath(device.license_id), { token: a.dev.accessToken, body: { target_build_id: build.id } });
      expectPushConflict(res, 'build_not_signed');
      expect((await a.call('GET', pushPath(a), { token: a.dev.accessToken })).body.push).toBeNull();
    }
  });

  it('[Versioning 3] pushes a Linux or cross_platform build with no signed package', async () => {
    const a = await otherApp(o);
    await licensedDevice(a);
    for (const platform of ['linux-x64', 'cross_platform']) {
      const build = await readyBuild(a, { platform });
      expect((await pushApp(a, { target_build_id: build.id })).target_build_id).toBe(build.id);
    }
  });
});

describe('[Versioning 3] PUT /v1/apps/{app_id}/builds/{build_id}/signed-package', () => {
  it('[Versioning 3] answers 422 PACKAGE_NOT_SIGNED for a package without a code signature, and keeps the package', async () => {
    const cases: [string, Buffer[]][] = [
      ['win-x64', [peFile(), peFile({ pe32: true }), machOFile({ signed: true }), Buffer.from('signed, it says')]],
      ['mac-arm64', [machOFile({ signed: false }), fatMachOFile([machOFile({ signed: true }), machOFile({ signed: false })]), peFile({ signature: 'pkcs7' })]],
    ];
    for (const [platform, packages] of cases) {
      const build = await readyBuild(o, { platform });
      const before = filesOf(server, build.id);
      for (const bytes of packages) {
        const res = await replace(o, build.id, bytes);
        expectError(res, 422, 'PACKAGE_NOT_SIGNED');
        expect(res.body.detail).toMatch(platform === 'win-x64' ? /Authenticode/ : /LC_CODE_SIGNATURE/);
      }
      expect(filesOf(server, build.id)).toEqual(before);
      expect(await getBuild(o, build.id)).toMatchObject({ sha256: build.sha256, signed_package_at: null });
    }
  });

  it('[Versioning 3] takes a signed package, which customers then download, and the push goes through', async () => {
    const cases: [string, Buffer][] = [
      ['win-x64', peFile({ program: 'Notes Pro for Windows', signature: 'PKCS#7 signed data' })],
      ['mac-arm64', fatMachOFile([machOFile({ signed: true }), machOFile({ signed: true, bits: 32 })])],
    ];
    for (const [platform, signed] of cases) {
      const a = await otherApp(o, { platforms: [platform] });
      await licensedDevice(a, { platform });
      const build = await readyBuild(a, { platform });
      expectPushConflict(await a.call('POST', pushPath(a), { token: a.dev.accessToken, body: {} }), 'build_not_signed');
      const res = await replace(a, build.id, signed);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({
        id: build.id,
        status: 'READY',
        protection_level: build.protection_level,
        package_format: build.package_format,
        protected_size_bytes: signed.length,
      });
      expect(Date.parse(res.body.signed_package_at)).toBeGreaterThan(0);
      expect((await download(a, build.id)).equals(signed)).toBe(true);
      expect((await pushApp(a)).target_build_id).toBe(build.id);
    }
  });

  it('[Versioning 3] refuses a signed package that carries malware, with 422 PACKAGE_REJECTED', async () => {
    const build = await readyBuild(o, { platform: 'win-x64' });
    const res = await replace(o, build.id, peFile({ program: EICAR_SIGNATURE.toString('latin1'), signature: 'pkcs7' }));
    expectError(res, 422, 'PACKAGE_REJECTED');
    expect(res.body.detail).toContain('EICAR');
    expect((await getBuild(o, build.id)).signed_package_at).toBeNull();
  });

  it('[Versioning 3] answers 409 BUILD_NOT_SIGNABLE for a platform without a code signature, before reading the package', async () => {
    for (const platform of ['linux-x64', 'cross_platform']) {
      const build = await readyBuild(o, { platform });
      const res = await replace(o, build.id, peFile({ signature: 'pkcs7' }));
      expectError(res, 409, 'BUILD_NOT_SIGNABLE');
      expect(filesOf(server, build.id).some((f) => f.includes('package-'))).toBe(false);
    }
  });

  it("[Versioning 3] answers 404 for another developer's build, which keeps its package", async () => {
    const build = await readyBuild(o, { platform: 'win-x64' });
    const intruder = await owner(server, { platforms: ['win-x64'] });
    const signed = peFile({ signature: 'pkcs7' });
    // Through the intruder's own app and through the owner's app id: not found either way.
    expectError(await replace(intruder, build.id, signed), 404, 'BUILD_NOT_FOUND');
    expectError(await replace({ ...intruder, app: o.app }, build.id, signed), 404);
    expect(await getBuild(o, build.id)).toMatchObject({ sha256: build.sha256, signed_package_at: null });
  });
});

describe('[Versioning 3] the CLI', { timeout: 120_000 }, () => {
  it('[Versioning 3] latchkey builds replace-signed refuses an unsigned package (exit 5), takes a signed one, and latchkey push then goes through', async () => {
    const a = await otherApp(o, { platforms: ['win-x64'] });
    await licensedDevice(a, { platform: 'win-x64' });
    const build = await readyBuild(a, { platform: 'win-x64' });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-signed-'));
    const latchkey = (args: string[]) => runLatchkey(server.url, a.dev.apiKey, args);
    try {
      const refused = await latchkey(['push', '--app', a.app.id]);
      expect(refused.code, refused.stderr).toBe(5);
      expect(refused.stderr).toContain('Replace with Signed Package');

      const unsigned = path.join(dir, 'Notes.exe');
      fs.writeFileSync(unsigned, peFile());
      const notSigned = await latchkey(['builds', 'replace-signed', '--app', a.app.id, '--build', build.id, '--package', unsigned]);
      expect(notSigned.code, notSigned.stderr).toBe(5);
      expect(notSigned.stderr).toContain('PACKAGE_NOT_SIGNED');

      const signed = path.join(dir, 'Notes-signed.exe');
      fs.writeFileSync(signed, peFile({ signature: 'PKCS#7 signed data' }));
      const replaced = await latchkey(['builds', 'replace-signed', '--app', a.app.id, '--build', build.id, '--package', signed, '--json']);
      expect(replaced.code, replaced.stderr).toBe(0);
      expect(JSON.parse(replaced.stdout)).toMatchObject({ id: build.id, status: 'READY', package_name: 'Notes-signed.exe', signed_package_at: expect.any(String) });

      const pushed = await latchkey(['push', '--app', a.app.id]);
      expect(pushed.code, pushed.stderr).toBe(0);
      expect(pushed.stdout).toContain(build.id);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
