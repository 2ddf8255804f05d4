import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerDeveloper, type TestDeveloper } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { freshProject, packWorkspace, ROOT, runProgram, type ProgramRun } from './support.js';

/**
 * `latchkey` as a developer gets it: the packed @latchkey/cli installed into a fresh project outside
 * the repository, started through `npx` on plain Node (no TypeScript loader, none of the
 * repository's node_modules), signing in and working against a real server on the free plan.
 */
let server: TestServer;
let dev: TestDeveloper;
let tarball: string;
let project: string;
let home: string;

beforeAll(async () => {
  server = await startTestServer();
  dev = await registerDeveloper(client(server.url));
  // The package ships dist/ as built (the root pretest builds every workspace).
  if (!fs.existsSync(path.join(ROOT, 'cli/dist/main.js'))) throw new Error('cli/dist/main.js is missing: run `npm run build -w cli` first');
  const packs = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-cli-packs-'));
  tarball = await packWorkspace('cli', packs);
  project = await freshProject('cli-consumer', [tarball]);
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-cli-home-'));
}, 180_000);
afterAll(async () => {
  await server?.close();
  for (const dir of [project, home, tarball && path.dirname(tarball)]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** `npx latchkey ...` in the fresh project, with a home and config directory of its own and nothing else set. */
function latchkey(args: string[]): Promise<ProgramRun> {
  return runProgram('npx', ['--no-install', 'latchkey', ...args], {
    cwd: project,
    env: { PATH: process.env.PATH, HOME: home, LATCHKEY_CONFIG_DIR: path.join(home, 'config') },
    timeoutMs: 120_000,
  });
}

const json = (run: ProgramRun) => {
  expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
  return JSON.parse(run.stdout);
};

describe('the packed CLI', { timeout: 300_000 }, () => {
  it('holds the compiled command, its README and the Apache-2.0 license, and installs with commander as its only dependency', async () => {
    const { stdout } = await promisify(execFile)('tar', ['tzf', tarball]);
    const files = stdout.trim().split('\n');
    expect(files).toEqual(expect.arrayContaining(['package/package.json', 'package/README.md', 'package/LICENSE', 'package/dist/main.js']));
    expect(files.filter((f) => !/^package\/(README\.md|LICENSE|package\.json|dist\/[\w-]+\.js)$/.test(f))).toEqual([]);
    const installed = path.join(project, 'node_modules/@latchkey/cli');
    expect(JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')).license).toBe('Apache-2.0');
    expect(fs.readFileSync(path.join(installed, 'LICENSE'), 'utf8')).toMatch(/^\s+Apache License\s+Version 2\.0, January 2004/);
    expect(fs.readdirSync(path.join(project, 'node_modules')).sort()).toEqual(['.bin', '.package-lock.json', '@latchkey', 'commander']);
    expect(fs.readFileSync(path.join(project, 'node_modules/@latchkey/cli/dist/main.js'), 'utf8')).toMatch(/^#!\/usr\/bin\/env node\n/);
  });

  it('runs through npx: help, login, apps create, builds upload, licenses create', async () => {
    const help = await latchkey(['--help']);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toContain('Usage: latchkey');
    expect(help.stdout).toContain('Exit codes:');

    const login = await latchkey(['login', '--url', server.url, '--api-key', dev.apiKey]);
    expect(login.code, login.stderr).toBe(0);
    const saved = path.join(home, 'config', 'config.json');
    expect(login.stdout).toContain(`saved to ${saved}`);
    expect(fs.statSync(saved).mode & 0o777).toBe(0o600);

    const app = json(await latchkey(['apps', 'create', '--name', 'Packaged Notes', '--platform', 'linux-x64', '--json']));
    fs.writeFileSync(path.join(project, 'app.js'), "console.log('packaged app');\n");
    const build = json(await latchkey(['builds', 'upload', '--app', app.id, '--artifact', 'app.js', '--platform', 'cross_platform', '--version', '1.0.0', '--json']));
    expect(build).toMatchObject({ app_id: app.id, status: 'READY', version: '1.0.0', package_format: 'javascript_bundle' });

    // The free plan issues trial licenses only.
    const license = json(await latchkey(['licenses', 'create', '--app', app.id, '--type', 'trial', '--email', 'buyer@example.com', '--json']));
    expect(license).toMatchObject({ status: 'ACTIVE', license_type: 'trial', email: 'buyer@example.com' });
    const listed = await latchkey(['licenses', 'list', '--app', app.id]);
    expect(listed.stdout).toContain(license.license_key);
  });
});
