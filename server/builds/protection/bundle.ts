import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import * as esbuild from 'esbuild';
import type { EngineConfig } from '@latchkey/runtime-sdk/engine';
import { DIGEST_PLACEHOLDER, protectedRegion, REGION_BEGIN, REGION_END, regionDigest } from '@latchkey/runtime-sdk/engine/integrity';
import type { JavaScriptApp } from './javascript-app.js';

/**
 * The runtime engine's entry module, bundled into every protected app: the ES module build the
 * SDK package ships (its `import` condition), so the app gets the same engine as any app that
 * installs the SDK, and the bundle can split nothing it does not use.
 */
const ENGINE_MODULE = ((): string => {
  const manifestFile = createRequire(import.meta.url).resolve('@latchkey/runtime-sdk/package.json');
  const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8')) as { exports: Record<string, { import: { default: string } }> };
  return path.join(path.dirname(manifestFile), manifest.exports['./engine']!.import.default);
})();

/** `esm` keeps top-level await working (a plain bundle); a single executable needs `cjs`. */
export type BundleFormat = 'esm' | 'cjs';

/** The app cannot be bundled (a syntax error, an import it does not ship): the build fails with this. */
export class BundleError extends Error {}

/**
 * CommonJS code inside an ES module bundle still calls `require` (Node built-ins, mostly) and reads
 * `__dirname`/`__filename`: given here, on globalThis and through `define`, so that no declaration
 * can collide with one of the app's own.
 */
const ESM_PRELUDE = [
  "import { createRequire as __lkCreateRequire } from 'node:module';",
  "import { fileURLToPath as __lkFileURLToPath } from 'node:url';",
  'globalThis.require ??= __lkCreateRequire(import.meta.url);',
  'const __lk_filename = __lkFileURLToPath(import.meta.url);',
  "const __lk_dirname = __lk_filename.replace(/[\\\\/][^\\\\/]*$/, '');",
].join('\n');

/**
 * The uploaded app may import only what it brought: without this, an import of an absolute path or
 * of `../..` would copy any file the server can read into the bundle its developer downloads.
 */
function confineTo(root: string): esbuild.Plugin {
  const inside = (file: string) => file === root || file.startsWith(root + path.sep);
  return {
    name: 'confine-to-upload',
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData === 'confined' || !inside(args.importer)) return undefined;
        const resolved = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: 'confined' });
        if (resolved.errors.length > 0 || resolved.external || inside(resolved.path)) return resolved;
        return { errors: [{ text: `${JSON.stringify(args.path)} is outside the uploaded app; an app may import only files it contains` }] };
      });
    },
  };
}

/** `file:line:column: message` for the first error, with paths relative to the app: no server paths in a build's reason. */
function describeFailure(err: unknown, root: string): string {
  const first = (err as esbuild.BuildFailure).errors?.[0];
  if (!first) return (err as Error).message;
  const where = first.location ? `${path.relative(root, path.resolve(first.location.file)) || first.location.file}:${first.location.line}:${first.location.column}: ` : '';
  return `${where}${first.text}`;
}

export interface BundleJob {
  app: JavaScriptApp;
  engine: Omit<EngineConfig, 'integrity'>;
  format: BundleFormat;
  /** `hardened`: minified, and checked for modification at every start. */
  hardened: boolean;
  /** Where the generated entry goes: outside the app's folder, so the app cannot import the engine's config. */
  workDir: string;
  outfile: string;
}

/** Where the engine finds the file its protected code is in: the bundle itself, or the single executable. */
const OWN_FILE: Record<BundleFormat, { imports: string; expression: string }> = {
  esm: { imports: "import { fileURLToPath } from 'node:url';\n", expression: 'fileURLToPath(import.meta.url)' },
  cjs: { imports: '', expression: 'process.execPath' },
};

/**
 * Bundles the app behind the runtime engine: the license gate runs first, then the app's entry.
 * A hardened bundle is minified and carries the SHA-256 of its code (see the engine's integrity.ts).
 */
export async function bundleWithEngine(job: BundleJob): Promise<void> {
  const entry = path.join(job.workDir, 'latchkey-entry.mjs');
  const config: EngineConfig = { ...job.engine, integrity: job.hardened ? DIGEST_PLACEHOLDER : null };
  const ownFile = OWN_FILE[job.format];
  await fs.promises.writeFile(
    entry,
    `import { runProtectedApp } from ${JSON.stringify(ENGINE_MODULE)};\n${ownFile.imports}` +
      `runProtectedApp({ config: ${JSON.stringify(config)}, ownFile: ${ownFile.expression}, startApp: () => import(${JSON.stringify(job.app.entry)}) })` +
      `.catch((err) => { console.error(err); process.exitCode = 1; });\n`,
  );
  const prelude = job.format === 'esm' ? `\n${ESM_PRELUDE}` : '';
  try {
    await esbuild.build({
      entryPoints: [entry],
      outfile: job.outfile,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: job.format,
      minify: job.hardened,
      legalComments: job.hardened ? 'none' : 'eof',
      // The markers bound the code a hardened build's integrity check hashes.
      banner: { js: `${REGION_BEGIN}${prelude}` },
      footer: { js: REGION_END },
      // sodium-native is a native addon: the engine falls back to masked memory without it.
      external: ['sodium-native'],
      // The app's tsconfig.json is not read: its `extends` could name any file on the server.
      tsconfigRaw: {},
      plugins: [confineTo(job.app.root)],
      ...(job.format === 'esm' ? { define: { __dirname: '__lk_dirname', __filename: '__lk_filename' } } : {}),
      logLevel: 'silent',
    });
  } catch (err) {
    throw new BundleError(describeFailure(err, job.app.root));
  }
  if (job.hardened) await bakeDigest(job.outfile);
}

/** Replaces the placeholder with the SHA-256 of the code around it, as the engine will compute it. */
async function bakeDigest(file: string): Promise<void> {
  const region = await protectedRegion(file);
  if (!region) throw new Error(`${file} has no protected region markers`);
  const bytes = await fs.promises.readFile(file);
  const at = bytes.indexOf(DIGEST_PLACEHOLDER);
  bytes.write(regionDigest(region, null), at, 'latin1');
  await fs.promises.writeFile(file, bytes);
}
