import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLicense, randomFingerprint } from '../support/fixtures.js';
import { client, type Call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tenant, type Tenant } from './world.js';

const signingKey = generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');

async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** A second server as a real process (`npm start`'s entry point) on the same database. */
async function startServerProcess(databaseUrl: string): Promise<{ url: string; child: ChildProcess; dataDir: string }> {
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-proc-'));
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      LATCHKEY_DATA_DIR: dataDir,
      LATCHKEY_MASTER_KEY: randomBytes(32).toString('base64'),
      LATCHKEY_SIGNING_KEYS: signingKey,
      LATCHKEY_RATE_LIMIT_MULTIPLIER: '1000',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`server process exited: ${stderr}`);
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) return { url, child, dataDir };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(`server process did not become ready: ${stderr}`);
}

let inProcess: TestServer;
let sibling: TestServer;
let processServer: Awaited<ReturnType<typeof startServerProcess>>;
let t: Tenant;
beforeAll(async () => {
  inProcess = await startTestServer({ env: { LATCHKEY_SIGNING_KEYS: signingKey } });
  sibling = await startTestServer({ database: inProcess.database, env: { LATCHKEY_SIGNING_KEYS: signingKey } });
  processServer = await startServerProcess(inProcess.database.url);
  t = await tenant(inProcess);
});
afterAll(async () => {
  if (processServer) {
    const exited = new Promise((resolve) => processServer.child.once('exit', resolve));
    processServer.child.kill('SIGTERM');
    await exited;
    fs.rmSync(processServer.dataDir, { recursive: true, force: true });
  }
  await sibling?.close();
  await inProcess?.close();
});

describe('concurrent activations', () => {
  it('50 devices at once against device_limit 2, over three servers (one a separate process), give exactly 2 devices', async () => {
    const lic = await createLicense(t.call, t.dev, { app_id: t.app.id, device_limit: 2 });
    const servers: Call[] = [client(inProcess.url), client(sibling.url), client(processServer.url)];
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        servers[i % servers.length]!('POST', '/v1/licenses/activate', {
          body: { license_key: lic.license_key, device_fingerprint: randomFingerprint(), build_id: null },
        }),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(2);
    const refused = results.filter((r) => r.status !== 200);
    expect(refused).toHaveLength(48);
    expect(refused.every((r) => r.status === 403 && r.body.error_code === 'DEVICE_LIMIT_EXCEEDED')).toBe(true);

    const license = await t.call('GET', `/v1/licenses/${lic.license_id}`, { apiKey: t.dev.apiKey });
    expect(license.body.devices).toHaveLength(2);
  });

  it('the same device activating at once on every server takes one slot', async () => {
    const lic = await createLicense(t.call, t.dev, { app_id: t.app.id, device_limit: 1 });
    const device = randomFingerprint();
    const servers: Call[] = [client(inProcess.url), client(sibling.url), client(processServer.url)];
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => servers[i % servers.length]!('POST', '/v1/licenses/activate', { body: { license_key: lic.license_key, device_fingerprint: device } })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(12).fill(200));
    const license = await t.call('GET', `/v1/licenses/${lic.license_id}`, { apiKey: t.dev.apiKey });
    expect(license.body.devices).toHaveLength(1);
  });

  it.each([1, 2])('a burst of one new device (device_limit %i) activates every time and takes one slot', async (deviceLimit) => {
    const lic = await createLicense(t.call, t.dev, { app_id: t.app.id, device_limit: deviceLimit });
    const device = randomFingerprint();
    const call = client(inProcess.url);
    const activate = (fingerprint: string) => call('POST', '/v1/licenses/activate', { body: { license_key: lic.license_key, device_fingerprint: fingerprint, build_id: null } });
    const results = await Promise.all(Array.from({ length: 30 }, () => activate(device)));
    expect(results.map((r) => r.status)).toEqual(Array(30).fill(200));
    const license = await t.call('GET', `/v1/licenses/${lic.license_id}`, { apiKey: t.dev.apiKey });
    expect(license.body.devices).toHaveLength(1);
    // The slot count stayed exact: exactly the remaining slots are still free.
    const others = await Promise.all(Array.from({ length: 3 }, () => activate(randomFingerprint())));
    expect(others.filter((r) => r.status === 200)).toHaveLength(deviceLimit - 1);
  });
});
