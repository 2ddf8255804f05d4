import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect } from 'vitest';
import { createApp, createLicense, registerDeveloper, setPlan, type TestDeveloper } from '../support/fixtures.js';
import { client, type ApiResponse, type Call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

export interface Owner {
  server: TestServer;
  call: Call;
  dev: TestDeveloper;
  app: { id: string; fingerprint_salt: string } & Record<string, unknown>;
}

/** What a file of protection tests works with: a server, a Pro developer's app, a license of it, a scratch folder. */
export interface ProtectionWorld {
  server: TestServer;
  o: Owner;
  licenseKey: string;
  work: string;
  /** A fresh end-user home (no cached license) for a run. */
  home(): string;
}

/** Started at the file's top level; everything is removed after its tests. */
export async function protectionWorld(name: string, appBody: Record<string, unknown> = {}): Promise<ProtectionWorld> {
  const server = await startTestServer();
  const o = await owner(server, appBody);
  await setPlan(o.call, server.adminToken, o.dev.id, 'pro');
  const licenseKey = (await createLicense(o.call, o.dev, { app_id: o.app.id, device_limit: 10 })).license_key;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), `latchkey-${name}-`));
  afterAll(async () => {
    await server.close();
    fs.rmSync(work, { recursive: true, force: true });
  });
  return { server, o, licenseKey, work, home: () => fs.mkdtempSync(path.join(work, 'home-')) };
}

/** A developer with one app targeting Linux and Windows (and `appBody` on top). */
export async function owner(server: TestServer, appBody: Record<string, unknown> = {}): Promise<Owner> {
  const call = client(server.url);
  const dev = await registerDeveloper(call);
  const app = await createApp(call, dev, appBody);
  return { server, call, dev, app };
}

export interface UploadOptions {
  /** The artifact's bytes and its file name; omit to send no file part. */
  file?: { data: Uint8Array<ArrayBuffer> | string; name: string };
  fields?: Record<string, string>;
  fileField?: string;
  method?: string;
  path?: string;
  token?: string;
}

/** A multipart/form-data request as a browser or curl sends it. */
export async function upload(o: Owner, opts: UploadOptions): Promise<ApiResponse> {
  const form = new FormData();
  for (const [name, value] of Object.entries(opts.fields ?? {})) form.append(name, value);
  if (opts.file) form.append(opts.fileField ?? 'artifact', new Blob([opts.file.data]), opts.file.name);
  const res = await fetch(`${o.server.url}${opts.path ?? `/v1/apps/${o.app.id}/builds`}`, {
    method: opts.method ?? 'POST',
    headers: { authorization: `Bearer ${opts.token ?? o.dev.accessToken}` },
    body: form,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
}

/** Uploads and expects 201 QUEUED. */
export async function uploadBuild(o: Owner, file: { data: Uint8Array<ArrayBuffer> | string; name: string }, fields: Record<string, string> = {}) {
  const res = await upload(o, { file, fields: { platform: 'cross_platform', ...fields } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body.status).toBe('QUEUED');
  return res.body as { id: string } & Record<string, any>;
}

/** Polls the build until its job is done with it: at most 1,500 polls (about 150 s past the requests' own time). */
export async function settled(o: Owner, buildId: string): Promise<Record<string, any>> {
  let last: Record<string, any> = {};
  for (let poll = 0; poll < 1_500; poll++) {
    const res = await o.call('GET', `/v1/apps/${o.app.id}/builds/${buildId}`, { token: o.dev.accessToken });
    expect(res.status).toBe(200);
    last = res.body;
    if (last.status === 'READY' || last.status === 'FAILED') return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`build ${buildId} still ${last.status} after 1,500 polls`);
}

/** Every stored object, as paths relative to the storage root (staging included). */
export function storedFiles(server: TestServer): string[] {
  const root = path.join(server.dataDir, 'storage');
  if (!fs.existsSync(root)) return [];
  return (fs.readdirSync(root, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((d) => d.isFile())
    .map((d) => path.relative(root, path.join(d.parentPath, d.name)))
    .sort();
}

/** Stored objects of one build. */
export const filesOf = (server: TestServer, buildId: string) => storedFiles(server).filter((f) => f.includes(`/builds/${buildId}/`));

/** Downloads a READY build through its signed link into `dir`; answers the file's path. */
export async function downloadPackage(o: Owner, build: { id: string; package_name: string }, dir: string): Promise<string> {
  const link = await o.call('GET', `/v1/apps/${o.app.id}/builds/${build.id}/download`, { token: o.dev.accessToken });
  expect(link.status).toBe(200);
  const res = await fetch(link.body.download_url);
  expect(res.status).toBe(200);
  const file = path.join(dir, build.package_name);
  fs.writeFileSync(file, Buffer.from(await res.arrayBuffer()), { mode: 0o755 });
  return file;
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a protected app (a bundle under Node, or an executable) as an end user would, with its own license cache. */
export function runProtected(file: string, options: { stdin?: string; env?: Record<string, string>; home: string; args?: string[] }): Promise<Run> {
  const command = [...(file.endsWith('.mjs') ? [process.execPath, file] : [file]), ...(options.args ?? [])];
  const child = spawn(command[0]!, command.slice(1), {
    env: { PATH: process.env.PATH ?? '', HOME: options.home, XDG_DATA_HOME: path.join(options.home, 'data'), ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(options.stdin ?? '');
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}
