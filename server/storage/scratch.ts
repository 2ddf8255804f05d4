import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** Where scratch space lives under the data directory. */
export const SCRATCH_DIR = 'scratch';

/**
 * Local working space for what needs files (copying an artifact out of storage, unpacking,
 * scanning, bundling): `<data dir>/scratch`, private like the rest of the data directory (0700),
 * rather than the system's temporary directory, which other users share and nothing sweeps. Each
 * piece of work gets a fresh directory, removed when it ends however it ends; a crash in between
 * leaves it for `sweepScratch` at the next start.
 */
export function createScratchSpace(dataDir: string) {
  const root = path.join(dataDir, SCRATCH_DIR);
  return {
    async withWorkDir<T>(prefix: string, work: (dir: string) => Promise<T>): Promise<T> {
      await fs.mkdir(root, { recursive: true, mode: 0o700 });
      const dir = await fs.mkdtemp(path.join(root, `${prefix}-`));
      try {
        return await work(dir);
      } finally {
        await fs.rm(dir, { recursive: true, force: true });
      }
    },
  };
}

export type ScratchSpace = ReturnType<typeof createScratchSpace>;

/** Work directories earlier versions made in the system's temporary directory, by name. */
const LEGACY_TEMP_DIR = /^latchkey-(bld_[A-Za-z0-9]+|package)-/;
const DAY_MS = 86_400_000;

/**
 * At start, while the data directory's lock is held and before any job runs, so nothing in it is
 * in use: removes what crashed work left in the scratch space, and work directories that earlier
 * versions left in the system's temporary directory (only those over a day old: another server on
 * this machine may still run such a version). Answers how many directories went.
 */
export async function sweepScratch(dataDir: string): Promise<number> {
  const root = path.join(dataDir, SCRATCH_DIR);
  const own = await fs.readdir(root).catch(() => [] as string[]);
  for (const name of own) await fs.rm(path.join(root, name), { recursive: true, force: true });
  const temp = os.tmpdir();
  let legacy = 0;
  for (const name of await fs.readdir(temp).catch(() => [] as string[])) {
    if (!LEGACY_TEMP_DIR.test(name)) continue;
    const stat = await fs.lstat(path.join(temp, name)).catch(() => undefined);
    if (!stat?.isDirectory() || stat.uid !== os.userInfo().uid || stat.mtimeMs > Date.now() - DAY_MS) continue;
    await fs.rm(path.join(temp, name), { recursive: true, force: true });
    legacy++;
  }
  return own.length + legacy;
}
