import fs from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { APP_MODULE, APP_ROOT_KEY, sealVault, SODIUM_ASSET, VAULT_ASSET, type EngineConfig, type VaultFiles } from '@latchkey/runtime-sdk/engine';
import { DIGEST_PLACEHOLDER, fillSlot, protectedRegion, REGION_BEGIN, REGION_END, regionDigest } from '@latchkey/runtime-sdk/engine/integrity';
import type { JavaScriptApp } from './javascript-app.js';
import { engineNotices } from './notices.js';

/**
 * The runtime engine's entry module, bundled into every protected app: the ES module build the
 * SDK package ships (its `import` condition), so the app gets the same engine as any app that
 * installs the SDK, and the bundle can split nothing it does not use.
 */
const ENGINE_PACKAGE = path.dirname(createRequire(import.meta.url).resolve('@latchkey/runtime-sdk/package.json'));
const ENGINE_MODULE = ((): string => {
  const manifest = JSON.parse(fs.readFileSync(path.join(ENGINE_PACKAGE, 'package.json'), 'utf8')) as { exports: Record<string, { import: { default: string } }> };
  return path.join(ENGINE_PACKAGE, manifest.exports['./engine']!.import.default);
})();

/** The authority's signed integrity document over a protected region's SHA-256 (docs/protocol.md). */
export type IntegritySigner = (sha256: string) => string;

/** `esm` keeps top-level await working (a plain bundle); a single executable needs `cjs`. */
export type BundleFormat = 'esm' | 'cjs';

/** The app cannot be bundled (a syntax error, an import it does not ship): the build fails with this. */
export class BundleError extends Error {}

/**
 * The engine's CommonJS dependencies (the hardware probes) inside an ES module bundle still call
 * `require` (Node built-ins) and read `__dirname`/`__filename`: given here, on globalThis and
 * through `define`, so that no declaration can collide with one of theirs.
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

/**
 * `file:line:column: message` for the first error, with paths relative to the app (no server paths
 * in a build's reason) and lines as the developer wrote them (see ownPaths).
 */
function describeFailure(err: unknown, root: string, shifted: ReadonlySet<string>): string {
  const first = (err as esbuild.BuildFailure).errors?.[0];
  if (!first) return (err as Error).message;
  const location = first.location;
  const file = location && path.resolve(location.file);
  const line = location && file && shifted.has(file) && location.line > 1 ? location.line - 1 : location?.line;
  const where = location ? `${path.relative(root, file!) || location.file}:${line}:${location.column}: ` : '';
  return `${where}${first.text}`;
}

/** Source files: bundled into the app module, not carried as files. */
const CODE_EXTENSIONS = new Set(['.js', '.mjs', '.cjs', '.jsx', '.ts', '.mts', '.cts', '.tsx']);

/**
 * The app module's own paths. It runs from a `data:` URL, so each file's `import.meta.url`,
 * `__dirname` and `__filename` are rewritten (ownPaths) to where the file was in the app, under the
 * folder the engine serves the app's files from (APP_ROOT_KEY); `require` of Node's built-ins works
 * in CommonJS code too.
 */
const APP_PRELUDE = [
  "import { createRequire as __lkCreateRequire } from 'node:module';",
  "import __lkPath from 'node:path';",
  "import { pathToFileURL as __lkPathToFileURL } from 'node:url';",
  `const __lkRoot = globalThis[Symbol.for(${JSON.stringify(APP_ROOT_KEY)})];`,
  "const __lkFile = (relative) => __lkPath.join(__lkRoot, ...relative.split('/'));",
  'const __lkDir = (relative) => __lkPath.dirname(__lkFile(relative));',
  'const __lkUrl = (relative) => __lkPathToFileURL(__lkFile(relative)).href;',
  "globalThis.require ??= __lkCreateRequire(__lkFile('package.json'));",
].join('\n');

/** An ES module: it has import or export statements (what esbuild decides by, in short). */
const ESM_SYNTAX = /^\s*(import\s*[\w{*'"]|export\s)/m;
const DIRECTIVE_PROLOGUE = /^(#![^\n]*\n)?(\s*(['"])use strict\3;?)?/;

/**
 * Rewrites each app file's own location (see APP_PRELUDE) as esbuild loads it. A CommonJS file gets
 * one line of declarations after its directive prologue: its later lines are one further down, which
 * `shifted` records so that errors name the lines as the developer wrote them.
 */
function ownPaths(root: string, shifted: Set<string>): esbuild.Plugin {
  return {
    name: 'own-paths',
    setup(build) {
      build.onLoad({ filter: /\.(m|c)?(j|t)sx?$/ }, async (args) => {
        if (!args.path.startsWith(root + path.sep)) return undefined;
        const relative = JSON.stringify(path.relative(root, args.path).split(path.sep).join('/'));
        let source = (await fs.promises.readFile(args.path, 'utf8'))
          .replace(/\bimport\.meta\.url\b/g, `__lkUrl(${relative})`)
          .replace(/\bimport\.meta\.dirname\b/g, `__lkDir(${relative})`)
          .replace(/\bimport\.meta\.filename\b/g, `__lkFile(${relative})`);
        if (!ESM_SYNTAX.test(source)) {
          const [prologue] = DIRECTIVE_PROLOGUE.exec(source)!;
          // The semicolon ends a directive written without one ('use strict' then a newline).
          source = `${prologue};var __filename = __lkFile(${relative}), __dirname = __lkDir(${relative});\n${source.slice(prologue.length)}`;
          shifted.add(args.path);
        }
        const extension = path.extname(args.path).slice(1).replace(/^[mc]/, '') as 'js' | 'ts' | 'jsx' | 'tsx';
        return { contents: source, loader: extension, resolveDir: path.dirname(args.path) };
      });
    },
  };
}

export interface BundleJob {
  app: JavaScriptApp;
  engine: Omit<EngineConfig, 'integrity'>;
  format: BundleFormat;
  /** `hardened`: minified, and checked for modification at every start. */
  hardened: boolean;
  /** The build's content key: the app's code and files are sealed under it (docs/protocol.md). */
  contentKey: Buffer;
  /** Signs the integrity document of a hardened build over the SHA-256 of its protected region. */
  signIntegrity: IntegritySigner;
  /** Where the generated entry goes: outside the app's folder, so the app cannot import the engine's config. */
  workDir: string;
  outfile: string;
  /** The target platform's prebuilt sodium-native addon (`sodiumAddonFor`), carried by an executable; null: none. */
  sodiumAddon: string | null;
}

/**
 * How the generated entry hands the engine its own file (the file its protected code is in) and the
 * vault. A bundle is one file: the vault is a base64 literal in it. The CommonJS script of an
 * executable reads the vault as a file of its own instead, which costs nothing to parse at start:
 * a single executable's asset, read in place (and `__filename` is the executable there), or the
 * file beside the script in a launcher archive.
 */
const ENTRY_PARTS: Record<BundleFormat, { imports: string; ownFile: string; vault: (sealed: Buffer) => string }> = {
  esm: {
    imports: "import { fileURLToPath } from 'node:url';\n",
    ownFile: 'fileURLToPath(import.meta.url)',
    vault: (sealed) => `Buffer.from(${JSON.stringify(sealed.toString('base64'))}, 'base64')`,
  },
  cjs: {
    imports: "import { isSea, getRawAsset } from 'node:sea';\nimport { readFileSync } from 'node:fs';\nimport { join } from 'node:path';\n",
    ownFile: '__filename',
    vault: () => `isSea() ? Buffer.from(getRawAsset(${JSON.stringify(VAULT_ASSET)})) : readFileSync(join(__dirname, ${JSON.stringify(VAULT_ASSET)}))`,
  },
};

/** Files the protected script reads beside its code, by name (see ENTRY_PARTS): none for a bundle. */
export type BundleAssets = Record<string, string>;

export interface BundledEngine {
  assets: BundleAssets;
  /** The notices of the open-source code around the app (notices.ts): at the end of an ES module bundle, and for a deliverable to carry. */
  notices: string;
}

/**
 * Protects the app: its code bundled into one ES module and sealed with every file it carries into
 * the vault under the build's content key; the runtime engine bundled around the vault, in the clear.
 * The engine runs the license gate, gets the content key for this device, and runs the app from
 * memory. A hardened bundle is minified and carries the SHA-256 of its code (the engine's integrity.ts).
 */
export async function bundleWithEngine(job: BundleJob): Promise<BundledEngine> {
  const files = await appFiles(job.app.root);
  files.set(APP_MODULE, await bundleApp(job.app, job.hardened));
  const sealed = sealVault(files, job.contentKey, job.engine.buildId);
  const assets: BundleAssets = {};
  if (job.format === 'cjs') {
    assets[VAULT_ASSET] = path.join(job.workDir, VAULT_ASSET);
    await fs.promises.writeFile(assets[VAULT_ASSET], sealed);
  }
  const carriesSodium = job.format === 'cjs' && job.sodiumAddon !== null;
  if (carriesSodium) assets[SODIUM_ASSET] = job.sodiumAddon!;

  const entry = path.join(job.workDir, 'latchkey-entry.mjs');
  const config: EngineConfig = { ...job.engine, integrity: job.hardened ? DIGEST_PLACEHOLDER : null };
  const parts = ENTRY_PARTS[job.format];
  await fs.promises.writeFile(
    entry,
    `import { runProtectedApp } from ${JSON.stringify(ENGINE_MODULE)};\n${parts.imports}` +
      `runProtectedApp({ config: ${JSON.stringify(config)}, ownFile: ${parts.ownFile}, vault: ${parts.vault(sealed)} })` +
      `.catch((err) => { console.error(err); process.exitCode = 1; });\n`,
  );
  const prelude = job.format === 'esm' ? `\n${ESM_PRELUDE}` : '';
  let metafile: esbuild.Metafile;
  try {
    ({ metafile } = await esbuild.build({
      entryPoints: [entry],
      outfile: job.outfile,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: job.format,
      minify: job.hardened,
      legalComments: job.hardened ? 'none' : 'eof',
      // The markers bound the code a hardened build's integrity check hashes: the engine and the vault.
      banner: { js: `${REGION_BEGIN}${prelude}` },
      footer: { js: REGION_END },
      // sodium-native is a native addon: an executable carries its platform's addon as an asset and
      // its JavaScript with the binding the engine loads (native-addon.ts); a bundle imports it from
      // beside itself, and the engine falls back to masked memory without it.
      ...(carriesSodium ? { plugins: [sodiumBindingPlugin] } : { external: ['sodium-native'] }),
      tsconfigRaw: {},
      ...(job.format === 'esm' ? { define: { __dirname: '__lk_dirname', __filename: '__lk_filename' } } : {}),
      metafile: true,
      logLevel: 'silent',
    }));
  } catch (err) {
    throw new BundleError(`the runtime engine could not be bundled: ${(err as Error).message}`);
  }
  if (job.hardened) await bakeIntegrity(job.outfile, job.signIntegrity);
  const notices = engineNotices(ENGINE_PACKAGE, metafile, process.cwd(), { sodiumAddon: carriesSodium });
  // After the protected region's end: a comment the integrity check does not hash and no start parses twice.
  if (job.format === 'esm') await fs.promises.appendFile(job.outfile, `\n/*! THIRD_PARTY_NOTICES\n${notices.replaceAll('*/', '* /')}*/\n`);
  return { assets, notices };
}

/**
 * sodium-native's own `./binding` finds its addon on disk (require-addon), which an executable has
 * not: it is replaced by the engine's loader of the carried addon. Its argument checks call
 * `assert(condition, message)` and nothing else of node:assert, whose loading (six internal modules)
 * every protected start would pay: they get a plain function that throws the same message.
 */
const SODIUM_SHIMS: Record<string, string> = {
  binding: `module.exports = require(${JSON.stringify(ENGINE_MODULE)}).loadSodiumAddon();`,
  assert: 'module.exports = function assert(ok, message) { if (!ok) throw new Error(message); };',
};
const sodiumBindingPlugin: esbuild.Plugin = {
  name: 'latchkey-sodium-binding',
  setup(build) {
    const fromSodium = (importer: string) => /[\\/]sodium-native[\\/]/.test(importer);
    build.onResolve({ filter: /^\.\/binding(\.js)?$/ }, (args) => (fromSodium(args.importer) ? { path: 'binding', namespace: 'latchkey-sodium' } : undefined));
    build.onResolve({ filter: /^(node:)?assert$/ }, (args) => (fromSodium(args.importer) ? { path: 'assert', namespace: 'latchkey-sodium' } : undefined));
    build.onLoad({ filter: /.*/, namespace: 'latchkey-sodium' }, (args) => ({
      contents: SODIUM_SHIMS[args.path],
      resolveDir: path.dirname(ENGINE_MODULE),
      loader: 'js',
    }));
  },
};

/** Node's name of an executable target (`win-x64` -> `win32-x64`), as sodium-native names its prebuilds. */
const PREBUILD_PLATFORMS: Record<string, string> = { linux: 'linux', win: 'win32', mac: 'darwin' };

/**
 * The prebuilt sodium-native addon for a target platform (`linux-x64`, `win-arm64`, `mac-arm64`, ...),
 * from the copy this server has installed; null when it has none (the executable then runs on masked memory).
 */
export function sodiumAddonFor(platform: string): string | null {
  const [os, arch] = platform.split('-') as [string, string | undefined];
  const prebuildDir = PREBUILD_PLATFORMS[os] && arch ? `${PREBUILD_PLATFORMS[os]}-${arch}` : undefined;
  if (!prebuildDir) return null;
  try {
    const manifest = createRequire(ENGINE_MODULE).resolve('sodium-native/package.json');
    const addon = path.join(path.dirname(manifest), 'prebuilds', prebuildDir, SODIUM_ASSET);
    return fs.existsSync(addon) ? addon : null;
  } catch {
    return null;
  }
}

/** The app's own code as one ES module, run from memory: it imports Node's built-ins and nothing else. */
async function bundleApp(app: JavaScriptApp, hardened: boolean): Promise<Buffer> {
  const shifted = new Set<string>();
  try {
    const result = await esbuild.build({
      entryPoints: [app.entry],
      bundle: true,
      write: false,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      minify: hardened,
      legalComments: 'none',
      banner: { js: APP_PRELUDE },
      // The app's tsconfig.json is not read: its `extends` could name any file on the server.
      tsconfigRaw: {},
      plugins: [confineTo(app.root), ownPaths(app.root, shifted)],
      metafile: true,
      logLevel: 'silent',
    });
    assertBuiltinsExist(result.metafile);
    return Buffer.from(result.outputFiles[0]!.contents);
  } catch (err) {
    throw new BundleError(describeFailure(err, app.root, shifted));
  }
}

/**
 * What the app module imports at run time is Node's built-ins alone; one Node does not have would
 * fail only after the license gate, on a customer's machine, so the build fails here instead.
 */
function assertBuiltinsExist(metafile: esbuild.Metafile): void {
  for (const output of Object.values(metafile.outputs)) {
    for (const imported of output.imports) {
      if (imported.external && !isBuiltin(imported.path)) {
        throw new BundleError(`the app imports ${JSON.stringify(imported.path)}, which is not a Node built-in module and not in the upload`);
      }
    }
  }
}

/**
 * Every file of the app but its code (which the bundle holds): assets it reads next to its code,
 * its package.json, data files of its dependencies. Keyed by `/`-separated path under the app.
 */
async function appFiles(root: string): Promise<VaultFiles> {
  const files: VaultFiles = new Map();
  for (const entry of await fs.promises.readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || CODE_EXTENSIONS.has(path.extname(entry.name).toLowerCase())) continue;
    const file = path.join(entry.parentPath, entry.name);
    files.set(path.relative(root, file).split(path.sep).join('/'), await fs.promises.readFile(file));
  }
  return files;
}

/** Fills the slot with the authority's signature over the SHA-256 of the code around it, as the engine will compute it. */
async function bakeIntegrity(file: string, sign: IntegritySigner): Promise<void> {
  const region = await protectedRegion(file);
  if (!region) throw new Error(`${file} has no protected region markers`);
  const bytes = await fs.promises.readFile(file);
  const at = bytes.indexOf(DIGEST_PLACEHOLDER);
  bytes.write(fillSlot(sign(regionDigest(region, null))), at, 'latin1');
  await fs.promises.writeFile(file, bytes);
}
