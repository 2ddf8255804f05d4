import path from 'node:path';
import { ENGINE_VERSION, type EngineConfig } from '@latchkey/runtime-sdk/engine';
import type { PROTECTION_LEVELS } from '../apps/schemas.js';
import type { NodeRuntimeSource } from '../config.js';
import { BundleError, type IntegritySigner } from './protection/bundle.js';
import { AppLayoutError, appFromEntryFile, findAppInArchive, isEntryFileName, type JavaScriptApp } from './protection/javascript-app.js';
import { PackagingError, protectJavaScriptApp } from './protection/protect.js';
import type { BuildPlatform, BuildProtectionLevel, PackageFormat } from './schemas.js';
import { archiveKindOf, ArtifactUnpacker, type ArchiveKind, type NestedFile } from './scanning/archive.js';
import { ScanRefusal, type ScanFinding, type ScanStatus } from './scanning/findings.js';
import { scanAll, type Scanner } from './scanning/scanner.js';

type ProtectionLevel = (typeof PROTECTION_LEVELS)[number];

/** The build's version when it names none and the app's package.json does not either. */
const UNVERSIONED = '0.0.0';

export interface ProcessingInput {
  /** The uploaded artifact, as a local file. */
  artifact: string;
  /** Its sanitised file name. */
  artifactName: string;
  platform: BuildPlatform;
  /** The app's protection level. */
  protectionLevel: ProtectionLevel;
  /** The build's content key, made for this attempt: a protected app is sealed under it. */
  contentKey: Buffer;
  /** Signs a hardened build's integrity document. */
  signIntegrity: IntegritySigner;
  version: string | null;
  /** The entry the upload named (a path in the app, or a `bin` command), or undefined for npm's rules. */
  entry?: string | undefined;
  /** What the engine bakes in, but the app version (decided here) and the integrity digest (computed at bundling). */
  engine: Omit<EngineConfig, 'appVersion' | 'integrity'>;
  /** Scratch space, removed by the caller. */
  workDir: string;
}

export type ProcessingOutcome =
  | { ok: false; scan_status: ScanStatus; reason: string }
  | {
      ok: true;
      /** The file customers will download and what it is. */
      package: { file: string; format: PackageFormat };
      protection_level: BuildProtectionLevel;
      engine_version: string | null;
      version: string | null;
    };

export interface Processor {
  process(input: ProcessingInput, signal: AbortSignal): Promise<ProcessingOutcome>;
}

export interface Inspection {
  finding: ScanFinding | null;
  archive: ArchiveKind | null;
  /** Where an archive was unpacked, and its files relative to there. */
  unpackedDir: string;
  unpacked: string[];
}

/**
 * Unpacks an archive safely (refusing bombs and escaping paths), and the archives nested in it, and
 * runs every scanner over what they hold. Only the artifact's own files are the app (`unpacked`);
 * nested archives are unpacked beside them, for the scanners alone.
 */
export async function inspectArtifact(scanners: Scanner[], artifact: string, artifactName: string, workDir: string, signal: AbortSignal): Promise<Inspection> {
  const unpackedDir = path.join(workDir, 'unpacked');
  const archive = await archiveKindOf(artifact);
  const unpacker = await ArtifactUnpacker.of(artifact, signal);
  let unpacked: string[] = [];
  const scanned: NestedFile[] = [];
  try {
    if (archive) unpacked = await unpacker.unpack(artifact, archive, unpackedDir);
    const own = unpacked.map((f) => ({ file: path.join(unpackedDir, ...f.split('/')), shownAs: `${artifactName}: ${f}` }));
    // Not a zip or tar.gz: the artifact itself may still be a plain tar, whose files are scanned.
    const nested = await (archive
      ? unpacker.unpackNested(own, 2, path.join(workDir, 'nested'))
      : unpacker.unpackNested([{ file: artifact, shownAs: artifactName }], 1, path.join(workDir, 'nested')));
    scanned.push(...own, ...nested);
  } catch (err) {
    if (err instanceof ScanRefusal) return { finding: err.finding, archive, unpackedDir, unpacked };
    throw err;
  }
  signal.throwIfAborted();
  const shownAs = new Map(scanned.map((f) => [f.file, f.shownAs]));
  const finding = await scanAll(scanners, { artifact, unpacked: [...shownAs.keys()], describe: (file) => shownAs.get(file) ?? artifactName }, signal);
  return { finding, archive, unpackedDir, unpacked };
}

/**
 * Scans an artifact (unpacking archives safely first) and protects it: a JavaScript app is bundled
 * behind the runtime engine; anything else, or any app at protection level `none`, is delivered as
 * uploaded. Refusals and unusable apps are outcomes; a thrown error is a fault worth retrying.
 */
export function createProcessor(deps: { scanners: Scanner[]; nodeRuntimes: NodeRuntimeSource }): Processor {
  return {
    async process(input, signal) {
      const { finding, archive, unpackedDir, unpacked } = await inspectArtifact(deps.scanners, input.artifact, input.artifactName, input.workDir, signal);
      if (finding) return { ok: false, ...finding };

      const asUploaded: ProcessingOutcome = {
        ok: true,
        package: { file: input.artifact, format: 'as_uploaded' },
        protection_level: 'none',
        engine_version: null,
        version: input.version,
      };
      if (input.protectionLevel === 'none') return asUploaded;
      let app: JavaScriptApp | null;
      try {
        app = archive
          ? await findAppInArchive(unpackedDir, unpacked, input.entry)
          : isEntryFileName(input.artifactName)
            ? await appFromEntryFile(input.artifact, input.artifactName, path.join(input.workDir, 'app'), input.entry)
            : null;
      } catch (err) {
        if (err instanceof AppLayoutError) return { ok: false, scan_status: 'CLEAN', reason: err.message };
        throw err;
      }
      if (!app) return asUploaded;

      signal.throwIfAborted();
      const version = input.version ?? app.packageVersion;
      try {
        const protectedPackage = await protectJavaScriptApp({
          app,
          engine: { ...input.engine, appVersion: version ?? UNVERSIONED },
          platform: input.platform,
          hardened: input.protectionLevel === 'hardened',
          contentKey: input.contentKey,
          signIntegrity: input.signIntegrity,
          nodeRuntimes: deps.nodeRuntimes,
          workDir: input.workDir,
        });
        const level = input.protectionLevel === 'hardened' ? 'encrypted_hardened' : 'encrypted';
        return { ok: true, package: protectedPackage, protection_level: level, engine_version: ENGINE_VERSION, version };
      } catch (err) {
        if (err instanceof BundleError) return { ok: false, scan_status: 'CLEAN', reason: `the app could not be bundled: ${err.message}` };
        if (err instanceof PackagingError) return { ok: false, scan_status: 'CLEAN', reason: err.message };
        throw err;
      }
    },
  };
}
