/**
 * Every platform's build runs without Node installed: single executables for Linux and Windows made
 * from the pinned Node runtime of that platform, an archive with the vendor-signed runtime and a
 * launcher for macOS. Checked from the bytes customers download (headers, injected blob, fuse), run
 * for real where this machine can: linux-x64 natively, win-x64 under wine64 when it is installed.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { extract, list } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_RUNTIME_VERSION, NODE_RUNTIMES, nodeRuntime, type RuntimePlatform } from '../../native/runtimes/node-runtimes.js';
import { createLicense, setPlan } from '../support/fixtures.js';
import { NODE_RUNTIMES_DIR, startTestServer, type TestServer } from '../support/server.js';
import { underWine, wine64, winePrefix } from '../support/wine.js';
import { inspectExecutable } from './executables.js';
import { downloadPackage, owner, runProtected, settled, uploadBuild, type Owner } from './support.js';

const run = promisify(execFile);

let server: TestServer;
let o: Owner;
let work: string;
let licenseKey: string;
const delivered = new Map<RuntimePlatform, { build: Record<string, any>; file: string }>();
const PLATFORMS: RuntimePlatform[] = ['linux-x64', 'linux-arm64', 'win-x64', 'win-arm64', 'mac-x64', 'mac-arm64'];
const APP_SOURCE = `import os from 'node:os';\nconsole.log('Notes Pro says hello on ' + os.platform() + ' ' + process.argv.slice(2).join(' '));\n`;

beforeAll(async () => {
  // Two protection jobs at once for one developer: the six builds below take a minute, not two.
  server = await startTestServer({ env: { LATCHKEY_JOB_TENANT_CONCURRENCY: '2' } });
  o = await owner(server, { platforms: PLATFORMS });
  await setPlan(o.call, server.adminToken, o.dev.id, 'pro');
  licenseKey = (await createLicense(o.call, o.dev, { app_id: o.app.id, device_limit: 10 })).license_key;
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-platforms-'));
  const uploaded = await Promise.all(
    PLATFORMS.map(async (platform) => ({ platform, id: (await uploadBuild(o, { data: APP_SOURCE, name: 'main.mjs' }, { platform, version: '2.1.0' })).id })),
  );
  for (const { platform, id } of uploaded) {
    const build = await settled(o, id);
    expect(build.status, `${platform}: ${build.failure_reason}`).toBe('READY');
    delivered.set(platform, { build, file: await downloadPackage(o, build as any, work) });
  }
  // Figures for the record (never asserted): queue to READY per platform, runtime downloads included on a cold cache.
  const took = [...delivered].map(([p, { build }]) => `${p} ${((Date.parse(build.completed_at) - Date.parse(build.created_at)) / 1000).toFixed(1)} s`);
  console.warn(`protection, upload to READY: ${took.join(', ')}`);
}, 600_000);
afterAll(async () => {
  await server?.close();
  fs.rmSync(work, { recursive: true, force: true });
});

const home = () => fs.mkdtempSync(path.join(work, 'home-'));
const bytesOf = (platform: RuntimePlatform) => fs.readFileSync(delivered.get(platform)!.file);

/**
 * The notices every delivered file carries (the licences of MIT, Apache-2.0, ISC, BSD and Node ask
 * for them in every copy): the engine (this project's SDK), zod built into it, the hardware probes
 * bundled with it; in an executable also Node's licence and what its sodium-native addon has
 * compiled in. Each heading, then its licence's text.
 */
function expectNotices(text: string, { executable }: { executable: boolean }): void {
  const section = (heading: RegExp) => {
    const at = text.search(heading);
    expect(at, `${heading} in the notices`).toBeGreaterThanOrEqual(0);
    return text.slice(at, at + 2000);
  };
  expect(section(/== @latchkey\/runtime-sdk \S+ \(Apache-2\.0\): the Latchkey runtime engine ==/)).toContain('Apache License');
  expect(section(/zod \d+\.\d+\.\d+ \(MIT\)/)).toContain('Permission is hereby granted, free of charge');
  expect(section(/== systeminformation \d+\.\d+\.\d+ \(MIT\) ==/)).toContain('Sebastian Hildebrandt');
  const nodeHeading = new RegExp(`== Node\\.js ${NODE_RUNTIME_VERSION.replaceAll('.', '\\.')}: the runtime this file embeds ==`);
  if (!executable) {
    expect(text).not.toMatch(nodeHeading);
    expect(text).not.toContain('libsodium');
    return;
  }
  expect(section(nodeHeading)).toContain('Node.js is licensed for use as follows');
  expect(section(/== sodium-native \d+\.\d+\.\d+ \(MIT\) ==/)).toContain('Mathias Buus');
  expect(section(/== libsodium \(ISC\), github:jedisct1\/libsodium#\w+: compiled into sodium-native's addon/)).toContain('Frank Denis');
  expect(section(/== libjstl \(Apache-2\.0\), github:holepunchto\/libjstl#\w+/)).toContain('Holepunch');
  expect(section(/== bare-compat-napi \(its headers\) \(Apache-2\.0\), bare-compat-napi/)).toContain('Holepunch');
  expect(section(/== sodium-native's pbkdf2 extension \(BSD-2-Clause\)/)).toContain('Colin Percival');
}

describe('linux and Windows: Node single executables from the pinned runtime of the platform', () => {
  const cases: [RuntimePlatform, 'elf' | 'pe', 'x64' | 'arm64', string][] = [
    ['linux-x64', 'elf', 'x64', 'notes-pro-2.1.0-linux-x64'],
    ['linux-arm64', 'elf', 'arm64', 'notes-pro-2.1.0-linux-arm64'],
    ['win-x64', 'pe', 'x64', 'notes-pro-2.1.0-win-x64.exe'],
    ['win-arm64', 'pe', 'arm64', 'notes-pro-2.1.0-win-arm64.exe'],
  ];
  it.each(cases)('%s: %s for %s, the blob injected and the fuse flipped', (platform, format, machine, name) => {
    const { build } = delivered.get(platform)!;
    expect(build).toMatchObject({ status: 'READY', package_format: 'single_executable', package_name: name });
    const bytes = bytesOf(platform);
    expect(build.protected_size_bytes).toBe(bytes.length);
    const facts = inspectExecutable(bytes);
    expect(facts).toMatchObject({ format, machine, fuseFlipped: true });
    expect(facts.seaBlobBytes).toBeGreaterThan(1000);
    // Node 22, not the server's own Node.
    expect(bytes.includes(`node-v${NODE_RUNTIME_VERSION}`) || bytes.includes(`v${NODE_RUNTIME_VERSION}`)).toBe(true);
    // The notices are a plain-text asset of the blob (the Windows runtimes' packages carry no licence: Node's comes from linux-x64's).
    const notices = bytes.indexOf('Notices of the open-source software in this file');
    expect(notices).toBeGreaterThan(0);
    expectNotices(bytes.subarray(notices, notices + 400_000).toString('latin1'), { executable: true });
  });

  it('linux-x64 runs: asks for a license key and exits 2 without one, runs the app with one, on Node 22', { timeout: 60_000 }, async () => {
    const file = delivered.get('linux-x64')!.file;
    const refused = await runProtected(file, { home: home() });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('This app needs a license key.');
    expect(refused.stdout).not.toContain('Notes Pro says hello');
    const licensed = await runProtected(file, { home: home(), env: { LATCHKEY_LICENSE_KEY: licenseKey } });
    expect(licensed).toMatchObject({ code: 0, stdout: 'Notes Pro says hello on linux \n' });
  });

  it.skipIf(!wine64)('win-x64 runs under wine64 the same way', { timeout: 300_000 }, async () => {
    const env = await winePrefix(work, home());
    const exe = delivered.get('win-x64')!.file;
    const refused = await underWine(exe, env, [], work);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('This app needs a license key.');
    expect(refused.stdout).not.toContain('Notes Pro says hello');
    const licensed = await underWine(exe, { ...env, LATCHKEY_LICENSE_KEY: licenseKey }, ['a', 'b'], work);
    expect(licensed).toMatchObject({ code: 0, stdout: 'Notes Pro says hello on win32 a b\n' });
  });
  if (!wine64) it.skip('win-x64 under wine64: wine64 is not installed (apt-get install -y wine64)', () => {});
});

describe('macOS: an archive with the vendor-signed Node runtime unmodified, the app and a launcher', () => {
  const cases: [RuntimePlatform, 'x64' | 'arm64'][] = [
    ['mac-x64', 'x64'],
    ['mac-arm64', 'arm64'],
  ];
  it.each(cases)('%s: a .tar.gz whose runtime is the published Mach-O for %s, signature intact', async (platform, machine) => {
    const { build, file } = delivered.get(platform)!;
    expect(build).toMatchObject({ status: 'READY', package_format: 'launcher_archive', package_name: `notes-pro-2.1.0-${platform}.tar.gz` });
    const entries: Record<string, number> = {};
    await list({ file, onReadEntry: (e) => void (entries[e.path] = e.mode! & 0o777) });
    expect(entries).toMatchObject({ 'notes-pro/bin/notes-pro': 0o755, 'notes-pro/runtime/node': 0o755, 'notes-pro/app/main.cjs': expect.any(Number) });

    const dir = fs.mkdtempSync(path.join(work, `${platform}-`));
    await extract({ file, cwd: dir });
    expectNotices(fs.readFileSync(path.join(dir, 'notes-pro/app/THIRD_PARTY_NOTICES'), 'utf8'), { executable: true });
    const runtime = fs.readFileSync(path.join(dir, 'notes-pro/runtime/node'));
    expect(inspectExecutable(runtime)).toMatchObject({ format: 'macho', machine, codeSignature: true, seaBlobBytes: null, fuseFlipped: false });
    // Byte for byte the runtime npm publishes, so Apple's signature on it still holds.
    const published = fs.readFileSync(await nodeRuntime(platform, NODE_RUNTIMES_DIR));
    expect(Buffer.compare(runtime, published)).toBe(0);
    expect(NODE_RUNTIMES[platform].binary).toBe('bin/node');
  });

  it("the launcher, linked from elsewhere, runs the bundled runtime on the app with the customer's arguments", { timeout: 60_000 }, async () => {
    // The archive's runtime is a Mach-O; here its place is taken by this machine's pinned runtime to run the launcher for real.
    const dir = fs.mkdtempSync(path.join(work, 'launcher-'));
    await extract({ file: delivered.get('mac-arm64')!.file, cwd: dir });
    fs.copyFileSync(await nodeRuntime('linux-x64', NODE_RUNTIMES_DIR), path.join(dir, 'notes-pro/runtime/node'));
    fs.mkdirSync(path.join(dir, 'usr-local-bin'));
    fs.symlinkSync(path.join(dir, 'notes-pro/bin/notes-pro'), path.join(dir, 'usr-local-bin/notes-pro'));
    const launcher = path.join(dir, 'usr-local-bin/notes-pro');
    const refused = await runProtected(launcher, { home: home() });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('This app needs a license key.');
    const licensed = await runProtected(launcher, { home: home(), env: { LATCHKEY_LICENSE_KEY: licenseKey } });
    expect(licensed).toMatchObject({ code: 0, stdout: 'Notes Pro says hello on linux \n' });
    const { stdout } = await run('/bin/sh', ['-c', `"${launcher}" "two words" --flag`], { env: { PATH: process.env.PATH ?? '', HOME: home(), LATCHKEY_LICENSE_KEY: licenseKey } });
    expect(stdout).toBe('Notes Pro says hello on linux two words --flag\n');
  });
});

describe('cross_platform', () => {
  it('stays a JavaScript bundle for an installed Node >= 20, and says so', { timeout: 60_000 }, async () => {
    const plain = {
      ...o,
      app: (await o.call('POST', '/v1/apps', { token: o.dev.accessToken, body: { name: 'Anywhere', platforms: ['linux-x64'], protection_level: 'hardened' } })).body,
    };
    const build = await settled(plain, (await uploadBuild(plain, { data: APP_SOURCE, name: 'main.mjs' })).id);
    expect(build).toMatchObject({ status: 'READY', package_format: 'javascript_bundle', package_name: 'anywhere-cross_platform.mjs' });
    // The notices close the bundle as a comment after the protected region: a hardened bundle still
    // passes its integrity check. The customer's own Node brings its licence.
    const file = await downloadPackage(plain, build as any, work);
    const text = fs.readFileSync(file, 'utf8');
    expect(text.trimEnd().endsWith('*/')).toBe(true);
    expectNotices(text.slice(text.lastIndexOf('/*! THIRD_PARTY_NOTICES')), { executable: false });
    const key = (await createLicense(o.call, o.dev, { app_id: plain.app.id })).license_key;
    expect(await runProtected(file, { home: home(), env: { LATCHKEY_LICENSE_KEY: key } })).toMatchObject({ code: 0, stdout: 'Notes Pro says hello on linux \n' });
    const openapi = await o.call('GET', '/v1/openapi.json');
    expect(JSON.stringify(openapi.body)).toContain('Node >= 20');
  });
});
