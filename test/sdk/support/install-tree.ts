import fs from 'node:fs';
import path from 'node:path';

/** Every entry under `dir`: folders by name, files with their mode and bytes, for byte-for-byte comparison. */
export function snapshotTree(dir: string): Record<string, { mode: number; bytes: Buffer } | 'dir'> {
  const tree: Record<string, { mode: number; bytes: Buffer } | 'dir'> = {};
  const walk = (current: string) => {
    for (const entry of fs.readdirSync(current, { withFileTypes: true })) {
      const full = path.join(current, entry.name);
      const relative = path.relative(dir, full);
      if (entry.isDirectory()) {
        tree[relative] = 'dir';
        walk(full);
      } else {
        tree[relative] = { mode: fs.statSync(full).mode, bytes: fs.readFileSync(full) };
      }
    }
  };
  walk(dir);
  return tree;
}

/** Writes `files` (relative path -> content) under `dir`, creating folders; executables get 0o755. */
export function writeTree(dir: string, files: Record<string, string | Buffer>, mode = 0o755): void {
  for (const [relative, content] of Object.entries(files)) {
    const file = path.join(dir, relative);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content, { mode });
  }
}
