import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { nodeRuntime } from '../../native/runtimes/node-runtimes.js';
import { createApp, createLicense, registerDeveloper, setPlan } from '../support/fixtures.js';
import { client } from '../support/http.js';
import type { TestServer } from '../support/server.js';

const run = promisify(execFile);
export const ROOT = path.resolve(import.meta.dirname, '../..');
/** Tools the test drives (tsc, esbuild, webpack) come from the workspace; the app under test never sees them. */
export const WORKSPACE_MODULES = path.join(ROOT, 'node_modules');

/** `npm pack` of a workspace into `dest`: the tarball a developer would install from the registry. */
export async function packWorkspace(workspace: string, dest: string): Promise<string> {
  const { stdout } = await run('npm', ['pack', '--json', '--workspace', workspace, '--pack-destination', dest], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
  const [packed] = JSON.parse(stdout) as { filename: string }[];
  return path.join(dest, packed!.filename);
}

/**
 * A fresh project outside the repository with `tarballs` installed as a user installs them. Their
 * dependencies come from npm's cache when it has them (CI's `npm ci` filled it), else the registry.
 * `npmFlags` such as `--os=win32 --cpu=x64` install for another platform (its optional packages).
 */
export async function freshProject(name: string, tarballs: string[], manifest: Record<string, unknown> = {}, npmFlags: string[] = []): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `latchkey-${name}-`));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true, ...manifest }));
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...npmFlags, ...tarballs], { cwd: dir, maxBuffer: 16 * 1024 * 1024 });
  return dir;
}

export interface ProgramRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end (bounded by `timeoutMs`); never throws. */
export async function runProgram(file: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<ProgramRun> {
  try {
    const { stdout, stderr } = await run(file, args, {
      cwd: options.cwd,
      env: options.env ?? { PATH: process.env.PATH },
      timeout: options.timeoutMs ?? 60_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number | string; stdout?: string; stderr?: string; message: string };
    return { code: typeof e.code === 'number' ? e.code : null, stdout: e.stdout ?? '', stderr: e.stderr ?? e.message };
  }
}

/** The pinned Node 22 runtime for this machine (downloaded once into test/.artifacts). */
export function node22(): Promise<string> {
  return nodeRuntime('linux-x64', path.join(ROOT, 'test/.artifacts/node-runtimes'));
}

/**
 * What the packaging tests' app (test/fixtures/sdk-consumer) reads from its environment: a Pro
 * developer's app on `server` and a license of it for 10 devices, the server's public keys.
 */
export async function licensedAppEnv(server: TestServer): Promise<Record<string, string>> {
  const call = client(server.url);
  const dev = await registerDeveloper(call);
  await setPlan(call, server.adminToken, dev.id, 'pro');
  const app = await createApp(call, dev);
  const license = await createLicense(call, dev, { app_id: app.id, email: 'buyer@example.com', device_limit: 10 });
  const keys = await call('GET', '/v1/public/keys');
  return {
    SERVER_URL: server.url,
    APP_ID: app.id,
    FINGERPRINT_SALT: app.fingerprint_salt,
    PUBLIC_KEYS: JSON.stringify(keys.body),
    LICENSE_KEY: license.license_key,
  };
}
