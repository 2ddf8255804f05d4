import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import * as esbuild from 'esbuild';
import webpack from 'webpack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { freshProject, licensedAppEnv, node22, packWorkspace, ROOT, runProgram, WORKSPACE_MODULES, type ProgramRun } from './support.js';

/**
 * The SDK as an app developer gets it: `npm pack`, installed into a fresh project outside the
 * repository, used from plain Node (ES modules and CommonJS, Node 20 and 22), type-checked by a
 * TypeScript consumer, bundled by esbuild and webpack, and each app run for real against a server.
 */
const FIXTURE = path.join(ROOT, 'test/fixtures/sdk-consumer');

let server: TestServer;
let project: string;
let tarball: string;
let appEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  server = await startTestServer();
  const licensed = await licensedAppEnv(server);

  const packs = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-packs-'));
  tarball = await packWorkspace('runtime-sdk', packs);
  project = await freshProject('sdk-consumer', [tarball]);
  for (const file of fs.readdirSync(FIXTURE)) fs.copyFileSync(path.join(FIXTURE, file), path.join(project, file));
  appEnv = { PATH: process.env.PATH, ...licensed };
}, 180_000);
afterAll(async () => {
  await server?.close();
  if (project) fs.rmSync(project, { recursive: true, force: true });
});

/** Runs one of the apps with its own license cache; returns the JSON line it printed. */
async function runApp(node: string, file: string, cwd = project): Promise<{ run: ProgramRun; result: Record<string, any> }> {
  const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-cache-'));
  const run = await runProgram(node, [file], { cwd, env: { ...appEnv, CACHE_DIR: cacheDir } });
  fs.rmSync(cacheDir, { recursive: true, force: true });
  expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
  return { run, result: JSON.parse(run.stdout.trim().split('\n').at(-1)!) };
}

/** A folder with only the bundle in it: no node_modules to fall back on. */
function bareDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-bundle-'));
}

describe('the packed SDK', { timeout: 180_000 }, () => {
  it('holds only what an app needs: compiled entries, their types, the README, the Apache-2.0 license, the bundled notices', async () => {
    const { stdout } = await promisify(execFile)('tar', ['tzf', tarball]);
    const files = stdout.trim().split('\n');
    expect(files).toContain('package/README.md');
    expect(files).toContain('package/LICENSE');
    expect(files).toContain('package/dist/esm/index.js');
    expect(files).toContain('package/dist/cjs/index.cjs');
    expect(files).toContain('package/dist/esm/index.d.ts');
    expect(files).toContain('package/dist/cjs/index.d.cts');
    const unexpected = files.filter((f) => !/^package\/(README\.md|LICENSE|package\.json|dist\/THIRD_PARTY_NOTICES|dist\/.+\.(js|cjs|d\.ts|d\.cts))$/.test(f));
    expect(unexpected).toEqual([]);
    const installed = path.join(project, 'node_modules/@latchkey/runtime-sdk');
    const manifest = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8'));
    expect(manifest.license).toBe('Apache-2.0');
    // zod is built into dist (a cold import no longer loads its 97 modules): not installed, its MIT notice shipped instead.
    expect(Object.keys(manifest.dependencies)).toEqual(['systeminformation']);
    expect(fs.existsSync(path.join(project, 'node_modules/zod'))).toBe(false);
    expect(fs.readFileSync(path.join(installed, 'dist/THIRD_PARTY_NOTICES'), 'utf8')).toMatch(
      /^zod 4\.\d+\.\d+ \(MIT\), built into dist\/:\n\nMIT License\n\nCopyright \(c\) \d{4} Colin McDonnell/,
    );
    for (const entry of ['.', './updates', './protocol', './engine']) {
      expect(Object.keys(manifest.exports[entry].import)).toEqual(['types', 'default']);
      expect(Object.keys(manifest.exports[entry].require)).toEqual(['types', 'default']);
    }
  });

  it.each([
    ['ES modules', 'activate.mjs'],
    ['CommonJS', 'activate.cjs'],
  ])('activates a license from plain Node (%s), no loader', async (_kind, file) => {
    const { result } = await runApp(process.execPath, file);
    expect(result).toMatchObject({ state: 'valid', usable: true });
    if (file.endsWith('.mjs')) expect(result).toMatchObject({ memoryProtection: 'sodium', updater: 'function', warnings: [] });
    else expect(result.codes).toBe(true);
  });

  it.each([['activate.mjs'], ['activate.cjs']])('runs on Node 22 LTS (%s)', async (file) => {
    const node = await node22();
    const version = await runProgram(node, ['--version'], { cwd: project });
    expect(version.stdout.trim()).toBe('v22.23.2');
    const { result } = await runApp(node, file);
    expect(result).toMatchObject({ state: 'valid', usable: true });
  });

  it.each([
    ['node16, as an ES module', 'typed.mts', ['--module', 'node16', '--moduleResolution', 'node16']],
    ['node16, as CommonJS', 'typed.cts', ['--module', 'node16', '--moduleResolution', 'node16']],
    ['bundler', 'typed.mts', ['--module', 'esnext', '--moduleResolution', 'bundler']],
  ])('type-checks a TypeScript consumer (%s)', async (_kind, file, flags) => {
    const tsc = await runProgram(
      process.execPath,
      [
        path.join(WORKSPACE_MODULES, 'typescript/bin/tsc'),
        '--noEmit',
        '--strict',
        '--target',
        'es2022',
        '--types',
        'node',
        '--typeRoots',
        path.join(WORKSPACE_MODULES, '@types'),
        ...flags,
        file,
      ],
      { cwd: project },
    );
    expect(tsc.code, tsc.stdout + tsc.stderr).toBe(0);
  });

  it.each([
    ['CommonJS', 'cjs', 'app.cjs'],
    ['ES module', 'esm', 'app.mjs'],
  ] as const)('bundled by esbuild (platform node, %s output), runs with no node_modules and says what it runs without', async (_kind, format, name) => {
    const out = path.join(bareDir(), name);
    const result = await esbuild.build({
      absWorkingDir: project,
      entryPoints: ['activate.mjs'],
      bundle: true,
      platform: 'node',
      format,
      outfile: out,
      minify: true,
      logLevel: 'silent',
    });
    expect(result.errors).toEqual([]);
    expect(result.warnings).toEqual([]);
    const { result: app } = await runApp(process.execPath, out, path.dirname(out));
    expect(app).toMatchObject({ state: 'valid', usable: true, memoryProtection: 'masked' });
    expect(app.warnings).toEqual(expect.arrayContaining([expect.stringMatching(/masked memory: sodium-native is not installed beside the app/)]));
    // Linux x64 reads its hardware from files (no systeminformation needed); elsewhere its absence is said.
    const readsFiles = process.platform === 'linux' && process.arch === 'x64';
    expect(app.warnings.filter((w: string) => /hardware probes unavailable.*systeminformation is not installed/.test(w))).toHaveLength(readsFiles ? 0 : 1);
  });

  it.each([['node'], ['electron-main']] as const)('bundled by webpack 5 (target %s), runs', async (target) => {
    const outDir = bareDir();
    const stats = await new Promise<webpack.Stats>((resolve, reject) =>
      webpack(
        {
          mode: 'production',
          target,
          context: project,
          entry: './activate.mjs',
          output: { path: outDir, filename: 'app.js' },
          resolve: { modules: [path.join(project, 'node_modules')] },
        },
        (err, result) => (err || !result ? reject(err ?? new Error('no stats')) : resolve(result)),
      ),
    );
    expect(stats.hasErrors(), stats.toString('errors-only')).toBe(false);
    expect(stats.hasWarnings(), stats.toString('errors-warnings')).toBe(false);
    const { result } = await runApp(process.execPath, path.join(outDir, 'app.js'), outDir);
    expect(result).toMatchObject({ state: 'valid', usable: true, memoryProtection: 'masked' });
  });
});
