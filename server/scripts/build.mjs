/**
 * Compiles the server to dist/ for plain `node` (tsc, incremental: an unchanged tree rebuilds in a
 * second or two) and copies the files it serves as they are (the portal's browser modules and page).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const STATIC_FILES = ['portal/assets', 'portal/shell.html'];

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
for (const file of STATIC_FILES) {
  const target = path.join(root, 'dist', file);
  fs.rmSync(target, { recursive: true, force: true });
  fs.cpSync(path.join(root, file), target, { recursive: true });
}
