import fs from 'node:fs';
import path from 'node:path';

/**
 * One server process per data directory: the embedded PostgreSQL cluster and the generated keys in
 * it must never be shared. The lock file holds the owner's pid; a lock whose pid is gone is stale.
 */
export class DataDirLockedError extends Error {}

export function lockDataDir(dataDir: string): () => void {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const lockPath = path.join(dataDir, 'latchkey.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(lockPath, String(process.pid), { flag: 'wx', mode: 0o600 });
      let released = false;
      return () => {
        if (released) return;
        released = true;
        fs.rmSync(lockPath, { force: true });
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(fs.readFileSync(lockPath, 'utf8').trim());
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner)) {
        throw new DataDirLockedError(`data directory ${dataDir} is in use by process ${owner}`);
      }
      fs.rmSync(lockPath, { force: true }); // stale: its owner died without cleaning up
    }
  }
  throw new DataDirLockedError(`could not lock data directory ${dataDir}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
