/**
 * Compiles the server to dist/ for plain `node` (tsc, incremental: an unchanged tree rebuilds in a
 * second or two), bundles the portal's browser code (server/portal/client, TypeScript) with esbuild
 * into portal/assets/portal.js, and copies the files the server serves as they are.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const STATIC_FILES = ['portal/assets', 'portal/shell.html'];

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
// Written beside the portal's other assets (git-ignored), where the server finds it run from source or from dist.
await esbuild.build({
  entryPoints: [path.join(root, 'portal/client/app.ts')],
  outfile: path.join(root, 'portal/assets/portal.js'),
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  sourcemap: 'linked',
  legalComments: 'eof',
  logLevel: 'warning',
});
for (const file of STATIC_FILES) {
  const target = path.join(root, 'dist', file);
  fs.rmSync(target, { recursive: true, force: true });
  fs.cpSync(path.join(root, file), target, { recursive: true });
}
