/**
 * Compiles the server to dist/ for plain `node` (tsc, incremental: an unchanged tree rebuilds in a
 * second or two), bundles the portal's browser code (server/portal/client, TypeScript) with esbuild
 * into portal/assets/portal.js (with uplot.css, the stylesheet of its chart library), and copies the
 * files the server serves as they are.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const STATIC_FILES = ['portal/assets', 'portal/shell.html'];

/**
 * Keeps the license of every package bundled into the portal: its LICENSE file goes in front of
 * the first of its files loaded, as a legal comment, which esbuild gathers at the end of the output.
 */
const bundledLicenses = {
  name: 'bundled-licenses',
  setup(build) {
    const licensed = new Set();
    build.onLoad({ filter: /[\\/]node_modules[\\/].*\.(m?js|css)$/ }, async (args) => {
      const packageDir = /^(.*[\\/]node_modules[\\/](@[^\\/]+[\\/])?[^\\/]+)/.exec(args.path)[1];
      const loader = args.path.endsWith('.css') ? 'css' : 'js';
      let contents = await fs.promises.readFile(args.path, 'utf8');
      const license = ['LICENSE', 'LICENSE.md', 'LICENSE.txt'].map((name) => path.join(packageDir, name)).find((file) => fs.existsSync(file));
      // Once per package and output: its script goes to portal.js, its stylesheet to a .css of its own.
      if (license && !licensed.has(`${loader} ${packageDir}`)) {
        licensed.add(`${loader} ${packageDir}`);
        contents = `/*! ${path.basename(packageDir)}\n${fs.readFileSync(license, 'utf8').replaceAll('*/', '* /')}*/\n${contents}`;
      }
      return { contents, loader };
    });
  },
};

const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
// Written beside the portal's other assets (git-ignored), where the server finds them run from
// source or from dist: the script, and the stylesheet of its chart library.
await esbuild.build({
  entryPoints: [
    { in: path.join(root, 'portal/client/app.ts'), out: 'portal' },
    { in: require.resolve('uplot/dist/uPlot.min.css'), out: 'uplot' },
  ],
  outdir: path.join(root, 'portal/assets'),
  plugins: [bundledLicenses],
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
