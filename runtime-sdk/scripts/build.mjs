/**
 * Builds what app developers install: ES module and CommonJS entry points plus type declarations.
 *
 * - dist/esm: one esbuild bundle per public entry, shared code split into chunks, so an app that
 *   imports two entries loads one copy of each module (one `LicenseError` class, one vault).
 * - dist/cjs: esbuild cannot split CommonJS, so every entry is one bundle of a single module that
 *   holds all entries (sdk.cjs), and each public entry re-exports its part: again one copy.
 * - Declarations come from tsc, written twice: `.d.ts` beside the ES modules and `.d.cts` (with
 *   `.cjs` specifiers) beside the CommonJS ones, so TypeScript reads each in the right module format.
 *
 * Dependencies stay external: an app's bundler or Node resolves them from the app's node_modules.
 * zod is the exception, a devDependency built in (BUNDLED): `zod/mini` loads 97 ES modules, and
 * Node's loader took about 100 ms to load them in a fresh process, most of a cold `import` of the
 * SDK (`npm run bench -- sdk-package`). Bundled, the SDK carries only the `zod/mini` checks it
 * uses, as one module; its licence goes with it (THIRD_PARTY_NOTICES), and the build refuses any
 * other package built in without one.
 * Everything is written to dist.next and swapped in at the end, so a build running beside the tests
 * never leaves them without dist/, and a failed build leaves the last good one.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist.next');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));

/** Public entry: its subpath in `exports` and its source module. */
const ENTRIES = [
  { name: 'index', source: 'index.ts' },
  { name: 'protocol', source: 'protocol.ts' },
  { name: 'updates', source: 'updates/index.ts' },
  { name: 'engine', source: 'engine/index.ts' },
  { name: 'engine-integrity', source: 'engine/integrity.ts' },
];

/**
 * The packages built into dist: devDependencies (not external, and an install does not fetch
 * them), whose licences ship in THIRD_PARTY_NOTICES.
 */
const BUNDLED = ['zod'];
const THIRD_PARTY_NOTICES = 'THIRD_PARTY_NOTICES';

const shared = {
  bundle: true,
  platform: 'node',
  target: 'node20.19',
  external: [...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.optionalDependencies ?? {})],
  legalComments: 'none',
  logLevel: 'warning',
  absWorkingDir: root,
  metafile: true,
};

fs.rmSync(dist, { recursive: true, force: true });

const esm = await esbuild.build({
  ...shared,
  entryPoints: Object.fromEntries(ENTRIES.map((e) => [e.name, e.source])),
  outdir: path.join(dist, 'esm'),
  format: 'esm',
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
});

// One CommonJS module with every entry as a namespace; `import.meta.url` becomes this file's URL.
const cjs = await esbuild.build({
  ...shared,
  stdin: {
    contents: ENTRIES.map((e) => `export * as ${camel(e.name)} from './${e.source}';`).join('\n'),
    resolveDir: root,
    sourcefile: 'sdk.ts',
    loader: 'ts',
  },
  outfile: path.join(dist, 'cjs', 'sdk.cjs'),
  format: 'cjs',
  define: { 'import.meta.url': '__latchkeyModuleUrl' },
  banner: { js: "const __latchkeyModuleUrl = require('node:url').pathToFileURL(__filename).href;" },
});
for (const entry of ENTRIES) {
  fs.writeFileSync(path.join(dist, 'cjs', `${entry.name}.cjs`), `'use strict';\nmodule.exports = require('./sdk.cjs').${camel(entry.name)};\n`);
}

// Declarations, then their CommonJS twins.
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json'), '--outDir', path.join(dist, 'types')], { stdio: 'inherit' });
const types = path.join(dist, 'types');
for (const file of fs.readdirSync(types, { recursive: true })) {
  if (!file.endsWith('.d.ts')) continue;
  const text = fs.readFileSync(path.join(types, file), 'utf8');
  copy(path.join(dist, 'esm', file), text);
  copy(path.join(dist, 'cjs', file.replace(/\.d\.ts$/, '.d.cts')), text.replace(/(from |import\()(['"])(\.{1,2}\/[^'"]+)\.js\2/g, '$1$2$3.cjs$2'));
}
fs.rmSync(types, { recursive: true, force: true });
// The public entries' declarations under the entries' own names.
for (const entry of ENTRIES) {
  const module = entry.source.replace(/\.ts$/, '');
  if (module === entry.name) continue;
  copy(path.join(dist, 'esm', `${entry.name}.d.ts`), `export * from './${module}.js';\n`);
  copy(path.join(dist, 'cjs', `${entry.name}.d.cts`), `export * from './${module}.cjs';\n`);
}

// A package built in without its notice would ship its code without its licence: refused.
const builtIn = new Set(
  [esm, cjs].flatMap((result) =>
    Object.keys(result.metafile.inputs)
      .filter((file) => file.includes('node_modules/'))
      .map(packageOf),
  ),
);
const unnoticed = [...builtIn].filter((name) => !BUNDLED.includes(name));
if (unnoticed.length > 0) throw new Error(`built into dist without a notice (add to BUNDLED, or make them dependencies): ${unnoticed.join(', ')}`);
fs.writeFileSync(path.join(dist, THIRD_PARTY_NOTICES), BUNDLED.map(notice).join('\n'));

fs.rmSync(path.join(root, 'dist'), { recursive: true, force: true });
fs.renameSync(dist, path.join(root, 'dist'));

// The package's own licence beside its manifest, where `npm pack` takes it and where the server's
// protection reads it for the notices a protected build carries: the project's LICENSE, copied
// (npm packs no symlink).
fs.copyFileSync(path.join(root, '..', 'LICENSE'), path.join(root, 'LICENSE'));

function copy(file, text) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

/** The package a bundled file comes from: `node_modules/<name>/…` or `node_modules/@scope/<name>/…`. */
function packageOf(file) {
  const parts = file.split('node_modules/').pop().split('/');
  return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
}

/** The name, version and licence of a bundled package, as its own package ships them. */
function notice(name) {
  const dir = path.dirname(createRequire(path.join(root, 'package.json')).resolve(`${name}/package.json`));
  const { version, license } = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  const licenseFile = fs.readdirSync(dir).find((f) => /^licen[cs]e/i.test(f));
  const text = fs.readFileSync(path.join(dir, licenseFile), 'utf8');
  return `${name} ${version} (${license}), built into dist/:\n\n${text.trim()}\n`;
}

function camel(name) {
  return name.replace(/-(\w)/g, (_, c) => c.toUpperCase());
}
