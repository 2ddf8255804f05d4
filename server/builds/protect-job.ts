import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { CONTENT_KEY_BYTES } from '@latchkey/runtime-sdk/engine';
import type { Logger } from 'pino';
import { DOCUMENT_TYPES, type JwkSet } from '@latchkey/runtime-sdk/protocol';
import type { Clock } from '../clock.js';
import type { Keyring } from '../signing/keyring.js';
import type { MasterKey } from '../crypto/master-key.js';
import type { JobHandler } from '../jobs/runner.js';
import { BlobNotFoundError, type BlobStorage } from '../storage/blob-storage.js';
import { digestFile, type Digest } from '../storage/digest.js';
import { readLocalFile } from '../storage/filesystem.js';
import type { ScratchSpace } from '../storage/scratch.js';
import { contentKeyAad } from './content-keys.js';
import { buildFiles, packageFileName } from './files.js';
import type { Processor, ProcessingOutcome } from './processing.js';
import { smokeStart } from './protection/smoke-start.js';
import type { ScanStatus } from './scanning/findings.js';
import type { BuildForProcessing, BuildsStore } from './store.js';

export interface ProtectJobDeps {
  store: BuildsStore;
  storage: BlobStorage;
  processor: Processor;
  /** Where each attempt works; removed when it ends, however it ends. */
  scratch: ScratchSpace;
  clock: Clock;
  log: Logger;
  masterKey: MasterKey;
  keyring: Keyring;
  /** Baked into every protected app: where the authority is and the keys its tokens verify with. */
  authority: { serverUrl: string; publicKeys: JwkSet };
}

type Ready = Extract<ProcessingOutcome, { ok: true }>;

function downloadName(build: BuildForProcessing, outcome: Ready): string {
  switch (outcome.package.format) {
    case 'as_uploaded':
      return build.artifact_name;
    case 'javascript_bundle':
      return packageFileName(build.app_name, outcome.version, build.platform, '.mjs');
    case 'single_executable':
      return packageFileName(build.app_name, outcome.version, build.platform, build.platform.startsWith('win') ? '.exe' : '');
    case 'launcher_archive':
      return packageFileName(build.app_name, outcome.version, build.platform, '.tar.gz');
  }
}

/**
 * The `protect_build` job: QUEUED/PROCESSING -> READY or FAILED. Safe to run again from the start
 * after a crash: every attempt works in fresh scratch space and writes a package under a new key,
 * and only a build still PROCESSING can finish.
 */
export function protectBuildJob(deps: ProtectJobDeps): JobHandler<'protect_build'> {
  const { store, storage, processor, clock, log } = deps;

  /**
   * Nothing of a failed build is ever served: its files (perhaps malware) go first, so a build seen
   * FAILED has none left. A crash in between fails the next attempt for the missing artifact. Only
   * an unfinished build fails: a job given up after its build became READY leaves it alone.
   */
  async function fail(build: { id: string; app_id: string }, reason: string, scanStatus?: ScanStatus): Promise<void> {
    if (!(await store.isUnfinished(build.id))) return;
    await storage.removeAll(buildFiles.prefix(build));
    await store.markFailed(build.id, reason, clock.now(), scanStatus);
  }

  async function publish(build: BuildForProcessing, artifact: Digest, outcome: Ready, contentKey: Buffer): Promise<void> {
    let key = build.artifact_key;
    let { size, sha256 } = artifact;
    if (outcome.package.format !== 'as_uploaded') {
      ({ size, sha256 } = await digestFile(outcome.package.file));
      key = buildFiles.newPackage(build);
      await (await storage.stage(readLocalFile(outcome.package.file), key)).commit();
    }
    const ready = await store.markReady(build.id, {
      version: outcome.version,
      protection_level: outcome.protection_level,
      package_format: outcome.package.format,
      engine_version: outcome.engine_version,
      package_name: downloadName(build, outcome),
      package_key: key,
      protected_size_bytes: size,
      sha256,
      completed_at: clock.now(),
      // Kept only for a build sealed under it; the server alone holds it, sealed under the master key.
      content_key_sealed: outcome.protection_level === 'none' ? null : deps.masterKey.seal(contentKey.toString('base64'), contentKeyAad(build.id)),
    });
    // Deleted meanwhile (its files went with it), or finished by a runner that took over: this package is nobody's.
    if (!ready && key !== build.artifact_key) await storage.remove(key);
  }

  return {
    kind: 'protect_build',

    async run({ build_id }, { signal }) {
      const build = await store.startProcessing(build_id);
      if (!build) return; // deleted, or finished by an earlier attempt
      await deps.scratch.withWorkDir(build_id, async (workDir) => {
        const artifact = path.join(workDir, 'artifact');
        let digest: Digest;
        try {
          digest = await storage.copyToFile(build.artifact_key, artifact);
        } catch (err) {
          if (!(err instanceof BlobNotFoundError)) throw err;
          return await fail(build, 'the uploaded artifact is missing from storage; upload it again');
        }
        await store.setArtifactDigest(build.id, digest.sha256);
        const contentKey = randomBytes(CONTENT_KEY_BYTES);
        const outcome = await processor.process(
          {
            contentKey,
            signIntegrity: (sha256) =>
              deps.keyring.sign(DOCUMENT_TYPES.buildIntegrity, {
                iss: 'latchkey',
                app_id: build.app_id,
                build_id: build.id,
                sha256,
                iat: Math.floor(clock.now().getTime() / 1000),
              }),
            artifact,
            artifactName: build.artifact_name,
            platform: build.platform,
            protectionLevel: build.app_protection_level,
            version: build.version,
            entry: build.entry ?? undefined,
            engine: { ...deps.authority, appId: build.app_id, appName: build.app_name, fingerprintSalt: build.fingerprint_salt, buildId: build.id },
            workDir,
          },
          signal,
        );
        if (!outcome.ok) {
          log.info({ build: build.id, scan_status: outcome.scan_status, reason: outcome.reason }, 'build failed');
          return await fail(build, outcome.reason, outcome.scan_status);
        }
        // A package that cannot even reach its license gate would crash for every customer: FAILED, with what it said.
        const cannotRun = await smokeStart(outcome.package, build.platform, workDir);
        if (cannotRun) {
          log.info({ build: build.id, reason: cannotRun }, 'build failed its smoke start');
          return await fail(build, cannotRun, 'CLEAN');
        }
        await publish(build, digest, outcome, contentKey);
      });
    },

    async giveUp({ build_id, app_id }, reason) {
      await fail({ id: build_id, app_id }, `processing failed: ${reason}`);
    },
  };
}
