import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');
export const READY_TIMEOUT_MS = 90_000;
export const EXIT_TIMEOUT_MS = 20_000;

/** The compiled server (`server/dist/main.js`) in a process of its own, as `npm start` runs it. */
export interface ServerProcess {
  child: ChildProcess;
  /** Everything the process printed, for assertions and failure messages. */
  output(): string;
  /** The exit code, once the process has exited and its output is complete. */
  exited: Promise<number | null>;
}

const spawned: ChildProcess[] = [];

/** Whatever a test file left running is killed by its pid (call from `afterAll`). */
export function killSpawnedServers(): void {
  for (const child of spawned) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/**
 * Starts the compiled server with plain node, as `npm start` does after building (the test
 * command builds first), with only the variables given (no DATABASE_URL: embedded).
 */
export function spawnServer(env: Record<string, string>): ServerProcess {
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
export async function waitForExit(server: ServerProcess): Promise<number | null> {
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
export async function waitForReady(server: ServerProcess, url: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (server.child.exitCode !== null) throw new Error(`server exited with ${server.child.exitCode}:\n${server.output()}`);
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) }).catch(() => null);
    if (res?.status === 200) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`server not ready after ${READY_TIMEOUT_MS} ms:\n${server.output()}`);
}

/** The pid of the embedded PostgreSQL of a data directory, from its lock file; null when there is none. */
export function postmasterPid(dataDir: string): number | null {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n', 1)[0]);
    return pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** Whether a process runs (a zombie does not count: it is only waiting for its parent). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return true;
  }
}

/**
 * Leaves no server, PostgreSQL or directory behind: SIGTERM first (PostgreSQL stops with the
 * server), then a PostgreSQL the server did not stop is sent its fast shutdown, by its pid.
 */
export async function cleanUpServer(server: ServerProcess | undefined, dataDir: string | undefined): Promise<void> {
  if (server && server.child.exitCode === null && server.child.signalCode === null) {
    server.child.kill('SIGTERM');
    await waitForExit(server).catch(() => server.child.kill('SIGKILL'));
  }
  if (!dataDir) return;
  const pid = postmasterPid(dataDir);
  if (pid && isRunning(pid)) {
    process.kill(pid, 'SIGINT');
    for (let i = 0; i < 100 && isRunning(pid); i++) await new Promise((r) => setTimeout(r, 100));
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
}
