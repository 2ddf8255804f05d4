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

const isFile = (file: string) => fs.stat(file).then((s) => s.isFile(), () => false);

/** The folder holding package.json: the archive's top level, or its one top-level folder. */
function packageRoot(unpacked: string[]): string | null {
  if (unpacked.includes('package.json')) return '';
  const tops = new Set(unpacked.map((f) => f.split('/')[0]));
  const [only] = tops;
  return tops.size === 1 && unpacked.includes(`${only}/package.json`) ? only! : null;
}

interface PackageJson {
  main?: unknown;
  bin?: unknown;
  version?: unknown;
}

function declaredEntry(pkg: PackageJson): string | null {
  if (typeof pkg.main === 'string') return pkg.main;
  if (typeof pkg.bin === 'string') return pkg.bin;
  if (pkg.bin && typeof pkg.bin === 'object') {
    const first = Object.values(pkg.bin)[0];
    if (typeof first === 'string') return first;
  }
  return null;
}

/** The entry file `spec` names under `root`, with Node's extension and index fallbacks; never outside `root`. */
async function resolveEntry(root: string, spec: string): Promise<string | null> {
  const base = path.resolve(root, spec);
  if (base !== root && !base.startsWith(root + path.sep)) return null;
  for (const candidate of [base, `${base}.js`, `${base}.mjs`, `${base}.cjs`, `${base}.ts`, path.join(base, 'index.js')]) {
    if (await isFile(candidate)) return candidate;
  }
  return null;
}

/**
 * The JavaScript app in an unpacked archive (a package.json at its top, or in its one top-level
 * folder), or null when the archive is something else and is delivered as uploaded.
 */
export async function findAppInArchive(dir: string, unpacked: string[]): Promise<JavaScriptApp | null> {
  const rel = packageRoot(unpacked);
  if (rel === null) return null;
  const root = path.join(dir, rel);
  const manifest = path.join(root, 'package.json');
  if ((await fs.stat(manifest)).size > MAX_PACKAGE_JSON_BYTES) throw new AppLayoutError('package.json is larger than 1 MiB');
  let pkg: PackageJson;
  try {
    pkg = JSON.parse(await fs.readFile(manifest, 'utf8')) as PackageJson;
  } catch (err) {
    throw new AppLayoutError(`package.json is not valid JSON (${(err as Error).message})`);
  }
  if (!pkg || typeof pkg !== 'object') throw new AppLayoutError('package.json is not a JSON object');
  const declared = declaredEntry(pkg);
  let entry: string | null = null;
  if (declared !== null) {
    entry = await resolveEntry(root, declared);
    if (!entry) throw new AppLayoutError(`package.json names the entry ${JSON.stringify(declared)}, which the archive does not contain`);
  } else {
    for (const name of DEFAULT_ENTRIES) if (!entry && (await isFile(path.join(root, name)))) entry = path.join(root, name);
    if (!entry) throw new AppLayoutError(`package.json names no entry ("main" or "bin") and there is no ${DEFAULT_ENTRIES.join(', ')}`);
  }
  const packageVersion = typeof pkg.version === 'string' && VERSION.test(pkg.version) ? pkg.version : null;
  return { root, entry, packageVersion };
}

/** A lone entry file: copied into a folder of its own, which is all it may import from. */
export async function appFromEntryFile(artifact: string, fileName: string, dir: string): Promise<JavaScriptApp> {
  await fs.mkdir(dir, { recursive: true });
  const entry = path.join(dir, fileName);
  await fs.copyFile(artifact, entry);
  return { root: dir, entry, packageVersion: null };
}
