/**
 * The SDK on Windows as an app developer ships it: `npm pack`, installed for win32-x64 into a fresh
 * project (`--os=win32 --cpu=x64`, so npm picks koffi's Windows build), run by the pinned Node 22 for
 * Windows under wine64 against a real server. Wine has no PowerShell, so a cache bound to DPAPI proves
 * the in-process way (koffi calling crypt32.dll): the secret is protected at activation, unprotected
 * at the next start with the server unreachable, and without the blob the cache does not open.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeRuntime } from '../../native/runtimes/node-runtimes.js';
import { NODE_RUNTIMES_DIR, startTestServer, type TestServer } from '../support/server.js';
import { underWine, wine64, windowsPath, winePrefix } from '../support/wine.js';
import { freshProject, licensedAppEnv, packWorkspace, ROOT } from './support.js';

/** The packaging test's app, as its README shows it: check, activate when the cache does not open, print the status as JSON. */
const APP = path.join(ROOT, 'test/fixtures/sdk-consumer/activate.mjs');

let server: TestServer;
let work: string;
let project: string;
let nodeExe: string;
let wineEnv: Record<string, string>;
let appEnv: Record<string, string>;

beforeAll(async () => {
  if (!wine64) return;
  server = await startTestServer();
  appEnv = await licensedAppEnv(server);
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-windows-sdk-'));
  const tarball = await packWorkspace('runtime-sdk', work);
  [project, nodeExe, wineEnv] = await Promise.all([
    freshProject('sdk-windows', [tarball], {}, ['--os=win32', '--cpu=x64']),
    nodeRuntime('win-x64', NODE_RUNTIMES_DIR),
    winePrefix(work, fs.mkdtempSync(path.join(work, 'home-'))),
  ]);
  fs.copyFileSync(APP, path.join(project, 'activate.mjs'));
}, 600_000);
afterAll(async () => {
  await server?.close();
  if (work) fs.rmSync(work, { recursive: true, force: true });
  if (project) fs.rmSync(project, { recursive: true, force: true });
});

/** One start of the app under wine with its cache in `cacheDir`. */
function start(cacheDir: string, env: Record<string, string> = {}) {
  return underWine(nodeExe, { ...wineEnv, ...appEnv, CACHE_DIR: windowsPath(cacheDir), ...env }, [windowsPath(path.join(project, 'activate.mjs'))], work);
}

/** The status line a start that succeeded printed. */
function statusOf(run: { code: number | null; stdout: string; stderr: string }) {
  expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
  return JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { state: string; usable: boolean };
}

describe('the SDK on Windows (win32-x64 under wine64)', () => {
  it.skipIf(!wine64)(
    'binds its cache to DPAPI called in the process: activation protects the secret, the next start opens offline, no blob no cache',
    { timeout: 300_000 },
    async () => {
      expect(fs.existsSync(path.join(project, 'node_modules/@koromix/koffi-win32-x64'))).toBe(true);
      const cacheDir = fs.mkdtempSync(path.join(work, 'cache-'));
      expect(statusOf(await start(cacheDir))).toMatchObject({ state: 'valid', usable: true });
      const envelope = JSON.parse(fs.readFileSync(path.join(cacheDir, 'license.cache'), 'utf8')) as { binding?: unknown };
      expect(envelope.binding).toEqual({ kind: 'os-store', store: 'dpapi' });
      // The blob DPAPI made, as base64 text; the secret itself is nowhere in the cache's folder.
      const blob = Buffer.from(fs.readFileSync(path.join(cacheDir, 'license.key'), 'utf8'), 'base64');
      expect(blob.length).toBeGreaterThan(100);

      // The server unreachable: only the cache can make this start licensed (an activation would fail OFFLINE).
      const offline = { SERVER_URL: 'http://127.0.0.1:9' };
      expect(statusOf(await start(cacheDir, offline))).toMatchObject({ state: 'valid', usable: true });

      // Without the blob (another Windows user, a copied folder) the secret is gone and so is the
      // license: the app has to activate again, which it cannot offline.
      fs.rmSync(path.join(cacheDir, 'license.key'));
      const locked = await start(cacheDir, offline);
      expect(locked.code).toBe(1);
      expect(locked.stderr).toContain('OFFLINE');
    },
  );
  if (!wine64) it.skip('the SDK on Windows under wine64: wine64 is not installed (apt-get install -y wine64)', () => {});
});
