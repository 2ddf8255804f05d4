/**
 * The updater for real on Linux: v1 and v2 of an app protected as Node single executables by the
 * server, v2 pushed, v1 started with arguments as a customer starts it. The question is answered by
 * a stand-in `zenity` on PATH (the default dialog on a Linux desktop), so everything else is the
 * product as shipped: the engine's background check, the signed manifest, the verified download,
 * the rename-and-relaunch, the report of the first start of v2.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { downloadPackage, settled, uploadBuild, type Owner } from '../builds/support.js';
import { createLicense } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { appPush, pushApp, proOwner } from './support.js';

const appSource = (version: string) => `console.log('Notes Pro ${version} ran with ' + JSON.stringify(process.argv.slice(2)));\n`;

const ARGS = ['--open', 'notes with spaces.txt', '--verbose'];

let server: TestServer;
let o: Owner;
let work: string;
let v1: Record<string, any>;
let v2: Record<string, any>;
let v1File: string;

async function protect(version: string) {
  const queued = await uploadBuild(o, { data: appSource(version), name: 'main.js' }, { platform: 'linux-x64', version });
  const build = await settled(o, queued.id);
  expect(build).toMatchObject({ status: 'READY', package_format: 'single_executable' });
  return build;
}

beforeAll(async () => {
  server = await startTestServer();
  o = await proOwner(server, { name: 'Notes Pro', platforms: ['linux-x64'] });
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-self-update-'));
  v1 = await protect('1.0.0');
  server.clock.advance(1000);
  v2 = await protect('2.0.0');
  v1File = await downloadPackage(o, v1 as any, work);
}, 240_000);
afterAll(async () => {
  await server.close();
  fs.rmSync(work, { recursive: true, force: true });
});

interface Customer {
  home: string;
  installDir: string;
  executable: string;
  licenseKey: string;
  /** Where the stand-in dialog writes the arguments it was shown. */
  dialogLog: string;
}

/** A customer with their own home, license and a copy of v1 installed. */
async function customer(name: string): Promise<Customer> {
  const home = fs.mkdtempSync(path.join(work, `${name}-`));
  const installDir = path.join(home, 'Applications');
  fs.mkdirSync(installDir);
  const executable = path.join(installDir, 'notes-pro');
  fs.copyFileSync(v1File, executable);
  fs.chmodSync(executable, 0o755);
  const { license_key: licenseKey } = await createLicense(o.call, o.dev, { app_id: o.app.id });
  return { home, installDir, executable, licenseKey, dialogLog: path.join(home, 'dialog.log') };
}

/** A `zenity` that records its arguments and answers as a user clicking `button` would. */
function standInZenity(c: Customer, button: 'install' | 'skip'): string {
  const bin = path.join(c.home, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  // zenity exits 0 for the OK button; 1 for Cancel, or for the extra button after printing its label.
  const answer = button === 'install' ? 'exit 0' : "echo 'Skip this version'; exit 1";
  fs.writeFileSync(path.join(bin, 'zenity'), `#!/bin/sh\nprintf '%s\\n' "$@" >> '${c.dialogLog}'\n${answer}\n`, { mode: 0o755 });
  return bin;
}

/**
 * Runs the installed app as its user does and collects what it prints until every process writing
 * to its output (a relaunched version too) has ended.
 */
function runApp(c: Customer, dialogBin: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(c.executable, ARGS, {
    cwd: c.home,
    env: {
      PATH: `${dialogBin}:${process.env.PATH ?? ''}`,
      HOME: c.home,
      XDG_DATA_HOME: path.join(c.home, 'data'),
      DISPLAY: ':0',
      LATCHKEY_LICENSE_KEY: c.licenseKey,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let code: number | null = null;
  child.once('exit', (exitCode) => (code = exitCode));
  const closed = (stream: NodeJS.ReadableStream) => new Promise((resolve) => stream.once('close', resolve));
  return Promise.all([closed(child.stdout), closed(child.stderr)]).then(() => ({ code, stdout, stderr }));
}

const sha256 = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

/** Every file under `dir` with its SHA-256 and mode: a byte-for-byte picture of the install. */
function installTree(dir: string): Record<string, string> {
  const entries = fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[];
  return Object.fromEntries(
    entries
      .filter((d) => d.isFile())
      .map((d) => {
        const file = path.join(d.parentPath, d.name);
        return [path.relative(dir, file), `${sha256(file)} ${(fs.statSync(file).mode & 0o777).toString(8)}`];
      }),
  );
}

describe('a pushed update, installed on Linux', () => {
  it('replaces the running v1, relaunches v2 with the same arguments, and the server counts it Installed', { timeout: 120_000 }, async () => {
    const c = await customer('installs');
    await pushApp(o, { target_build_id: v2.id, release_notes: 'Faster search.\nFixes "export" on <Linux>.' });

    const run = await runApp(c, standInZenity(c, 'install'));

    expect(run.stdout, run.stderr).toBe(`Notes Pro 1.0.0 ran with ${JSON.stringify(ARGS)}\nNotes Pro 2.0.0 ran with ${JSON.stringify(ARGS)}\n`);
    // The question named both versions and showed the notes verbatim, as plain text.
    const shown = fs.readFileSync(c.dialogLog, 'utf8');
    expect(shown).toContain('--text=Notes Pro 2.0.0 is available. You have 1.0.0.\n\nFaster search.\nFixes "export" on <Linux>.');
    expect(shown).toContain('--no-markup');
    // v2 in place of v1, executable, and v1's renamed copy gone once v2 started healthy.
    expect(installTree(c.installDir)).toEqual({ 'notes-pro': `${v2.sha256} 755` });
    expect(await appPush(o)).toMatchObject({ target_build_id: v2.id, devices: { installed: 1, pending: 0 }, complete: true });

    // The next start is v2 straight away: nothing more is offered.
    const again = await runApp(c, standInZenity(c, 'install'));
    expect(again.stdout).toBe(`Notes Pro 2.0.0 ran with ${JSON.stringify(ARGS)}\n`);
    expect(fs.readFileSync(c.dialogLog, 'utf8')).toBe(shown);
  });

  it('leaves the install untouched, byte for byte, when the user skips the version', { timeout: 120_000 }, async () => {
    const c = await customer('skips');
    await pushApp(o, { target_build_id: v2.id, release_notes: 'Faster search.' });
    const before = installTree(c.installDir);

    const run = await runApp(c, standInZenity(c, 'skip'));

    expect(run.stdout, run.stderr).toBe(`Notes Pro 1.0.0 ran with ${JSON.stringify(ARGS)}\n`);
    expect(installTree(c.installDir)).toEqual(before);
    expect(await appPush(o)).toMatchObject({ devices: { installed: 1, skipped: 1, pending: 0 } });
    // Skipped stays skipped: the next start does not ask again.
    const asked = fs.readFileSync(c.dialogLog, 'utf8');
    await runApp(c, standInZenity(c, 'install'));
    expect(fs.readFileSync(c.dialogLog, 'utf8')).toBe(asked);
    expect(installTree(c.installDir)).toEqual(before);
  });

  it('refuses a package whose bytes are not the signed SHA-256, before anything outside its cache changes', { timeout: 120_000 }, async () => {
    const c = await customer('tampered');
    await pushApp(o, { target_build_id: v2.id });
    // The stored package is swapped for other bytes of the same length, as a compromised mirror would.
    const stored = path.join(server.dataDir, 'storage', ...(await packageKey(v2.id)).split('/'));
    const genuine = fs.readFileSync(stored);
    const forged = Buffer.from(genuine);
    forged.writeUInt8(forged.readUInt8(forged.length - 1) ^ 0xff, forged.length - 1);
    fs.writeFileSync(stored, forged);
    try {
      const before = installTree(c.installDir);
      const run = await runApp(c, standInZenity(c, 'install'));
      expect(run.stdout, run.stderr).toBe(`Notes Pro 1.0.0 ran with ${JSON.stringify(ARGS)}\n`);
      // The user said Install now; the bytes were refused after that, and v1 is exactly as it was.
      expect(fs.readFileSync(c.dialogLog, 'utf8')).toContain('--ok-label=Install now');
      expect(installTree(c.installDir)).toEqual(before);
    } finally {
      fs.writeFileSync(stored, genuine);
    }
  });
});

/** Where the server's storage keeps a build's package (its key, relative to the storage root). */
async function packageKey(buildId: string): Promise<string> {
  const row = await server.database.db('builds').where({ id: buildId }).first('package_key');
  return row.package_key as string;
}
