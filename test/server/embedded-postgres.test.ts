import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../server/db/embedded.js';
import {
  cleanUpServer,
  isRunning,
  killSpawnedServers,
  postmasterPid,
  READY_TIMEOUT_MS,
  spawnServer,
  waitForExit,
  waitForReady,
  type ServerProcess,
} from '../support/server-process.js';

// The real server (`server/dist/main.js`) on its embedded PostgreSQL, which it supervises: a
// PostgreSQL that dies under it is restarted, and one that a killed server left running is taken over.

const RECOVERY_TIMEOUT_MS = 60_000;

let dataDir: string;
let url: string;
let server: ServerProcess;

async function start(): Promise<void> {
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  server = spawnServer({ PORT: String(port), LATCHKEY_DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
  await waitForReady(server, url);
}

async function register(): Promise<number> {
  const res = await fetch(`${url}/v1/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `dev-${randomBytes(4).toString('hex')}@example.com`, password: 'correct horse battery', company_name: 'Acme' }),
  });
  return res.status;
}

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-embedded-'));
  await start();
}, READY_TIMEOUT_MS + 10_000);

afterAll(async () => {
  await cleanUpServer(server, dataDir);
  killSpawnedServers();
}, 30_000);

describe('the embedded PostgreSQL, supervised by the server', () => {
  it(
    'is restarted after a kill -9 of its postmaster: /readyz answers 503 with the error body meanwhile, then 200, the server never restarted',
    async () => {
      const crashed = postmasterPid(dataDir)!;
      expect(crashed).toBeGreaterThan(0);
      process.kill(crashed, 'SIGKILL');
      let unavailable: { status: number; body: unknown } | undefined;
      let ready = false;
      for (const deadline = Date.now() + RECOVERY_TIMEOUT_MS; !ready && Date.now() < deadline;) {
        const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5000) }).catch(() => null);
        if (res?.status === 503) unavailable ??= { status: 503, body: await res.json() };
        else if (res?.status === 200 && unavailable) ready = true;
        else await res?.arrayBuffer();
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(unavailable, server.output()).toEqual({
        status: 503,
        body: { detail: 'The database is not reachable', error_code: 'SERVICE_UNAVAILABLE', status_code: 503, request_id: expect.any(String) },
      });
      expect(ready, `/readyz never answered 200 again:\n${server.output()}`).toBe(true);
      expect(server.child.exitCode).toBeNull();
      const restarted = postmasterPid(dataDir)!;
      expect(restarted).not.toBe(crashed);
      expect(isRunning(restarted)).toBe(true);
      expect(server.output()).toMatch(/PostgreSQL exited unexpectedly \(SIGKILL\); restarting it in 1 s/);
      expect(await register()).toBe(201);
    },
    RECOVERY_TIMEOUT_MS + 10_000,
  );

  it(
    'left running by a server killed with SIGKILL, is taken over by the next server on the data directory, which serves',
    async () => {
      const orphan = postmasterPid(dataDir)!;
      server.child.kill('SIGKILL');
      await waitForExit(server);
      expect(isRunning(orphan)).toBe(true);
      await start();
      expect(isRunning(orphan)).toBe(false);
      expect(server.output()).toContain(`PostgreSQL (pid ${orphan}) left running by an earlier server holds ${path.join(dataDir, 'pg')}: stopping it to take the cluster over`);
      expect(server.output()).not.toContain('undefined');
      expect(postmasterPid(dataDir)).not.toBe(orphan);
      expect(await register()).toBe(201);
    },
    READY_TIMEOUT_MS + 10_000,
  );

  it(
    'starts over a stale postmaster.pid whose process is gone, removing it',
    async () => {
      server.child.kill('SIGTERM');
      expect(await waitForExit(server)).toBe(0);
      // A pid that was just in use and is free now: a process that ran and exited.
      const gone = Number(execFileSync(process.execPath, ['-p', 'process.pid'], { encoding: 'utf8' }).trim());
      const pidFile = path.join(dataDir, 'pg', 'postmaster.pid');
      fs.writeFileSync(pidFile, `${gone}\n${path.join(dataDir, 'pg')}\n1700000000\n5432\n/tmp\n127.0.0.1\n0 0\nready\n`, { mode: 0o600 });
      await start();
      expect(server.output()).toContain(`removing the stale ${pidFile}: process ${gone} is gone`);
      expect(await register()).toBe(201);
    },
    READY_TIMEOUT_MS + 10_000,
  );
});
