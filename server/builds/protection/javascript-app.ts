import fs from 'node:fs/promises';
import path from 'node:path';

/** File names that make a lone upload a JavaScript or TypeScript entry point. */
const ENTRY_EXTENSIONS = new Set(['.js', '.mjs', '.cjs', '.jsx', '.ts', '.mts', '.cts', '.tsx']);
/** Tried in order when package.json names no entry. */
const DEFAULT_ENTRIES = ['index.js', 'index.mjs', 'index.cjs', 'index.ts', 'index.mts'];
const MAX_PACKAGE_JSON_BYTES = 1024 * 1024;
const VERSION = /^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$/;

/** A JavaScript app found in an upload: the folder it lives in and its entry file inside it. */
export interface JavaScriptApp {
  root: string;
  entry: string;
  /** package.json's `version`, when it has a usable one. */
  packageVersion: string | null;
}

/** Not a JavaScript app after all: package.json is there but unusable. The build fails with this. */
export class AppLayoutError extends Error {}

export const isEntryFileName = (name: string) => ENTRY_EXTENSIONS.has(path.extname(name).toLowerCase());

const isFile = (file: string) =>
  fs.stat(file).then(
    (s) => s.isFile(),
    () => false,
  );

/** The folder holding package.json: the archive's top level, or its one top-level folder; null when there is none. */
export function appRootOf(unpacked: string[]): string | null {
  if (unpacked.includes('package.json')) return '';
  const tops = new Set(unpacked.map((f) => f.split('/')[0]));
  const [only] = tops;
  return tops.size === 1 && unpacked.includes(`${only}/package.json`) ? only! : null;
}

interface PackageJson {
  name?: unknown;
  main?: unknown;
  bin?: unknown;
  exports?: unknown;
  type?: unknown;
  version?: unknown;
}

/** Conditions of an `exports` entry that can start the app under Node, in the order the map lists them. */
const EXPORT_CONDITIONS = new Set(['node', 'import', 'require', 'default']);

/** The command name npm gives a package's lone `bin`: its name without the scope. */
const commandName = (pkg: PackageJson) => (typeof pkg.name === 'string' ? pkg.name.replace(/^@[^/]+\//, '') : null);

/** The file an `exports` value points to for Node: a string, the first matching condition, or the first usable fallback. */
function exportTarget(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    for (const item of value) {
      const target = exportTarget(item);
      if (target) return target;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [condition, inner] of Object.entries(value)) {
      if (!EXPORT_CONDITIONS.has(condition)) continue;
      const target = exportTarget(inner);
      if (target) return target;
    }
  }
  return null;
}

/** `exports["."]`, or `exports` itself when it is a string, an array, or a map of conditions rather than of subpaths. */
function packageExport(exports: unknown): string | null {
  if (exports && typeof exports === 'object' && !Array.isArray(exports)) {
    const keys = Object.keys(exports);
    if (keys.some((k) => k.startsWith('.'))) return exportTarget((exports as Record<string, unknown>)['.']);
  }
  return exportTarget(exports);
}

/** What the declared entry is and where it came from, for messages. */
interface Declared {
  spec: string;
  from: string;
}

/**
 * The entry as npm runs the app: its `bin` (the only one, or the one named after the package; several
 * others are refused, listed), then `main`, then `exports`; null when package.json names none.
 */
function declaredEntry(pkg: PackageJson): Declared | null {
  if (typeof pkg.bin === 'string') return { spec: pkg.bin, from: '"bin"' };
  if (pkg.bin && typeof pkg.bin === 'object' && !Array.isArray(pkg.bin)) {
    const bins = Object.entries(pkg.bin as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === 'string');
    const name = commandName(pkg);
    const chosen = bins.length === 1 ? bins[0] : bins.find(([command]) => command === name);
    if (chosen) return { spec: chosen[1], from: `"bin" ${JSON.stringify(chosen[0])}` };
    if (bins.length > 1) {
      throw new AppLayoutError(
        `package.json has several "bin" commands (${bins.map(([command]) => command).join(', ')}) and none is named after the package; ` +
          'upload with the entry field naming one of them (or the file to start)',
      );
    }
  }
  if (typeof pkg.main === 'string') return { spec: pkg.main, from: '"main"' };
  const exported = packageExport(pkg.exports);
  if (exported) return { spec: exported, from: '"exports"' };
  return null;
}

/** The entry file `spec` names under `root`, with Node's extension and index fallbacks; never outside `root`. */
async function resolveEntry(root: string, spec: string): Promise<string | null> {
  const base = path.resolve(root, spec);
  if (base !== root && !base.startsWith(root + path.sep)) return null;
  for (const candidate of [base, `${base}.js`, `${base}.mjs`, `${base}.cjs`, `${base}.ts`, path.join(base, 'index.js')]) {
    if (!(await isFile(candidate))) continue;
    // A symlink in the archive (node_modules/.bin) may point at the file: the real file must be inside too.
    const real = await fs.realpath(candidate);
    const realRoot = await fs.realpath(root);
    if (real === realRoot || real.startsWith(realRoot + path.sep)) return candidate;
  }
  return null;
}

async function readPackageJson(manifest: string): Promise<PackageJson> {
  if ((await fs.stat(manifest)).size > MAX_PACKAGE_JSON_BYTES) throw new AppLayoutError('package.json is larger than 1 MiB');
  let pkg: PackageJson;
  try {
    pkg = JSON.parse(await fs.readFile(manifest, 'utf8')) as PackageJson;
  } catch (err) {
    throw new AppLayoutError(`package.json is not valid JSON (${(err as Error).message})`);
  }
  if (!pkg || typeof pkg !== 'object' || Array.isArray(pkg)) throw new AppLayoutError('package.json is not a JSON object');
  return pkg;
}

/** The file the upload's `entry` field names: one of package.json's `bin` commands, or a path in the app. */
async function requestedEntry(root: string, pkg: PackageJson, requested: string): Promise<string> {
  const bin = pkg.bin && typeof pkg.bin === 'object' && Object.hasOwn(pkg.bin, requested) ? (pkg.bin as Record<string, unknown>)[requested] : undefined;
  const spec = typeof bin === 'string' ? bin : requested;
  const entry = await resolveEntry(root, spec);
  if (!entry) throw new AppLayoutError(`the entry ${JSON.stringify(requested)} named on upload is not a file in the app (nor one of its "bin" commands)`);
  return entry;
}

/**
 * The JavaScript app in an unpacked archive (a package.json at its top, or in its one top-level
 * folder), or null when the archive is something else and is delivered as uploaded. `requested`
 * is the upload's `entry` field: it makes an archive without package.json an app too.
 */
export async function findAppInArchive(dir: string, unpacked: string[], requested?: string): Promise<JavaScriptApp | null> {
  const rel = appRootOf(unpacked);
  if (rel === null) {
    if (requested === undefined) return null;
    return { root: dir, entry: await requestedEntry(dir, {}, requested), packageVersion: null };
  }
  const root = path.join(dir, rel);
  const pkg = await readPackageJson(path.join(root, 'package.json'));
  let entry: string | null = null;
  if (requested !== undefined) {
    entry = await requestedEntry(root, pkg, requested);
  } else {
    const declared = declaredEntry(pkg);
    if (declared !== null) {
      entry = await resolveEntry(root, declared.spec);
      if (!entry) throw new AppLayoutError(`package.json names the entry ${JSON.stringify(declared.spec)}, which the archive does not contain (its ${declared.from})`);
    } else {
      for (const name of DEFAULT_ENTRIES) if (!entry && (await isFile(path.join(root, name)))) entry = path.join(root, name);
      if (!entry) throw new AppLayoutError(`package.json names no entry ("bin", "main" or "exports") and there is no ${DEFAULT_ENTRIES.join(', ')}`);
    }
  }
  const packageVersion = typeof pkg.version === 'string' && VERSION.test(pkg.version) ? pkg.version : null;
  return { root, entry: await withModuleExtension(entry, pkg), packageVersion };
}

/**
 * npm's `bin` files often have no extension (`bin/coffee`), which Node runs as CommonJS (or as an ES
 * module under `"type": "module"`) but a bundler cannot classify: a copy beside it, with the
 * extension that says which, is the entry instead. Beside it, so its relative imports still resolve.
 */
async function withModuleExtension(entry: string, pkg: PackageJson): Promise<string> {
  if (path.extname(entry) !== '' && isEntryFileName(entry)) return entry;
  const copy = `${entry}.latchkey-entry.${pkg.type === 'module' ? 'mjs' : 'cjs'}`;
  await fs.copyFile(entry, copy);
  return copy;
}

/** A lone entry file: copied into a folder of its own, which is all it may import from. */
export async function appFromEntryFile(artifact: string, fileName: string, dir: string, requested?: string): Promise<JavaScriptApp> {
  if (requested !== undefined && requested !== fileName) {
    throw new AppLayoutError(`the entry ${JSON.stringify(requested)} named on upload is not the uploaded file ${JSON.stringify(fileName)}, which is the whole app`);
  }
  await fs.mkdir(dir, { recursive: true });
  const entry = path.join(dir, fileName);
  await fs.copyFile(artifact, entry);
  return { root: dir, entry, packageVersion: null };
}
