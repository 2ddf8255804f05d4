import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { pipeline, Transform, type Readable } from 'node:stream';
import { pipeline as pipelineAsync } from 'node:stream/promises';
import { DeleteObjectCommand, DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, type GetObjectCommandInput } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { assertKey, BlobNotFoundError, StorageUnavailableError, type BlobStorage, type ByteRange, type StagedBlob } from './blob-storage.js';
import { digestingStream, type Digest } from './digest.js';

export interface S3StorageOptions {
  bucket: string;
  region: string;
  /** An S3-compatible service's URL (MinIO, R2...); AWS's own endpoint when absent. */
  endpoint: string | undefined;
  /** `endpoint/bucket/key` instead of `bucket.endpoint/key`, which most S3-compatible services need. */
  forcePathStyle: boolean;
  /** Downloads are redirected to a short-lived presigned GET of the object instead of passing through the server. */
  presign: boolean;
}

/**
 * A staged object is written straight to its key (S3 copies no object over 5 GiB in one request,
 * and UploadPartCopy is not implemented everywhere: s3rver answers 501), with an empty marker
 * beside it until the commit: `staging/<ms since the epoch>-<uuid>/<key>`. A sweep finds what a
 * crash left behind from the markers alone, judging the age from the name (no HEAD per object).
 * Objects staged whole under `staging/<ms>-<uuid>` by earlier versions are swept by the same rule.
 */
const STAGING_PREFIX = 'staging/';
const MARKER = /^staging\/(\d{13})-[0-9a-f-]{36}(?:\/(.+))?$/;

/**
 * A multipart upload holds `QUEUE_SIZE` parts of `PART_BYTES` in memory, and one more being filled:
 * an artifact of any size costs the same few of them while it streams in. At 5 MiB (S3's least),
 * its 10,000 parts reach 50 GB.
 */
const PART_BYTES = 5 * 1024 * 1024;
const QUEUE_SIZE = 2;

/** The largest object a multipart upload of `PART_BYTES` parts makes (S3 takes 10,000 parts). */
export const S3_MAX_OBJECT_BYTES = 10_000 * PART_BYTES;

/** How long a presigned download URL works: long enough to follow the redirect, too short to share. */
const PRESIGNED_URL_SECONDS = 60;

/** What the SDK answers for an object that is not there (GetObject: NoSuchKey; HEAD-like answers: NotFound). */
const isMissingObject = (err: unknown) => {
  const name = (err as { name?: string })?.name;
  return name === 'NoSuchKey' || name === 'NotFound';
};

/**
 * Anything but a missing object is the store's failure, not the request's: an endpoint that does not
 * answer, refused credentials, a missing bucket, the service's own 5xx. Named for the operator
 * (the SDK's error name and message carry no credentials); the request answers 503.
 */
function unavailable(err: unknown, operation: string): StorageUnavailableError {
  const e = err as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const status = e?.$metadata?.httpStatusCode ? ` (HTTP ${e.$metadata.httpStatusCode})` : '';
  return new StorageUnavailableError(`object storage ${operation} failed: ${e?.name ?? 'Error'}${status}: ${e?.message ?? String(err)}`, { cause: err });
}

/** Objects in an S3 bucket (or an S3-compatible service's); credentials come from the AWS SDK's default chain. */
export function createS3Storage(options: S3StorageOptions): BlobStorage {
  const { bucket } = options;
  const client = new S3Client({
    region: options.region,
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    forcePathStyle: options.forcePathStyle,
    // A store that does not answer fails the request in seconds (503), not after the OS's TCP timeout;
    // a download whose client stops reading for a minute is cut (its S3 connection sat idle).
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
  });

  async function send<T>(operation: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      throw unavailable(err, operation);
    }
  }

  async function getObject(key: string, range?: ByteRange): Promise<Readable> {
    assertKey(key);
    const input: GetObjectCommandInput = { Bucket: bucket, Key: key, ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) };
    try {
      const { Body } = await client.send(new GetObjectCommand(input));
      return Body as Readable;
    } catch (err) {
      if (isMissingObject(err)) throw new BlobNotFoundError(key);
      throw unavailable(err, 'GetObject');
    }
  }

  /** Streams `body` into the object at `key`, a few parts in memory at a time. */
  const multipartUpload = (key: string, body: Readable) => new Upload({ client, params: { Bucket: bucket, Key: key, Body: body }, partSize: PART_BYTES, queueSize: QUEUE_SIZE });

  const remove = (key: string) => send('DeleteObject', () => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }))).then(() => undefined);

  /** Every key under `prefix`, a page (at most 1,000) at a time. */
  async function* listKeys(prefix: string): AsyncGenerator<string[]> {
    let token: string | undefined;
    // Bounded by the bucket's contents: each page moves the continuation token on.
    for (;;) {
      const page = await send('ListObjectsV2', () => client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) })));
      const keys = (page.Contents ?? []).flatMap((o) => (o.Key ? [o.Key] : []));
      if (keys.length) yield keys;
      if (!page.IsTruncated || !page.NextContinuationToken) return;
      token = page.NextContinuationToken;
    }
  }

  async function removeKeys(keys: string[]): Promise<void> {
    const answer = await send('DeleteObjects', () => client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } })));
    const failed = answer.Errors ?? [];
    if (failed.length) throw unavailable(Object.assign(new Error(`${failed[0]!.Key}: ${failed[0]!.Message}`), { name: failed[0]!.Code }), 'DeleteObjects');
  }

  return {
    async stage(source: Readable, key: string): Promise<StagedBlob> {
      assertKey(key);
      const marker = `${STAGING_PREFIX}${Date.now()}-${randomUUID()}/${key}`;
      let size = 0;
      let sourceError: Error | undefined;
      const counted = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          size += chunk.length;
          done(null, chunk);
        },
      });
      // pipeline, not pipe: it also sees a source that failed before anyone read it (a cap already passed).
      pipeline(source, counted, (err) => {
        if (err) sourceError ??= err;
      });
      // After the pipeline is joined, so a source that fails meanwhile has a listener; destroyed (and with
      // it the source) when the marker cannot be written.
      try {
        // ContentLength said: an empty string's is not measured, and the SDK then warns on stderr of a stream of unknown length.
        await send('PutObject', () => client.send(new PutObjectCommand({ Bucket: bucket, Key: marker, Body: '', ContentLength: 0 })));
      } catch (err) {
        counted.destroy();
        throw err;
      }
      // Left behind if this fails too: the sweep removes the object by its marker.
      const forget = () => removeKeys([key, marker]);
      try {
        await multipartUpload(key, counted).done();
      } catch (err) {
        // A multipart upload that failed is aborted by lib-storage; a whole object may still have landed.
        await forget().catch(() => {});
        // The source's failure (a client gone, a size cap) is the request's; the rest is the store's.
        throw sourceError ?? unavailable(err, 'upload');
      }
      if (sourceError) {
        await forget().catch(() => {});
        throw sourceError;
      }
      let committed = false;
      return {
        key,
        size,
        async commit() {
          await remove(marker);
          committed = true;
        },
        async discard() {
          if (!committed) await forget();
        },
      };
    },

    read: getObject,

    async copyToFile(key: string, file: string): Promise<Digest> {
      const body = await getObject(key);
      const hashing = digestingStream();
      const out = createWriteStream(file, { mode: 0o600 });
      let diskError: Error | undefined;
      out.once('error', (err) => (diskError = err));
      try {
        await pipelineAsync(body, hashing.stream, out);
      } catch (err) {
        // A full local disk is the disk's (507); a read cut off midway is the store's.
        throw diskError ?? unavailable(err, 'GetObject');
      }
      return hashing.digest();
    },

    async removeAll(prefix: string): Promise<void> {
      assertKey(prefix);
      for await (const keys of listKeys(`${prefix}/`)) await removeKeys(keys);
    },

    async remove(key: string): Promise<void> {
      assertKey(key);
      await remove(key);
    },

    async sweepStaged(ageMs: number): Promise<number> {
      const cutoff = Date.now() - ageMs;
      let removed = 0;
      for await (const keys of listKeys(STAGING_PREFIX)) {
        // Each old marker with the object it stands beside: the object first, so a failure leaves the marker to retry.
        const old = keys.flatMap((key) => {
          const match = MARKER.exec(key);
          return match && Number(match[1]) < cutoff ? [{ marker: key, object: match[2] }] : [];
        });
        const objects = old.flatMap((o) => (o.object ? [o.object] : []));
        if (objects.length) await removeKeys(objects);
        if (old.length) await removeKeys(old.map((o) => o.marker));
        removed += old.length;
      }
      return removed;
    },

    ...(options.presign
      ? {
          presign(key: string, fileName: string): Promise<string> {
            assertKey(key);
            const get = new GetObjectCommand({ Bucket: bucket, Key: key, ResponseContentDisposition: `attachment; filename="${fileName}"` });
            return send('presign', () => getSignedUrl(client, get, { expiresIn: PRESIGNED_URL_SECONDS }));
          },
        }
      : {}),
  };
}
