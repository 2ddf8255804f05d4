import fs from 'node:fs';
import path from 'node:path';

/** The embedded cluster's directory: PostgreSQL keeps it 0700 itself, and as root it belongs to another user. */
const MANAGED_BY_POSTGRES = 'pg';

/**
 * Everything the server writes under its data directory (keys, the cluster's password, stored
 * artifacts and protected packages, scratch space, emails) is its own user's alone: files 0600,
 * directories 0700, given when they are created. At start this tightens what an earlier version
 * left readable, cheaply: the directory and its entries, since a directory closed to others closes
 * everything under it. Answers the entries it could not change (not the server's own, say).
 */
export function tightenDataDir(dataDir: string): string[] {
  const refused: string[] = [];
  const chmod = (file: string, mode: number) => {
    try {
      fs.chmodSync(file, mode);
    } catch {
      refused.push(file);
    }
  };
  chmod(dataDir, 0o700);
  for (const entry of fs.readdirSync(dataDir, { withFileTypes: true })) {
    if (entry.name === MANAGED_BY_POSTGRES) continue;
    if (entry.isDirectory()) chmod(path.join(dataDir, entry.name), 0o700);
    else if (entry.isFile()) chmod(path.join(dataDir, entry.name), 0o600);
  }
  return refused;
}
