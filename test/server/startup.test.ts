import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../server/config.js';
import { freePort } from '../../server/db/embedded.js';
import { eventually } from '../support/wait.js';
import { cleanUpServer, EXIT_TIMEOUT_MS, killSpawnedServers, READY_TIMEOUT_MS, spawnServer, waitForExit, waitForReady, type ServerProcess } from '../support/server-process.js';

afterAll(killSpawnedServers);

describe('configuration errors', () => {
  it.each([
    ['PORT', { PORT: 'eighty' }],
    ['PORT', { PORT: '70000' }],
    ['LATCHKEY_MASTER_KEY', { LATCHKEY_MASTER_KEY: 'dG9vIHNob3J0' }],
    ['LATCHKEY_MAX_JSON_BYTES', { LATCHKEY_MAX_JSON_BYTES: '-1' }],
    ['LATCHKEY_STORAGE', { LATCHKEY_STORAGE: 'ftp' }],
    ['LATCHKEY_S3_BUCKET', { LATCHKEY_STORAGE: 's3' }],
    ['LATCHKEY_S3_ENDPOINT', { LATCHKEY_STORAGE: 's3', LATCHKEY_S3_BUCKET: 'builds', LATCHKEY_S3_ENDPOINT: 'not a url' }],
    // A multipart upload of 5 MiB parts stops at 10,000 of them.
    ['LATCHKEY_MAX_ARTIFACT_BYTES', { LATCHKEY_STORAGE: 's3', LATCHKEY_S3_BUCKET: 'builds', LATCHKEY_MAX_ARTIFACT_BYTES: String(10_000 * 5 * 1024 ** 2 + 1) }],
  ])('name the variable: %s', (name, env) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(name);
  });
});

describe('configuration errors stop the real process', () => {
  it('exits non-zero with a message naming the variable', async () => {
    const server = spawnServer({ PORT: 'eighty', LATCHKEY_DATA_DIR: path.join(os.tmpdir(), 'latchkey-never-created') });
    expect(await waitForExit(server)).not.toBe(0);
    expect(server.output()).toContain('PORT');
  });
});

describe('the real server on its embedded PostgreSQL', () => {
  let dataDir: string;
  let url: string;
  let server: ServerProcess;
  const lockFile = () => path.join(dataDir, 'latchkey.lock');
  const postmasterPidFile = () => path.join(dataDir, 'pg', 'postmaster.pid');

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-startup-'));
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    server = spawnServer({ PORT: String(port), LATCHKEY_DATA_DIR: dataDir, LOG_LEVEL: 'info' });
    await waitForReady(server, url);
  }, READY_TIMEOUT_MS + 10_000);

  // Whatever happened above, leave no server, no PostgreSQL and no directory behind.
  afterAll(() => cleanUpServer(server, dataDir), EXIT_TIMEOUT_MS + 10_000);

  it('answers /readyz with 200', async () => {
    const res = await fetch(`${url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ready' });
  });

  it('serves the API: a developer can register', async () => {
    const res = await fetch(`${url}/v1/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `dev-${randomBytes(4).toString('hex')}@example.com`, password: 'correct horse battery', company_name: 'Acme' }),
    });
    expect(res.status).toBe(201);
  });

  it('refuses a second process on the same data directory', async () => {
    const owner = fs.readFileSync(lockFile(), 'utf8').trim();
    expect(owner).toBe(String(server.child.pid));
    const second = spawnServer({ PORT: String(await freePort()), LATCHKEY_DATA_DIR: dataDir });
    expect(await waitForExit(second)).not.toBe(0);
    expect(second.output()).toContain(`data directory ${dataDir} is in use by process ${owner}`);
    // The first one is untouched.
    expect(fs.readFileSync(lockFile(), 'utf8').trim()).toBe(owner);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
  });

  it('shuts down cleanly on SIGTERM: the request in flight answered, its kept-alive connection closed, exit 0, PostgreSQL stopped, lock released', async () => {
    // A registration whose body is still coming when the signal arrives, on a kept-alive connection:
    // answered, then closed, rather than kept for the 65 s keep-alive (past waitForExit's patience).
    const agent = new http.Agent({ keepAlive: true });
    const body = JSON.stringify({ email: `dev-${randomBytes(4).toString('hex')}@example.com`, password: 'correct horse battery', company_name: 'Acme' });
    const request = http.request(`${url}/v1/auth/register`, {
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    const answered = new Promise<number>((resolve, reject) => {
      request.on('response', (res) => res.resume().on('end', () => resolve(res.statusCode!)));
      request.on('error', reject);
    });
    request.write(body.slice(0, 10));
    await new Promise((resolve) => setTimeout(resolve, 300));
    server.child.kill('SIGTERM');
    await eventually('the server to start shutting down', async () => server.output().includes('shutting down'));
    request.end(body.slice(10));
    expect(await answered).toBe(201);
    expect(await waitForExit(server), server.output()).toBe(0);
    agent.destroy();
    expect(fs.existsSync(lockFile())).toBe(false);
    expect(fs.existsSync(postmasterPidFile())).toBe(false);
  });
});
