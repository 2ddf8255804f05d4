import { Readable, Transform, pipeline } from 'node:stream';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { newId, randomHex } from '../crypto/secrets.js';
import type { Db } from '../db/knex.js';
import { bodyCutOff } from '../http/body.js';
import { RequestError, assertThat } from '../errors.js';
import type { TenantQuotaService } from '../quotas/index.js';
import { BlobNotFoundError, type BlobStorage, type StagedBlob } from '../storage/blob-storage.js';
import { digestingStream } from '../storage/digest.js';
import { buildFiles } from './files.js';
import type { BuildPlatform } from './schemas.js';
import type { BuildsService } from './service.js';
import type { BuildRow } from './store.js';

/** An unfinished upload is kept this long after it was started, then swept with its chunks. */
export const UPLOAD_SESSION_TTL_MS = 24 * 60 * 60_000;

export interface UploadSessionRow {
  id: string;
  developer_id: string;
  app_id: string;
  filename: string;
  platform: BuildPlatform;
  python_version: string | null;
  version: string | null;
  entry: string | null;
  size_bytes: number;
  sha256: string;
  received_bytes: number;
  /** The stored chunks' keys, in order. */
  part_keys: string[];
  created_at: Date;
  expires_at: Date;
}

export interface CreateUploadInput {
  filename: string;
  size_bytes: number;
  sha256: string;
  platform: BuildPlatform;
  python_version?: string | undefined;
  version?: string | undefined;
  entry?: string | undefined;
}

/** A chunk attempt's own key: two attempts at one offset never write one object. */
const newPartKey = (id: string, offset: number) => `uploads/${id}/${String(offset).padStart(15, '0')}-${randomHex(6)}`;
const prefixOf = (id: string) => `uploads/${id}`;

const fromDb = (row: Record<string, unknown>): UploadSessionRow => ({
  ...(row as unknown as UploadSessionRow),
  size_bytes: Number(row.size_bytes),
  received_bytes: Number(row.received_bytes),
});

/** Passes at most `max` bytes on; one more fails the stream with 413. */
function capped(max: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      if (seen > max) return done(new RequestError('PAYLOAD_TOO_LARGE', `The chunk goes past the upload's declared size (${max} bytes left)`));
      done(null, chunk);
    },
  });
}

/**
 * Resumable uploads of artifacts over 100 MB (or any size): create a session with the file's size
 * and SHA-256, send its bytes in chunks (`PUT ...?offset=n`, each stored once it arrived whole),
 * ask where it stands after an interruption, and complete it: the chunks are joined, their SHA-256
 * checked against the declared one, and the build made exactly as a single upload makes it.
 * Sessions belong to the developer and app that created them; unfinished ones expire after a day.
 * Only the BlobStorage operations are used (stage, commit, read, removeAll), so an object store works too.
 */
export function createUploadSessions(deps: {
  db: Db;
  storage: BlobStorage;
  clock: Clock;
  log: Logger;
  builds: BuildsService;
  quotas: Pick<TenantQuotaService, 'assertStorage'>;
  maxArtifactBytes: number;
}) {
  const { db, storage, clock, log, builds } = deps;
  const table = () => db<Record<string, unknown>>('upload_sessions');

  async function find(developerId: string, appId: string, id: string): Promise<UploadSessionRow> {
    const row = await table().where({ id, developer_id: developerId, app_id: appId }).where('expires_at', '>', clock.now()).first();
    assertThat(row, 'UPLOAD_NOT_FOUND', 'No such upload session for this app (never started, completed, deleted or expired)');
    return fromDb(row);
  }

  /** Ends a session at its completion, once: 404 for whoever comes second. */
  async function endSession(trx: Db, developerId: string, id: string): Promise<void> {
    const ended = await trx('upload_sessions').where({ id, developer_id: developerId }).delete();
    assertThat(ended === 1, 'UPLOAD_NOT_FOUND', 'This upload session was completed or deleted meanwhile');
  }

  async function discardSession(id: string): Promise<void> {
    await storage.removeAll(prefixOf(id));
  }

  /** Removes expired sessions and their chunks (a few at a time, whoever comes by, and the periodic sweep). */
  async function sweepExpired(limit = 20): Promise<number> {
    const expired = await db.raw<{ rows: { id: string }[] }>(
      `DELETE FROM upload_sessions WHERE id IN (SELECT id FROM upload_sessions WHERE expires_at <= ? ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED) RETURNING id`,
      [clock.now(), limit],
    );
    for (const { id } of expired.rows) await discardSession(id);
    return expired.rows.length;
  }

  /**
   * The chunks, in order, as one stream. Destroying it (the store refused the artifact) ends the
   * generator, and with it the chunk being read: no file handle or S3 socket is left open.
   */
  function joined(session: UploadSessionRow): Readable {
    async function* chunks() {
      for (const key of session.part_keys) yield* await storage.read(key);
    }
    return Readable.from(chunks(), { objectMode: false });
  }

  return {
    sweepExpired,

    async create(developerId: string, appId: string, input: CreateUploadInput): Promise<UploadSessionRow> {
      const app = await builds.assertApp(developerId, appId);
      if (input.platform !== 'cross_platform' && !app.platforms.includes(input.platform)) {
        throw new RequestError('VALIDATION_FAILED', `body.platform: ${input.platform} is not one of the app's platforms (${app.platforms.join(', ')})`);
      }
      if (input.size_bytes > deps.maxArtifactBytes) {
        throw new RequestError('PAYLOAD_TOO_LARGE', `size_bytes exceeds the ${deps.maxArtifactBytes}-byte limit`);
      }
      await sweepExpired();
      const now = clock.now();
      // Its chunks take space before a build exists: the declared size counts against the storage quota from now on.
      const [row] = await db.transaction(async (trx) => {
        await deps.quotas.assertStorage(trx, developerId, input.size_bytes, now);
        return trx('upload_sessions')
          .insert({
            id: newId('upl'),
            developer_id: developerId,
            app_id: appId,
            filename: input.filename,
            platform: input.platform,
            python_version: input.python_version ?? null,
            version: input.version ?? null,
            entry: input.entry ?? null,
            size_bytes: input.size_bytes,
            sha256: input.sha256.toLowerCase(),
            created_at: now,
            expires_at: new Date(now.getTime() + UPLOAD_SESSION_TTL_MS),
          })
          .returning('*');
      });
      return fromDb(row!);
    },

    get: find,

    /**
     * Stores one chunk starting at `offset`, which must be where the session stands (409 with the
     * right offset otherwise). A chunk cut off keeps nothing; resend it whole from the same offset.
     */
    async putChunk(developerId: string, appId: string, id: string, offset: number, body: Readable): Promise<UploadSessionRow> {
      const session = await find(developerId, appId, id);
      if (offset !== session.received_bytes) {
        throw new RequestError('UPLOAD_OFFSET_MISMATCH', `This upload stands at byte ${session.received_bytes}; send the chunk that starts there`, {
          headers: { 'Upload-Offset': String(session.received_bytes) },
        });
      }
      // The client left while the session was looked up: its events are past, and a pipe from it would never end.
      if (body.destroyed) throw bodyCutOff();
      const limit = capped(session.size_bytes - offset);
      // Its failure can come before storage starts reading (a small chunk fits its buffer): storage
      // still sees it (the stream is left errored), and nothing else should report it.
      limit.on('error', () => {});
      // A client gone mid-chunk: the chunk fails and nothing of it is kept.
      body.on('error', () => limit.destroy(bodyCutOff()));
      body.on('aborted', () => limit.destroy(bodyCutOff()));
      const staged: StagedBlob = await storage.stage(body.pipe(limit), newPartKey(id, offset));
      if (staged.size === 0) {
        await staged.discard();
        return session;
      }
      try {
        return await db.transaction(async (trx) => {
          const [row] = await trx('upload_sessions')
            .where({ id, received_bytes: offset })
            .update({ received_bytes: trx.raw('received_bytes + ?', [staged.size]), part_keys: trx.raw('array_append(part_keys, ?::text)', [staged.key]) })
            .returning('*');
          if (!row) throw new RequestError('UPLOAD_OFFSET_MISMATCH', 'Another chunk at this offset was stored first; ask where the upload stands');
          await staged.commit();
          return fromDb(row);
        });
      } catch (err) {
        await staged.discard();
        throw err;
      }
    },

    /**
     * Joins the chunks, checks their SHA-256 and makes the build (201, QUEUED). The session ends in
     * the build's own transaction, so it ends exactly when the build is made: a failure or a crash
     * before that commit leaves it to be completed again. Bytes that do not hash to the declared
     * SHA-256 end it too (no retry can fix them).
     */
    async complete(developerId: string, appId: string, id: string): Promise<BuildRow> {
      const session = await find(developerId, appId, id);
      if (session.received_bytes !== session.size_bytes) {
        throw new RequestError('UPLOAD_INCOMPLETE', `This upload has ${session.received_bytes} of its ${session.size_bytes} bytes; send the rest first`, {
          headers: { 'Upload-Offset': String(session.received_bytes) },
        });
      }
      const hashing = digestingStream();
      const source = joined(session);
      // pipeline, not pipe: a chunk that fails to read fails the staging, never an 'error' nobody listens to.
      pipeline(source, hashing.stream, () => undefined);
      const buildId = newId('bld');
      let staged: StagedBlob;
      try {
        staged = await storage.stage(hashing.stream, buildFiles.artifact({ id: buildId, app_id: appId }));
      } catch (err) {
        // The store refused before reading it all: the chunks' reader stops too, not held open.
        source.destroy();
        // A chunk removed while it was read: the session was completed or deleted meanwhile.
        if (err instanceof BlobNotFoundError) throw new RequestError('UPLOAD_NOT_FOUND', 'This upload session was completed or deleted meanwhile');
        throw err;
      }
      let build: BuildRow;
      try {
        const { sha256 } = hashing.digest();
        if (sha256 !== session.sha256 || staged.size !== session.size_bytes) {
          await endSession(db, developerId, id);
          await discardSession(id);
          throw new RequestError('UPLOAD_CHECKSUM_MISMATCH', `The bytes received hash to ${sha256}, not the declared ${session.sha256}: start a new upload`);
        }
        build = await builds.upload(
          developerId,
          appId,
          {
            platform: session.platform,
            ...(session.python_version ? { python_version: session.python_version } : {}),
            ...(session.version ? { version: session.version } : {}),
            ...(session.entry ? { entry: session.entry } : {}),
            artifact: { filename: session.filename, stored: { buildId, blob: staged } },
          },
          // The delete locks the row until the build commits: a second complete of this session
          // waits here, then finds it gone; a rollback (or a crash) leaves it as it was.
          (trx) => endSession(trx, developerId, id),
        );
      } catch (err) {
        await staged.discard();
        throw err;
      }
      // The build is made: the answer is 201 whatever happens to the chunks now. Chunks that cannot be
      // removed are named for the operator (nothing else refers to them once the session ended).
      await discardSession(id).catch((err: unknown) => log.warn({ err, upload: id, prefix: prefixOf(id) }, 'chunks of a completed upload were not removed'));
      return build;
    },

    async remove(developerId: string, appId: string, id: string): Promise<void> {
      const removed = await table().where({ id, developer_id: developerId, app_id: appId }).delete();
      assertThat(removed === 1, 'UPLOAD_NOT_FOUND', 'No such upload session for this app');
      await discardSession(id);
    },
  };
}

export type UploadSessions = ReturnType<typeof createUploadSessions>;
