import { z } from 'zod';
import { setPageHeaders } from '../http/pagination.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { newId } from '../crypto/secrets.js';
import type { RequestFileReceiver } from '../http/multipart.js';
import type { BlobStorage, StagedBlob } from '../storage/blob-storage.js';
import { AppIdParams } from '../apps/schemas.js';
import { buildFiles } from './files.js';
import * as s from './schemas.js';
import type { BuildsService } from './service.js';
import { awaitsSignedPackage, signatureKindOf } from './signed-package.js';
import type { BuildRow } from './store.js';

const iso = (d: Date | null) => d?.toISOString() ?? null;

export const buildView = (b: BuildRow): z.input<typeof s.Build> => ({
  id: b.id,
  app_id: b.app_id,
  status: b.status,
  platform: b.platform,
  python_version: b.python_version,
  version: b.version,
  entry: b.entry,
  protection_level: b.protection_level,
  scan_status: b.scan_status,
  package_format: b.package_format,
  engine_version: b.engine_version,
  failure_reason: b.failure_reason,
  artifact_name: b.artifact_name,
  artifact_size_bytes: b.artifact_size_bytes,
  artifact_sha256: b.artifact_sha256,
  package_name: b.package_name,
  protected_size_bytes: b.protected_size_bytes,
  sha256: b.sha256,
  released: b.released,
  signed_package_at: iso(b.signed_package_at),
  signature_format: signatureKindOf(b),
  awaits_signed_package: awaitsSignedPackage(b),
  created_at: b.created_at.toISOString(),
  completed_at: iso(b.completed_at),
});

export function buildRoutes(builds: BuildsService, deps: { storage: BlobStorage; maxArtifactBytes: number }): RouteDef[] {
  const tag = 'Builds';
  // Both routes' prechecks found the app (and the build) before the body is read: the ids make keys.
  const artifacts: RequestFileReceiver<s.StagedArtifact> = {
    async receive(stream, params) {
      const buildId = newId('bld');
      return { buildId, blob: await deps.storage.stage(stream, buildFiles.artifact({ id: buildId, app_id: params.app_id! })) };
    },
    discard: (staged) => staged.blob.discard(),
  };
  const packages: RequestFileReceiver<StagedBlob> = {
    receive: (stream, params) => deps.storage.stage(stream, buildFiles.newPackage({ id: params.build_id!, app_id: params.app_id! })),
    discard: (staged) => staged.discard(),
  };
  const upload = <T>(fileField: string, fileDescription: string, receiver: RequestFileReceiver<T>) => ({
    fileField,
    fileDescription,
    maxFileBytes: deps.maxArtifactBytes,
    receiver,
  });
  const common = { tag, auth: 'developer', rateLimit: 'builds' } as const;
  return [
    defineRoute({
      ...common,
      method: 'post',
      path: '/v1/apps/{app_id}/builds',
      operationId: 'uploadBuild',
      scope: 'builds',
      summary: 'Upload an artifact; it is scanned and protected in the background (QUEUED, then PROCESSING, then READY or FAILED)',
      description:
        'multipart/form-data, streamed to storage. A JavaScript or TypeScript app (an entry file, or a zip or tar.gz with package.json ' +
        'and its node_modules) is bundled with the runtime engine and delivered with the pinned Node runtime of the platform, so the ' +
        'customer needs no Node: a Node single executable for linux and Windows (`single_executable`), a .tar.gz holding the ' +
        'vendor-signed runtime, the app and a launcher `bin/<app>` for macOS (`launcher_archive`); for `cross_platform` a JavaScript ' +
        'bundle that needs Node >= 20.12 installed (`javascript_bundle`). Anything else is delivered as uploaded. Archives are refused when ' +
        'entries leave the archive, are links, or expand more than 100 times. 413 past the configured maximum size (default 2 GiB).',
      params: AppIdParams,
      body: s.UploadBuildBody,
      response: s.Build,
      status: 201,
      errors: [403, 404, 413, 415, 422],
      multipart: upload('artifact', 'The file to protect', artifacts),
      precheck: async ({ actor, params }) => void (await builds.assertApp(actor.developerId, params.app_id)),
      handler: async ({ actor, params, body }) => buildView(await builds.upload(actor.developerId, params.app_id, body)),
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/v1/apps/{app_id}/builds',
      operationId: 'listBuilds',
      scope: 'read',
      summary: "List an app's builds, oldest first",
      params: AppIdParams,
      query: s.ListBuildsQuery,
      response: z.array(s.Build),
      paginated: true,
      errors: [404],
      handler: async ({ actor, params, query, ctx }) => {
        const { rows, total } = await builds.list(actor.developerId, params.app_id, query);
        setPageHeaders(ctx, query, total);
        return rows.map(buildView);
      },
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/v1/apps/{app_id}/builds/{build_id}',
      operationId: 'getBuild',
      scope: 'read',
      summary: 'A build: status, scan, sizes and SHA-256',
      params: s.BuildParams,
      response: s.Build,
      errors: [404],
      handler: async ({ actor, params }) => buildView(await builds.get(actor.developerId, params.app_id, params.build_id)),
    }),
    defineRoute({
      ...common,
      method: 'delete',
      path: '/v1/apps/{app_id}/builds/{build_id}',
      operationId: 'deleteBuild',
      scope: 'builds',
      summary: 'Delete a build and its files',
      description:
        'A job still protecting the build keeps nothing. Deleting a build also clears the active app push naming it and the ' +
        'per-license pushes to it; devices that installed it keep it.',
      params: s.BuildParams,
      errors: [404],
      handler: ({ actor, params }) => builds.remove(actor.developerId, params.app_id, params.build_id),
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/v1/apps/{app_id}/builds/{build_id}/download',
      operationId: 'getBuildDownloadLink',
      scope: 'read',
      summary: 'A signed download URL for a READY build, valid 7 days',
      params: s.BuildParams,
      response: s.DownloadLink,
      errors: [404, 409],
      handler: ({ actor, params }) => builds.downloadLink(actor.developerId, params.app_id, params.build_id),
    }),
    defineRoute({
      ...common,
      method: 'post',
      path: '/v1/apps/{app_id}/builds/{build_id}/release',
      operationId: 'releaseBuild',
      scope: 'builds',
      summary: 'Release a READY build (customers get only released builds under delivery mode released_only)',
      params: s.BuildParams,
      response: s.Build,
      errors: [404, 409],
      handler: async ({ actor, params }) => buildView(await builds.release(actor.developerId, params.app_id, params.build_id)),
    }),
    defineRoute({
      ...common,
      method: 'delete',
      path: '/v1/apps/{app_id}/builds/{build_id}/release',
      operationId: 'unreleaseBuild',
      scope: 'builds',
      summary: 'Withdraw the release of a build',
      description: 'The target of the active app push stays released: 409 PUSH_CONFLICT with reason active_push_target until the push is cleared or replaced.',
      params: s.BuildParams,
      response: s.Build,
      errors: [404, 409],
      handler: async ({ actor, params }) => buildView(await builds.unrelease(actor.developerId, params.app_id, params.build_id)),
    }),
    defineRoute({
      ...common,
      method: 'put',
      path: '/v1/apps/{app_id}/builds/{build_id}/signed-package',
      operationId: 'replaceBuildPackage',
      scope: 'builds',
      summary: "Replace a READY build's package with the developer's signed one (Windows and macOS builds, before a push)",
      description:
        'multipart/form-data with `package`. Checked before it replaces anything, first failure wins: the build 404 (another ' +
        "developer's too), not READY 409 BUILD_NOT_READY; a build that takes no signature 409 BUILD_NOT_SIGNABLE (a platform " +
        "other than Windows and macOS, or a macOS launcher archive, whose runtime keeps Node's own signature and is pushed as it is); " +
        'the signature, read from the structure: a Windows package must be a PE with an Authenticode certificate table (a non-empty ' +
        'IMAGE_DIRECTORY_ENTRY_SECURITY directory), a macOS package a Mach-O with LC_CODE_SIGNATURE (in every slice of a universal ' +
        "one), else 422 PACKAGE_NOT_SIGNED (the certificate itself is the operating system's to verify); a protected build " +
        '(`protection_level` other than `none`) takes only its own protected package, signed: the same program once the signature ' +
        'is set aside, else 422 PACKAGE_REJECTED, so it stays as protected as it says and is not protected again (that would break ' +
        'the signature); then the scan of an upload (422 PACKAGE_REJECTED). It then becomes what customers download, with its own ' +
        '`sha256` and `protected_size_bytes`; status, `protection_level` and `package_format` stay, and `signed_package_at` is set, ' +
        'which a push of a Windows or macOS build requires (409 reason build_not_signed before). A package larger than the one it replaces ' +
        "takes the difference from the plan's storage: 403 STORAGE_QUOTA_EXCEEDED past it.",
      params: s.BuildParams,
      body: s.SignedPackageBody,
      response: s.Build,
      errors: [403, 404, 409, 413, 415, 422],
      multipart: upload('package', 'The signed package', packages),
      precheck: ({ actor, params }) => builds.assertReplaceable(actor.developerId, params.app_id, params.build_id),
      handler: async ({ actor, params, body }) => buildView(await builds.replacePackage(actor.developerId, params.app_id, params.build_id, body.package)),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/downloads/{build_id}',
      operationId: 'downloadBuild',
      tag,
      auth: 'none',
      rateLimit: 'general',
      summary: 'Download a build through a signed link (as answered by .../download); supports Range, ETag and HEAD',
      params: s.DownloadParams,
      query: s.DownloadQuery,
      errors: [403, 404, 416],
      fileResponse: { description: 'The package customers run' },
      handler: ({ params, query, ctx }) => builds.serveDownload(ctx, params.build_id, query.expires, query.signature),
    }),
  ];
}
