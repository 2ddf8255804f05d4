/**
 * One install at a time per app and user: a lock file in the updater's folder (which is per app and
 * per user), created exclusively, naming its owner (pid, host) and a random nonce. Instances of the
 * app that start together take turns: the first downloads and installs, the others wait and then
 * find the update installed, instead of writing the same files at the same time.
 *
 * A lock is stale when its owner is gone: the pid no longer runs on this host, or the file was not
 * refreshed for `STALE_AFTER_MS` (an owner on another host sharing the home folder, a reused pid).
 * The owner refreshes it every `HEARTBEAT_MS` while it holds it. A stale lock is taken over by
 * renaming it to a name of one's own first: of two instances that find it stale, one rename wins,
 * and a fresh lock moved by the loser's late rename is put back.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export const LOCK_FILE_NAME = 'install.lock';
export const STALE_AFTER_MS = 2 * 60_000;
const HEARTBEAT_MS = 20_000;

interface LockOwner {
  pid: number;
  host: string;
  nonce: string;
}

export interface InstallLock {
  /** Removes the lock file if it is still this one's; safe to call more than once. */
  release(): Promise<void>;
}

export interface LockWait {
  /** Attempts after the first, `pollMs` apart; 0 answers at once. */
  retries: number;
  pollMs: number;
}

/** Unref'd: waiting for another instance's install never keeps this app running (the other installs). */
const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/** Takes the lock in `dir`, waiting as `wait` allows; undefined when another live instance holds it throughout. */
export async function acquireInstallLock(dir: string, wait: LockWait): Promise<InstallLock | undefined> {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, LOCK_FILE_NAME);
  const owner: LockOwner = { pid: process.pid, host: os.hostname(), nonce: randomBytes(12).toString('hex') };
  for (let attempt = 0; ; attempt++) {
    if (await tryCreate(file, owner)) return heldLock(file, owner);
    if (await takeOverIfStale(file)) continue;
    if (attempt >= wait.retries) return undefined;
    await pause(wait.pollMs);
  }
}

async function tryCreate(file: string, owner: LockOwner): Promise<boolean> {
  try {
    await fs.writeFile(file, JSON.stringify(owner), { flag: 'wx', mode: 0o600 });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

function heldLock(file: string, owner: LockOwner): InstallLock {
  const now = () => new Date();
  // Unref'd: a held lock never keeps the app running.
  const heartbeat = setInterval(() => void fs.utimes(file, now(), now()).catch(() => undefined), HEARTBEAT_MS).unref();
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      clearInterval(heartbeat);
      if ((await readOwner(file))?.nonce === owner.nonce) await fs.rm(file, { force: true });
    },
  };
}

async function readOwner(file: string): Promise<LockOwner | undefined> {
  try {
    const parsed = JSON.parse(await fs.readFile(file, 'utf8')) as Partial<LockOwner>;
    return typeof parsed.pid === 'number' && typeof parsed.host === 'string' && typeof parsed.nonce === 'string' ? (parsed as LockOwner) : undefined;
  } catch {
    return undefined;
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: a process of another user has that pid; it is running.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function isStale(file: string): Promise<boolean> {
  const stat = await fs.stat(file).catch(() => undefined);
  // Gone meanwhile: not stale, simply free; the next attempt creates it.
  if (!stat) return false;
  if (Date.now() - stat.mtimeMs > STALE_AFTER_MS) return true;
  const owner = await readOwner(file);
  // Unreadable: an owner still writing it, or a crash mid-write; the age above settles which.
  if (!owner) return false;
  return owner.host === os.hostname() && !isRunning(owner.pid);
}

/** Removes a stale lock; true when the caller should try to create it again. */
async function takeOverIfStale(file: string): Promise<boolean> {
  if (!(await isStale(file))) return false;
  const aside = `${file}.stale.${process.pid}.${randomBytes(6).toString('hex')}`;
  try {
    await fs.rename(file, aside);
  } catch {
    // Another instance took it over first.
    return true;
  }
  // Between the look and the rename another instance may have taken it over and made a fresh
  // one, which the rename moved: put that one back (link fails if yet another exists by now).
  if (!(await isStale(aside))) await fs.link(aside, file).catch(() => undefined);
  await fs.rm(aside, { force: true });
  return true;
}
