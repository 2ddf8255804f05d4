import path from 'node:path';
import type { Knex } from 'knex';
import type Koa from 'koa';
import type { Clock } from '../clock.js';
import type { Db } from '../db/knex.js';
import { RequestError, assertThat } from '../errors.js';
import type { UploadedFile } from '../http/multipart.js';
import type { JobQueue } from '../jobs/queue.js';
import { BlobNotFoundError, type BlobStorage, type StagedBlob } from '../storage/blob-storage.js';
import type { Digest } from '../storage/digest.js';
import type { ScratchSpace } from '../storage/scratch.js';
import type { TenantQuotaService } from '../quotas/index.js';
import type { PushGuards } from '../updates/rules.js';
import type { DownloadLinks } from './download-link.js';
import { buildFiles, safeFileName } from './files.js';
import { inspectArtifact } from './processing.js';
import { checkUpload } from './upload-check.js';
import type { ListBuildsFilter, UploadBuildInput } from './schemas.js';
import type { Scanner } from './scanning/scanner.js';
import { sendUnmeteredFile } from './send-file.js';
import { assertSignable, assertSignedReplacement } from './signed-package.js';
import type { BuildRow, BuildsStore } from './store.js';

export interface BuildsServiceDeps {
  db: Db;
  store: BuildsStore;
  storage: BlobStorage;
  queue: JobQueue;
  clock: Clock;
  links: DownloadLinks;
  scanners: Scanner[];
  scratch: ScratchSpace;
  pushGuards: Pick<PushGuards, 'beforeUnrelease'>;
  /** Stored bytes per plan: an upload past them is refused before anything is kept. */
  quotas: Pick<TenantQuotaService, 'assertStorage'>;
}

const notReady = (build: BuildRow, action: string) => new RequestError('BUILD_NOT_READY', `Only a READY build can ${action}; this one is ${build.status}`);

export function createBuildsService(deps: BuildsServiceDeps) {
  const { db, store, storage, queue, clock, links } = deps;

  async function assertApp(developerId: string, appId: string) {
    const app = await store.findApp(developerId, appId);
    assertThat(app, 'APP_NOT_FOUND', 'No such app');
    return app;
  }

  async function get(developerId: string, appId: string, buildId: string): Promise<BuildRow> {
    const build = await store.find(developerId, appId, buildId);
    assertThat(build, 'BUILD_NOT_FOUND', 'No such build of this app');
    return build;
  }

  /**
   * Checks a signed package before it replaces anything: its signature and, for a protected build,
   * that it is the build's own package (`signed-package.ts`), then the same scan as an upload's, at
   * once. Answers its digest.
   */
  function assertAcceptable(build: BuildRow, key: string, name: string): Promise<Digest> {
    return deps.scratch.withWorkDir('package', async (workDir) => {
      const file = path.join(workDir, 'package');
      const digest = await storage.copyToFile(key, file);
      await assertSignedReplacement(build, assertSignable(build), file, async () => {
        const current = path.join(workDir, 'current');
        try {
          await storage.copyToFile(build.package_key!, current);
        } catch (err) {
          // Deleted (files first) while the replacement was read.
          if (err instanceof BlobNotFoundError) throw new RequestError('BUILD_NOT_FOUND', 'No such build of this app');
          throw err;
        }
        return current;
      });
      const { finding } = await inspectArtifact(deps.scanners, file, name, workDir, AbortSignal.timeout(10 * 60_000));
      if (finding) throw new RequestError('PACKAGE_REJECTED', `The package was refused (${finding.scan_status}): ${finding.reason}`);
      return digest;
    });
  }

  async function sendBuild(ctx: Koa.Context, buildId: string): Promise<void> {
    const build = await store.findReady(buildId);
    assertThat(build, 'BUILD_NOT_FOUND', 'This build no longer exists');
    await sendUnmeteredFile(ctx, storage, { key: build.package_key!, size: build.protected_size_bytes!, sha256: build.sha256!, name: build.package_name! });
  }

  return {
    get,
    /** Before an upload is read: another tenant's or a missing app costs the client no upload. */
    assertApp,

    async list(developerId: string, appId: string, filter: ListBuildsFilter) {
      await assertApp(developerId, appId);
      return store.list(developerId, appId, filter);
    },

    /**
     * Records the build and its protection job in one transaction, once the artifact (staged for the
     * build's id and key) is committed and passed the upload's quick check (`upload-check.ts`): a committed build always has its
     * artifact, and a refused or failed one leaves no file behind. `claim` runs first in that
     * transaction, for what must end exactly when the build is made (an upload session).
     */
    async upload(developerId: string, appId: string, input: UploadBuildInput, claim?: (trx: Knex.Transaction) => Promise<void>): Promise<BuildRow> {
      const app = await assertApp(developerId, appId);
      if (input.platform !== 'cross_platform' && !app.platforms.includes(input.platform)) {
        throw new RequestError(
          'VALIDATION_FAILED',
          `body.platform: ${input.platform} is not one of the app's platforms (${app.platforms.join(', ')}); add it to the app, or upload for cross_platform`,
        );
      }
      const { buildId: id, blob: stored } = input.artifact.stored;
      const { key } = stored;
      let build: BuildRow;
      try {
        // Kept under its key first, so the quick check reads it as the job will.
        await stored.commit();
        await deps.scratch.withWorkDir('upload', async (workDir) => {
          const file = path.join(workDir, 'artifact');
          await storage.copyToFile(key, file);
          await checkUpload(file, { protectsApps: app.protection_level !== 'none', entry: input.entry });
        });
        build = await db.transaction(async (trx) => {
          await claim?.(trx);
          await deps.quotas.assertStorage(trx, developerId, stored.size, clock.now());
          const row = await store.insert(trx, {
            id,
            developer_id: developerId,
            app_id: appId,
            platform: input.platform,
            python_version: input.python_version ?? null,
            version: input.version ?? null,
            entry: input.entry ?? null,
            protection_level: null,
            artifact_name: safeFileName(input.artifact.filename),
            artifact_key: key,
            artifact_size_bytes: stored.size,
            created_at: clock.now(),
          });
          await queue.enqueue(trx, developerId, 'protect_build', { build_id: id, app_id: appId });
          return row;
        });
      } catch (err) {
        await storage.remove(key);
        throw err;
      }
      queue.wake();
      return build;
    },

    /** The build and its files; a job still working on it finds it gone and keeps nothing. */
    async remove(developerId: string, appId: string, buildId: string): Promise<void> {
      const build = await store.remove(developerId, appId, buildId);
      assertThat(build, 'BUILD_NOT_FOUND', 'No such build of this app');
      await storage.removeAll(buildFiles.prefix(build));
    },

    /** After an app is deleted (its builds with it, in the database): their files. */
    removeAppFiles: (appId: string) => storage.removeAll(buildFiles.ofApp(appId)),

    async release(developerId: string, appId: string, buildId: string): Promise<BuildRow> {
      const build = await get(developerId, appId, buildId);
      if (build.status !== 'READY') throw notReady(build, 'be released');
      return (await store.setReleased(db, developerId, appId, buildId, true)) ?? get(developerId, appId, buildId);
    },

    /** Refused for the target of the app's active push (docs/contract.md push rule 3). A build that is not READY was never released. */
    async unrelease(developerId: string, appId: string, buildId: string): Promise<BuildRow> {
      const build = await get(developerId, appId, buildId);
      return db.transaction(async (trx) => {
        await deps.pushGuards.beforeUnrelease(trx, developerId, appId, buildId);
        return (await store.setReleased(trx, developerId, appId, buildId, false)) ?? build;
      });
    },

    /** Before the package is read: the build must be there, READY, and of a kind that is signed (Windows, macOS). */
    async assertReplaceable(developerId: string, appId: string, buildId: string): Promise<void> {
      const build = await get(developerId, appId, buildId);
      if (build.status !== 'READY') throw notReady(build, 'take a signed package');
      assertSignable(build);
    },

    /**
     * The developer's signed package replaces what customers download; hash and size are its own.
     * The build keeps its status, protection level and format: a protected build's replacement is
     * its own protected package with a signature added, nothing else is accepted.
     */
    async replacePackage(developerId: string, appId: string, buildId: string, file: UploadedFile<StagedBlob>): Promise<BuildRow> {
      const { key } = file.stored;
      await file.stored.commit();
      let replaced;
      try {
        const build = await get(developerId, appId, buildId);
        if (build.status !== 'READY') throw notReady(build, 'take a signed package');
        const name = safeFileName(file.filename, 'package');
        const { size, sha256 } = await assertAcceptable(build, key, name);
        replaced = await store.replacePackage(
          developerId,
          appId,
          buildId,
          { package_key: key, package_name: name, protected_size_bytes: size, sha256, signed_package_at: clock.now() },
          // The replaced package goes: only growth takes more of the plan's storage (an account over
          // its plan after a downgrade may still sign a package no larger than the one it replaces).
          async (trx, before) => {
            const growth = size - (before.protected_size_bytes ?? 0);
            if (growth > 0) await deps.quotas.assertStorage(trx, developerId, growth, clock.now());
          },
        );
        if (!replaced) throw notReady(await get(developerId, appId, buildId), 'take a signed package');
      } catch (err) {
        await storage.remove(key);
        throw err;
      }
      const old = replaced.before.package_key;
      // The original upload stays with the build (an as-uploaded package is that same object).
      if (old && old !== replaced.before.artifact_key) await storage.remove(old);
      return replaced.after;
    },

    async downloadLink(developerId: string, appId: string, buildId: string) {
      const build = await get(developerId, appId, buildId);
      if (build.status !== 'READY') throw notReady(build, 'be downloaded');
      return links.create(build.id);
    },

    /** Serves a signed download link: 403 for a forged or expired one, before anything is looked up. */
    async serveDownload(ctx: Koa.Context, buildId: string, expires: string | undefined, signature: string | undefined): Promise<void> {
      const check = links.check(buildId, expires, signature);
      if (check === 'invalid') throw new RequestError('DOWNLOAD_LINK_INVALID', 'This download link is not valid');
      if (check === 'expired') throw new RequestError('DOWNLOAD_LINK_EXPIRED', 'This download link has expired; ask for a new one');
      await sendBuild(ctx, buildId);
    },

    /** Sends a READY build's package, once the caller decided the request may have it. */
    sendBuild,
  };
}

export type BuildsService = ReturnType<typeof createBuildsService>;
