/**
 * Real npm apps (issue 19 item 3): published packages fetched at test time with `npm pack` (npm's
 * cache and registry), their entry resolved as npm runs them, archives with node_modules/.bin
 * symlinks, escaping symlinks and native addons refused at upload, and builds that cannot reach
 * their license gate FAILED by the smoke start.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { tarGzOf, zipOf } from './archives.js';
import { downloadPackage, filesOf, protectionWorld, runProtected, settled, storedFiles, upload, uploadBuild } from './support.js';

const { server, o, work, licenseKey, home } = await protectionWorld('npm-apps');
// Never a synchronous child process: the test server runs in this process and must keep answering.
const run = promisify(execFile);
const npm = async (args: string[], cwd: string) => (await run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, encoding: 'utf8' })).stdout;

/** A published package as `npm pack` gives it (a .tgz whose top folder is `package/`). */
async function packed(spec: string): Promise<Buffer> {
  const dir = fs.mkdtempSync(path.join(work, 'pack-'));
  const name = (await npm(['pack', spec, '--pack-destination', dir], dir)).trim().split('\n').pop()!;
  return fs.readFileSync(path.join(dir, name));
}

/** A folder as a .tar.gz by the system's tar, symlinks kept as symlinks. */
async function tarOf(dir: string): Promise<Buffer> {
  const file = `${dir}.tar.gz`;
  await run('tar', ['czf', file, '-C', path.dirname(dir), path.basename(dir)]);
  return fs.readFileSync(file);
}

/** A published package with its dependencies installed (`npm install --omit=dev`), as a developer would ship it. */
async function installed(spec: string): Promise<Buffer> {
  const dir = fs.mkdtempSync(path.join(work, 'app-'));
  fs.writeFileSync(path.join(dir, 'package.tgz'), await packed(spec));
  await run('tar', ['xzf', 'package.tgz'], { cwd: dir });
  await npm(['install', '--omit=dev', '--ignore-scripts'], path.join(dir, 'package'));
  return tarOf(path.join(dir, 'package'));
}

const protect = async (file: { data: Buffer | string; name: string }, fields: Record<string, string> = {}) =>
  settled(o, (await uploadBuild(o, { data: typeof file.data === 'string' ? file.data : new Uint8Array(file.data), name: file.name }, fields)).id);

describe('entry resolution as npm runs the app', () => {
  it('cowsay (a bin CLI with dependencies) starts from its bin: the gate without a license; with one its --help, and byte for byte what the unprotected package prints, its cow files read from the encrypted store', async () => {
    const tarball = await installed('cowsay@1.6.0');
    const build = await protect({ data: tarball, name: 'cowsay-1.6.0.tar.gz' });
    expect(build, build.failure_reason).toMatchObject({ status: 'READY', package_format: 'javascript_bundle', version: '1.6.0', entry: null });
    const bundle = await downloadPackage(o, build as any, work);
    const unlicensed = await runProtected(bundle, { home: home() });
    expect(unlicensed.code).toBe(2);
    expect(unlicensed.stderr).toContain('License key:');
    // cli.js, not index.js (package.json's main): yargs answers --help from the bin's own options.
    const licensed = await runProtected(bundle, { home: home(), env: { LATCHKEY_LICENSE_KEY: licenseKey }, args: ['--help'] });
    expect(licensed.stdout).toContain('[-e eye_string] [-f cowfile]');

    // What it prints is what the unprotected package prints, byte for byte, its cows/*.cow files
    // read (and listed, -l) from the encrypted store.
    const plainDir = fs.mkdtempSync(path.join(work, 'plain-'));
    fs.writeFileSync(path.join(plainDir, 'app.tar.gz'), tarball);
    await run('tar', ['xzf', 'app.tar.gz'], { cwd: plainDir });
    const user = home();
    for (const args of [['hello'], ['-f', 'tux', 'Protected'], ['-l']]) {
      const plain = (await run(process.execPath, [path.join(plainDir, 'package', 'cli.js'), ...args], { encoding: 'utf8' })).stdout;
      const protectedRun = await runProtected(bundle, { home: user, env: { LATCHKEY_LICENSE_KEY: licenseKey }, args });
      expect(protectedRun.stdout).toBe(plain);
      expect(protectedRun.code).toBe(0);
    }
  }, 120_000);

  it('several bins, none named after the package (coffeescript): FAILED, listing them; the entry field picks one', async () => {
    const tgz = await packed('coffeescript@2.7.0');
    const failed = await protect({ data: tgz, name: 'coffeescript-2.7.0.tgz' });
    expect(failed).toMatchObject({ status: 'FAILED', scan_status: 'CLEAN' });
    expect(failed.failure_reason).toContain('several "bin" commands (coffee, cake)');
    expect(failed.failure_reason).toContain('entry field');
    const chosen = await protect({ data: tgz, name: 'coffeescript-2.7.0.tgz' }, { entry: 'coffee' });
    expect(chosen, chosen.failure_reason).toMatchObject({ status: 'READY', package_format: 'javascript_bundle', entry: 'coffee' });
  }, 120_000);

  it('a package with only "exports" (@sindresorhus/is) is READY from its exported entry', async () => {
    const build = await protect({ data: await packed('@sindresorhus/is@7.0.1'), name: 'is-7.0.1.tgz' });
    expect(build, build.failure_reason).toMatchObject({ status: 'READY', package_format: 'javascript_bundle', version: '7.0.1' });
  }, 120_000);

  it('the entry field overrides package.json: a path in the app, kept on the build', async () => {
    const app = tarGzOf([
      ['app/package.json', JSON.stringify({ name: 'two', version: '1.0.0', main: 'a.js' })],
      ['app/a.js', "console.log('started from a');\n"],
      ['app/tools/b.js', "console.log('started from b');\n"],
    ]);
    const build = await protect({ data: app, name: 'two.tar.gz' }, { entry: './tools/b.js' });
    expect(build, build.failure_reason).toMatchObject({ status: 'READY', entry: 'tools/b.js' });
    const run = await runProtected(await downloadPackage(o, build as any, work), { home: home(), env: { LATCHKEY_LICENSE_KEY: licenseKey } });
    expect(run.stdout).toBe('started from b\n');
    const missing = await protect({ data: app, name: 'two.tar.gz' }, { entry: 'tools/c.js' });
    expect(missing).toMatchObject({ status: 'FAILED' });
    expect(missing.failure_reason).toContain('the entry "tools/c.js" named on upload is not a file in the app');
  }, 120_000);

  it.each([['../outside.js'], ['/etc/passwd'], ['C:/x.js'], ['a\\b.js']])('refuses the entry %s (400), on uploads and upload sessions', async (entry) => {
    const res = await upload(o, { file: { data: 'console.log(1)', name: 'main.js' }, fields: { platform: 'cross_platform', entry } });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain('entry');
    const session = await o.call('POST', `/v1/apps/${o.app.id}/uploads`, {
      token: o.dev.accessToken,
      body: { filename: 'main.js', size_bytes: 14, sha256: 'a'.repeat(64), platform: 'cross_platform', entry },
    });
    expect(session.status).toBe(400);
  });
});

describe('symlinks in archives', () => {
  it('an app installed with npm (node_modules/.bin symlinks) is accepted and READY', async () => {
    const dir = path.join(fs.mkdtempSync(path.join(work, 'linked-')), 'moo');
    fs.mkdirSync(dir);
    fs.writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'moo', version: '2.0.0', bin: 'moo.js', dependencies: { 'strip-final-newline': '2.0.0', semver: '7.6.3' } }),
    );
    fs.writeFileSync(path.join(dir, 'moo.js'), "const semver = require('semver');\nconsole.log('moo ' + semver.valid('2.0.0'));\n");
    await npm(['install', '--omit=dev', '--ignore-scripts'], dir);
    expect(fs.lstatSync(path.join(dir, 'node_modules/.bin/semver')).isSymbolicLink()).toBe(true);
    const build = await protect({ data: await tarOf(dir), name: 'moo.tar.gz' });
    expect(build, build.failure_reason).toMatchObject({ status: 'READY', scan_status: 'CLEAN', package_format: 'javascript_bundle' });
    const run = await runProtected(await downloadPackage(o, build as any, work), { home: home(), env: { LATCHKEY_LICENSE_KEY: licenseKey } });
    expect(run.stdout).toBe('moo 2.0.0\n');
  }, 120_000);

  it('an ES module app with top-level await on an ESM-only package (chalk@5) prints what it prints unprotected', async () => {
    const dir = path.join(fs.mkdtempSync(path.join(work, 'esm-')), 'colour');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'colour', version: '1.0.0', type: 'module', main: 'index.js', dependencies: { chalk: '5.3.0' } }));
    fs.writeFileSync(
      path.join(dir, 'index.js'),
      "import chalk from 'chalk';\nconst doubled = await Promise.all([1, 2, 3].map(async (n) => n * 2));\nconsole.log(chalk.bold('doubled'), doubled.join(','), 'colour level', chalk.level);\n",
    );
    await npm(['install', '--omit=dev', '--ignore-scripts'], dir);
    const plain = (await run(process.execPath, [path.join(dir, 'index.js')], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } })).stdout;
    expect(plain).toBe('doubled 2,4,6 colour level 0\n');
    for (const platform of ['cross_platform', 'linux-x64']) {
      const build = await protect({ data: await tarOf(dir), name: 'colour.tar.gz' }, { platform });
      expect(build, build.failure_reason).toMatchObject({ status: 'READY', protection_level: 'encrypted' });
      const protectedRun = await runProtected(await downloadPackage(o, build as any, work), { home: home(), env: { LATCHKEY_LICENSE_KEY: licenseKey } });
      expect(protectedRun.stdout).toBe(plain);
    }
  }, 180_000);

  const escaping: [string, () => Promise<Buffer>, string, string][] = [
    [
      'an absolute target',
      async () => tarGzOf([['app/package.json', '{}'], { name: 'app/node_modules/.bin/x', type: '2', linkTarget: '/etc/passwd' }]),
      'app.tar.gz',
      '"app/node_modules/.bin/x" is a symlink to "/etc/passwd"',
    ],
    [
      '.. past the top',
      async () => tarGzOf([['app/package.json', '{}'], { name: 'app/node_modules/.bin/x', type: '2', linkTarget: '../../../../etc/passwd' }]),
      'app.tar.gz',
      '"app/node_modules/.bin/x" is a symlink to "../../../../etc/passwd", which points outside the archive',
    ],
    [
      'a path through another symlink',
      async () => tarGzOf([['app/package.json', '{}'], { name: 'app/up', type: '2', linkTarget: '..' }, { name: 'app/lib/esc', type: '2', linkTarget: '../up/../secret' }]),
      'app.tar.gz',
      '"app/lib/esc" is a symlink to "../up/../secret", which points outside the archive through another symlink',
    ],
    [
      'a zip symlink out of the archive',
      () => zipOf({ 'package.json': '{}', 'bin/x': '../../etc/passwd' }, { mode: { 'bin/x': 0o120777 } }),
      'app.zip',
      '"bin/x" is a symlink to "../../etc/passwd"',
    ],
    [
      'a file written through a symlink',
      async () => tarGzOf([{ name: 'app/lib', type: '2', linkTarget: 'src' }, ['app/lib/x.js', 'x']]),
      'app.tar.gz',
      '"app/lib/x.js" is inside "app/lib", which is a symlink',
    ],
  ];

  it.each(escaping)('refuses %s at upload (422 PACKAGE_REJECTED naming the entry), keeping nothing', async (_name, make, fileName, reason) => {
    const before = storedFiles(server);
    const res = await upload(o, { file: { data: new Uint8Array(await make()), name: fileName }, fields: { platform: 'cross_platform' } });
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body.error_code).toBe('PACKAGE_REJECTED');
    expect(res.body.detail).toContain(reason);
    expect(storedFiles(server)).toEqual(before);
  });
});

describe('native addons', () => {
  it('an app carrying .node files is refused at upload (422), naming them', async () => {
    const app = await zipOf({
      'package.json': JSON.stringify({ name: 'nat', main: 'index.js' }),
      'index.js': "require('./build/Release/nat.node')",
      'build/Release/nat.node': Buffer.from([0x7f, 0x45, 0x4c, 0x46]),
    });
    const res = await upload(o, { file: { data: new Uint8Array(app), name: 'nat.zip' }, fields: { platform: 'cross_platform' } });
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body.error_code).toBe('PACKAGE_REJECTED');
    expect(res.body.detail).toContain('"build/Release/nat.node"');
    expect(res.body.detail).toContain('native addons cannot be protected yet');
  });
});

describe('the smoke start before READY', () => {
  it("FAILS an app that imports a built-in module Node does not have: it would fail only after the gate, on a customer's machine", async () => {
    const app = tarGzOf([
      ['app/package.json', JSON.stringify({ name: 'broken', main: 'index.mjs' })],
      ['app/index.mjs', "import db from 'node:no-such-builtin';\nconsole.log(db);\n"],
    ]);
    const build = await protect({ data: app, name: 'broken.tar.gz' });
    expect(build).toMatchObject({ status: 'FAILED', scan_status: 'CLEAN', package_format: null });
    expect(build.failure_reason).toContain('the app imports "node:no-such-builtin", which is not a Node built-in module and not in the upload');
    expect(build.failure_reason).not.toContain(os.tmpdir());
    expect(filesOf(server, build.id)).toEqual([]);
  }, 120_000);

  it('passes a linux-x64 single executable that reaches its gate', async () => {
    const build = await protect({ data: "console.log('fine');\n", name: 'fine.js' }, { platform: 'linux-x64' });
    expect(build, build.failure_reason).toMatchObject({ status: 'READY', package_format: 'single_executable' });
  }, 120_000);
});
