import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../server/config.js';
import { freePort } from '../../server/db/embedded.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const READY_TIMEOUT_MS = 90_000;
const EXIT_TIMEOUT_MS = 20_000;

describe('configuration errors', () => {
  it.each([
    ['PORT', { PORT: 'eighty' }],
    ['PORT', { PORT: '70000' }],
    ['LATCHKEY_MASTER_KEY', { LATCHKEY_MASTER_KEY: 'dG9vIHNob3J0' }],
    ['LATCHKEY_MAX_JSON_BYTES', { LATCHKEY_MAX_JSON_BYTES: '-1' }],
  ])('name the variable: %s', (name, env) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(name);
  });
});

interface ServerProcess {
  child: ChildProcess;
  /** Everything the process printed, for assertions and failure messages. */
  output(): string;
  /** The exit code, once the process has exited and its output is complete. */
  exited: Promise<number | null>;
}

const spawned: ChildProcess[] = [];
// Whatever a test left behind is killed by its pid.
afterAll(() => {
  for (const child of spawned) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/**
 * Starts the compiled server with plain node, as `npm start` does after building (the test
 * command builds first), with only the variables given (no DATABASE_URL: embedded).
 */
function spawnServer(env: Record<string, string>): ServerProcess {
  const child = spawn(process.execPath, ['server/dist/main.js'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.tmpdir(), HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  spawned.push(child);
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** The exit code; fails the test if the process outlives `EXIT_TIMEOUT_MS`. */
async function waitForExit(server: ServerProcess): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`process still running after ${EXIT_TIMEOUT_MS} ms:\n${server.output()}`)), EXIT_TIMEOUT_MS);
  });
  try {
    return await Promise.race([server.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls /readyz until it answers 200; fails early if the process dies. */
async function waitForReady(server: ServerProcess, url: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (server.child.exitCode !== null) throw new Error(`server exited with ${server.child.exitCode}:\n${server.output()}`);
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) }).catch(() => null);
    if (res?.status === 200) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`server not ready after ${READY_TIMEOUT_MS} ms:\n${server.output()}`);
}

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
    server = spawnServer({ PORT: String(port), LATCHKEY_DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
    await waitForReady(server, url);
  }, READY_TIMEOUT_MS + 10_000);

  // Whatever happened above, leave no server, no PostgreSQL and no directory behind.
  afterAll(async () => {
    if (server && server.child.exitCode === null) {
      server.child.kill('SIGTERM'); // graceful first, so PostgreSQL stops with it
      await waitForExit(server).catch(() => server.child.kill('SIGKILL'));
    }
    if (dataDir && fs.existsSync(postmasterPidFile())) {
      // The server died without stopping its PostgreSQL: PostgreSQL's fast shutdown, by its pid.
      const pid = Number(fs.readFileSync(postmasterPidFile(), 'utf8').split('\n')[0]);
      try {
        if (pid > 0) process.kill(pid, 'SIGINT');
      } catch {
        // already gone: the pid file was stale
      }
    }
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  }, EXIT_TIMEOUT_MS + 10_000);

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

  it('shuts down cleanly on SIGTERM: exit 0, PostgreSQL stopped, lock released', async () => {
    server.child.kill('SIGTERM');
    expect(await waitForExit(server), server.output()).toBe(0);
    expect(fs.existsSync(lockFile())).toBe(false);
    expect(fs.existsSync(postmasterPidFile())).toBe(false);
  });
});
