/**
 * docs/contract.md Versioning 3: a Windows or macOS build is signed by its developer and uploaded
 * (Replace with Signed Package) before it is pushed. This module owns that rule: which builds need
 * a signed package, and what a replacement must be.
 */
import fs from 'node:fs/promises';
import { RequestError } from '../errors.js';
import { carriesCodeSignature, peProgramDigest, type ExecutableKind, type ReadAt } from './code-signature.js';
import type { BuildRow } from './store.js';

type SignableFacts = Pick<BuildRow, 'platform' | 'package_format'>;

/**
 * The signature a build's package carries on its platform: Authenticode in a PE on Windows, a
 * Mach-O code signature on macOS; null for platforms without one, and for a protected macOS build,
 * a launcher archive whose only executable is Node's runtime byte for byte, its vendor signature
 * intact (the launcher and the app are scripts, which macOS does not sign); null before READY. Re-signing that
 * archive's runtime is not something this service can check, so it is pushed as it is.
 */
export function signatureKindOf(build: SignableFacts): ExecutableKind | null {
  // Unknown until the build is READY: what protection makes depends on what the upload holds.
  if (build.package_format === null || build.package_format === 'launcher_archive') return null;
  if (build.platform.startsWith('win-')) return 'pe';
  if (build.platform.startsWith('mac-')) return 'mach_o';
  return null;
}

/** Whether a push of this build waits for Replace with Signed Package. */
export function awaitsSignedPackage(build: SignableFacts & Pick<BuildRow, 'signed_package_at'>): boolean {
  return signatureKindOf(build) !== null && build.signed_package_at === null;
}

/** Before a replacement is read: a build whose package carries no signature the service checks takes none. */
export function assertSignable(build: SignableFacts): ExecutableKind {
  const kind = signatureKindOf(build);
  if (kind) return kind;
  const why =
    build.package_format === 'launcher_archive'
      ? "it is a launcher archive around Node's runtime, which keeps its vendor signature; it is pushed as it is"
      : `a ${build.platform} package carries no code signature; only Windows and macOS builds are replaced with signed packages`;
  throw new RequestError('BUILD_NOT_SIGNABLE', `This build takes no signed package: ${why}`);
}

async function withReader<T>(file: string, use: (read: ReadAt, size: number) => Promise<T>): Promise<T> {
  const handle = await fs.open(file, 'r');
  try {
    const { size } = await handle.stat();
    const read: ReadAt = async (offset, length) => {
      const buffer = Buffer.alloc(Math.max(0, Math.min(length, size - offset)));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
      return buffer.subarray(0, bytesRead);
    };
    return await use(read, size);
  } finally {
    await handle.close();
  }
}

const PE_DESCRIPTION = 'an Authenticode signature (a certificate table in the PE)';
const MACH_O_DESCRIPTION = 'a code signature (LC_CODE_SIGNATURE in the Mach-O, in every slice of a universal one)';

/**
 * A replacement must carry the platform's signature (422 PACKAGE_NOT_SIGNED). A protected build's
 * replacement must moreover be the build's own protected package, signed: the same program once the
 * signature is set aside (422 PACKAGE_REJECTED otherwise), so the build stays what its
 * `protection_level` says. Re-protecting a signed package is no option: it would break the signature.
 */
export async function assertSignedReplacement(build: Pick<BuildRow, 'protection_level'>, kind: ExecutableKind, replacement: string, current: () => Promise<string>): Promise<void> {
  const signed = await withReader(replacement, (read, size) => carriesCodeSignature(kind, read, size));
  if (!signed) {
    throw new RequestError(
      'PACKAGE_NOT_SIGNED',
      `The package carries no code signature: a ${kind === 'pe' ? 'Windows' : 'macOS'} package needs ${kind === 'pe' ? PE_DESCRIPTION : MACH_O_DESCRIPTION}`,
    );
  }
  if (build.protection_level === null || build.protection_level === 'none') return;
  const programOf = (file: string) => withReader(file, (read, size) => peProgramDigest(read, size));
  const [theirs, ours] = [await programOf(replacement), await programOf(await current())];
  if (theirs === null || theirs !== ours) {
    throw new RequestError(
      'PACKAGE_REJECTED',
      "The package is not this build's protected package, signed: sign the file this build's download gives, and upload it unchanged otherwise",
    );
  }
}
