import { z } from 'zod';
import { AppIdParams } from '../apps/schemas.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { buildView } from './routes.js';
import * as s from './schemas.js';
import type { UploadSessionRow, UploadSessions } from './upload-sessions.js';

const Sha256 = z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be a SHA-256 in hex (64 characters)');

const CreateUploadBody = z.strictObject({
  filename: z.string().min(1).max(255).describe("The artifact's file name, as a multipart upload gives it"),
  size_bytes: z.number().int().min(1).describe("The whole file's size"),
  sha256: Sha256.describe("The whole file's SHA-256: completing the upload checks the bytes received against it"),
  platform: z.enum(s.BUILD_PLATFORMS, { error: `must be one of ${s.BUILD_PLATFORMS.join(', ')}` }),
  python_version: z
    .string()
    .regex(/^\d+(\.\d+){0,2}$/, 'must be a Python version such as 3.12')
    .optional(),
  version: s.Version.optional(),
  entry: s.AppEntry.optional(),
});

const UploadSession = z.object({
  id: z.string(),
  app_id: z.string(),
  filename: z.string(),
  platform: z.string(),
  size_bytes: z.number().int(),
  sha256: z.string(),
  offset: z.number().int().describe('Bytes stored so far: where the next chunk starts'),
  expires_at: z.string().describe('An unfinished upload is removed with its chunks after this (a day after it started)'),
  created_at: z.string(),
});

const UploadParams = AppIdParams.extend({ upload_id: z.string().max(64) });
const ChunkQuery = z.object({ offset: z.coerce.number().int().min(0).describe("Where this chunk starts in the file: the session's `offset`") });

const view = (u: UploadSessionRow): z.input<typeof UploadSession> => ({
  id: u.id,
  app_id: u.app_id,
  filename: u.filename,
  platform: u.platform,
  size_bytes: u.size_bytes,
  sha256: u.sha256,
  offset: u.received_bytes,
  expires_at: u.expires_at.toISOString(),
  created_at: u.created_at.toISOString(),
});

/**
 * Resumable uploads: an alternative to `POST /v1/apps/{app_id}/builds` for large files or poor
 * connections (the CLI uses it above 100 MB). Our own protocol rather than tus: see docs/contract.md.
 */
export function uploadSessionRoutes(uploads: UploadSessions): RouteDef[] {
  const common = { tag: 'Builds', auth: 'developer', rateLimit: 'builds' } as const;
  return [
    defineRoute({
      ...common,
      method: 'post',
      path: '/v1/apps/{app_id}/uploads',
      operationId: 'createUploadSession',
      scope: 'builds',
      summary: 'Start a resumable upload of an artifact: its name, size, SHA-256 and the build fields',
      description:
        'Then send the file in chunks with PUT .../uploads/{upload_id}?offset=n (any chunk size, in order), and complete it. ' +
        "The session belongs to the caller's account and this app, and expires a day after it started (with its chunks). 413 past the configured maximum size. " +
        "Its declared size counts against the plan's storage until it is completed, deleted or expired: 403 STORAGE_QUOTA_EXCEEDED when it would take the account's storage past the plan's.",
      params: AppIdParams,
      body: CreateUploadBody,
      response: UploadSession,
      status: 201,
      errors: [400, 403, 404, 413],
      handler: async ({ actor, params, body }) => view(await uploads.create(actor.developerId, params.app_id, body)),
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/v1/apps/{app_id}/uploads/{upload_id}',
      operationId: 'getUploadSession',
      scope: 'read',
      summary: 'Where a resumable upload stands: `offset` is where the next chunk starts (after an interruption, resume there)',
      params: UploadParams,
      response: UploadSession,
      errors: [404],
      handler: async ({ actor, params }) => view(await uploads.get(actor.developerId, params.app_id, params.upload_id)),
    }),
    defineRoute({
      ...common,
      method: 'put',
      path: '/v1/apps/{app_id}/uploads/{upload_id}',
      operationId: 'putUploadChunk',
      scope: 'builds',
      summary: 'Send the chunk of a resumable upload that starts at `offset`',
      description:
        "The body is the chunk's bytes (application/octet-stream). It is stored once it arrived whole; a chunk cut off keeps nothing, so resend it " +
        'from the same offset. 409 UPLOAD_OFFSET_MISMATCH (with `Upload-Offset`) when the upload stands elsewhere; 413 past the declared size. ' +
        'No total time limit: only a pause longer than LATCHKEY_BODY_IDLE_TIMEOUT_MS between bytes ends a chunk (408).',
      params: UploadParams,
      query: ChunkQuery,
      response: UploadSession,
      errors: [404, 408, 409, 413],
      streamBody: { description: "The chunk's bytes", contentType: 'application/octet-stream' },
      handler: async ({ actor, params, query, ctx }) => view(await uploads.putChunk(actor.developerId, params.app_id, params.upload_id, query.offset, ctx.req)),
    }),
    defineRoute({
      ...common,
      method: 'post',
      path: '/v1/apps/{app_id}/uploads/{upload_id}/complete',
      operationId: 'completeUploadSession',
      scope: 'builds',
      summary: 'Finish a resumable upload: the chunks are joined, checked against the declared SHA-256, and become a build (201, QUEUED)',
      description:
        'The build is made as POST .../builds makes it. 409 UPLOAD_INCOMPLETE (with `Upload-Offset`) while bytes are missing; 422 UPLOAD_CHECKSUM_MISMATCH ' +
        'when the bytes received do not hash to the declared SHA-256 (the session ends: start again). The session ends exactly when its build is made: ' +
        'after any other failure (a refused build, a lost connection, a server restart) it is still there to complete again, and of two completes at once ' +
        "one makes the build and the other gets 404 UPLOAD_NOT_FOUND. The build takes the session's place in the storage quota; 403 STORAGE_QUOTA_EXCEEDED " +
        'only when the account is over its plan anyway (a downgrade since the session started).',
      params: UploadParams,
      response: s.Build,
      status: 201,
      errors: [403, 404, 409, 422],
      handler: async ({ actor, params }) => buildView(await uploads.complete(actor.developerId, params.app_id, params.upload_id)),
    }),
    defineRoute({
      ...common,
      method: 'delete',
      path: '/v1/apps/{app_id}/uploads/{upload_id}',
      operationId: 'deleteUploadSession',
      scope: 'builds',
      summary: 'Abandon a resumable upload and remove its chunks',
      params: UploadParams,
      errors: [404],
      handler: ({ actor, params }) => uploads.remove(actor.developerId, params.app_id, params.upload_id),
    }),
  ];
}
