import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { BlobNotFoundError, StorageUnavailableError, type BlobStorage } from '../../server/storage/blob-storage.js';
import { createFilesystemStorage } from '../../server/storage/filesystem.js';
import { createS3Storage } from '../../server/storage/s3.js';
import { S3_CLIENT_ENV, startS3Server } from '../support/s3-server.js';

// The storage contract (server/storage/blob-storage.ts), the same tests over every implementation:
// the filesystem under a directory, and S3 against a real S3 protocol server (s3rver) on 127.0.0.1.

Object.assign(process.env, S3_CLIENT_ENV); // the AWS SDK's default credential chain reads the keys
const s3 = await startS3Server();
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-blob-storage-'));
afterAll(async () => {
  await s3.close();
  fs.rmSync(work, { recursive: true, force: true });
});

const s3Options = { bucket: s3.bucket, region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true, presign: false };
let stores = 0;
const implementations: [string, () => BlobStorage][] = [
  ['filesystem', () => createFilesystemStorage(path.join(work, `store-${++stores}`))],
  ['s3', () => createS3Storage(s3Options)],
];

const bytes = (n: number, seed = 1) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) % 251));
const text = async (stream: Readable) => Buffer.concat(await stream.toArray());
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
/** A stream that gives `head` and then fails, as a request body cut off by its client. */
function failingAfter(head: Buffer, error: Error): Readable {
  const source = new PassThrough();
  // As a request body is: its failure is reported to whoever reads it, not thrown.
  source.on('error', () => {});
  source.write(head);
  setImmediate(() => source.destroy(error));
  return source;
}

describe.each(implementations)('%s storage', (_name, create) => {
  let storage: BlobStorage;
  let prefix: string;
  beforeEach(async () => {
    storage = create();
    // Every test in its own key space: the S3 bucket is shared by the file.
    prefix = `t${Math.random().toString(36).slice(2)}`;
    await storage.sweepStaged(0);
  });

  it('stages a stream, commits it under a key, and reads it whole or by an inclusive range', async () => {
    const data = bytes(3 * 1024 * 1024 + 17);
    const staged = await storage.stage(Readable.from([data.subarray(0, 1000), data.subarray(1000)]), `${prefix}/a/artifact`);
    expect(staged).toMatchObject({ key: `${prefix}/a/artifact`, size: data.length });
    await staged.commit();
    expect((await text(await storage.read(`${prefix}/a/artifact`))).equals(data)).toBe(true);
    expect((await text(await storage.read(`${prefix}/a/artifact`, { start: 10, end: 19 }))).equals(data.subarray(10, 20))).toBe(true);
    // A committed object is no longer staged: nothing for a sweep.
    expect(await storage.sweepStaged(0)).toBe(0);
  });

  it('stages an empty stream as an empty object', async () => {
    const staged = await storage.stage(Readable.from([]), `${prefix}/empty`);
    expect(staged.size).toBe(0);
    await staged.commit();
    expect((await text(await storage.read(`${prefix}/empty`))).length).toBe(0);
  });

  it('discard after commit keeps the object', async () => {
    const staged = await storage.stage(Readable.from([bytes(50, 2)]), `${prefix}/k`);
    await staged.commit();
    await staged.discard();
    expect((await text(await storage.read(`${prefix}/k`))).equals(bytes(50, 2))).toBe(true);
  });

  it('discard forgets a staged object: nothing is left to read or to sweep', async () => {
    const staged = await storage.stage(Readable.from([bytes(10)]), `${prefix}/d`);
    await staged.discard();
    await expect(storage.read(`${prefix}/d`)).rejects.toBeInstanceOf(BlobNotFoundError);
    expect(await storage.sweepStaged(0)).toBe(0);
  });

  it('copies an object to a local file with its size and SHA-256', async () => {
    const data = bytes(1024 * 1024 + 3);
    await (await storage.stage(Readable.from([data]), `${prefix}/copy`)).commit();
    const file = path.join(work, `${prefix}-copy`);
    expect(await storage.copyToFile(`${prefix}/copy`, file)).toEqual({ size: data.length, sha256: sha256(data) });
    expect(fs.readFileSync(file).equals(data)).toBe(true);
  });

  it('answers BlobNotFoundError for a missing object, before any byte', async () => {
    await expect(storage.read(`${prefix}/missing`)).rejects.toBeInstanceOf(BlobNotFoundError);
    await expect(storage.read(`${prefix}/missing`, { start: 0, end: 1 })).rejects.toBeInstanceOf(BlobNotFoundError);
    await expect(storage.copyToFile(`${prefix}/missing`, path.join(work, `${prefix}-missing`))).rejects.toBeInstanceOf(BlobNotFoundError);
  });

  it('removes one object, or every object under a prefix and nothing beside it; missing ones are fine', async () => {
    for (const key of [`${prefix}/app/b1/artifact`, `${prefix}/app/b1/package`, `${prefix}/app/b10/artifact`, `${prefix}/other`]) {
      await (await storage.stage(Readable.from([bytes(5)]), key)).commit();
    }
    await storage.removeAll(`${prefix}/app/b1`);
    await expect(storage.read(`${prefix}/app/b1/artifact`)).rejects.toBeInstanceOf(BlobNotFoundError);
    await expect(storage.read(`${prefix}/app/b1/package`)).rejects.toBeInstanceOf(BlobNotFoundError);
    expect((await text(await storage.read(`${prefix}/app/b10/artifact`))).length).toBe(5);
    await storage.remove(`${prefix}/other`);
    await expect(storage.read(`${prefix}/other`)).rejects.toBeInstanceOf(BlobNotFoundError);
    await storage.remove(`${prefix}/other`);
    await storage.removeAll(`${prefix}/nothing-here`);
  });

  it('sweeps staged objects by age: a fresh one stays, an old one goes, and nothing of it is left at its key', async () => {
    const staged = await storage.stage(Readable.from([bytes(10)]), `${prefix}/abandoned`);
    expect(await storage.sweepStaged(3_600_000)).toBe(0);
    await new Promise((r) => setTimeout(r, 5));
    expect(await storage.sweepStaged(1)).toBe(1);
    await expect(storage.read(`${prefix}/abandoned`)).rejects.toBeInstanceOf(BlobNotFoundError);
    await staged.discard();
  });

  it("rejects with the source's own error when the source fails, and keeps nothing of it", async () => {
    const cutOff = new Error('client gone');
    await expect(storage.stage(failingAfter(bytes(64 * 1024), cutOff), `${prefix}/cut`)).rejects.toBe(cutOff);
    await expect(storage.read(`${prefix}/cut`)).rejects.toBeInstanceOf(BlobNotFoundError);
    // Failed before anything read it (a size cap passed at once).
    const early = new PassThrough();
    const capped = new Error('too large');
    early.on('error', () => {});
    early.destroy(capped);
    await expect(storage.stage(early, `${prefix}/early`)).rejects.toBe(capped);
    await expect(storage.read(`${prefix}/early`)).rejects.toBeInstanceOf(BlobNotFoundError);
    expect(await storage.sweepStaged(0)).toBe(0);
  });

  it('refuses keys it never makes', async () => {
    const attempt = (run: () => Promise<unknown>) => Promise.resolve().then(run);
    await expect(attempt(() => storage.read('../etc/passwd'))).rejects.toThrow(/invalid storage key/);
    await expect(attempt(() => storage.removeAll('a/../../b'))).rejects.toThrow(/invalid storage key/);
  });
});

describe('s3 storage', () => {
  it('removes every object under a prefix past one page of a listing (1,000 keys)', { timeout: 120_000 }, async () => {
    const storage = createS3Storage(s3Options);
    const keys = Array.from({ length: 1010 }, (_, i) => `paged/app/${String(i).padStart(4, '0')}`);
    for (let i = 0; i < keys.length; i += 50) {
      await Promise.all(keys.slice(i, i + 50).map(async (key) => (await storage.stage(Readable.from([bytes(3)]), key)).commit()));
    }
    expect(await s3.keys('paged/')).toHaveLength(1010);
    await storage.removeAll('paged/app');
    expect(await s3.keys('paged/')).toEqual([]);
  });

  it('writes a staged object straight to its key, in parts, so nothing is copied at any size (S3 copies at most 5 GiB)', async () => {
    const storage = createS3Storage(s3Options);
    const data = randomBytes(12 * 1024 * 1024 + 123);
    const staged = await storage.stage(Readable.from([data]), 'large/artifact');
    // Until the commit, a marker beside it names it for the sweep.
    expect(await s3.keys('large/')).toEqual(['large/artifact']);
    expect(await s3.keys('staging/')).toEqual([expect.stringMatching(/^staging\/\d{13}-[0-9a-f-]{36}\/large\/artifact$/)]);
    await staged.commit();
    expect(await s3.keys('staging/')).toEqual([]);
    expect(await storage.copyToFile('large/artifact', path.join(work, 'large-copy'))).toEqual({ size: data.length, sha256: sha256(data) });
    const across = { start: 5 * 1024 * 1024 - 100, end: 10 * 1024 * 1024 + 100 };
    const range = await text(await storage.read('large/artifact', across));
    expect(sha256(range)).toBe(sha256(data.subarray(across.start, across.end + 1)));
    await storage.remove('large/artifact');
  });
});

describe('s3 storage failures', () => {
  it('answer StorageUnavailableError for a bucket that is not there, and for refused credentials', async () => {
    const missingBucket = createS3Storage({ ...s3Options, bucket: 'no-such-bucket' });
    await expect(missingBucket.read('a/b')).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(missingBucket.stage(Readable.from([bytes(10)]), 'a/b')).rejects.toBeInstanceOf(StorageUnavailableError);
    const keys = process.env.AWS_ACCESS_KEY_ID;
    process.env.AWS_ACCESS_KEY_ID = 'SOMEONE-ELSE';
    try {
      const refused = createS3Storage(s3Options);
      await expect(refused.read('a/b')).rejects.toThrow(StorageUnavailableError);
      await expect(refused.read('a/b')).rejects.toThrow(/InvalidAccessKeyId|AccessDenied/);
    } finally {
      process.env.AWS_ACCESS_KEY_ID = keys;
    }
  });

  it('answer StorageUnavailableError while the endpoint does not answer, and keep what was stored', async () => {
    const storage = createS3Storage(s3Options);
    await (await storage.stage(Readable.from([bytes(100)]), 'kept/object')).commit();
    await s3.pause();
    try {
      await expect(storage.read('kept/object')).rejects.toBeInstanceOf(StorageUnavailableError);
      await expect(storage.stage(Readable.from([bytes(100)]), 'kept/other')).rejects.toBeInstanceOf(StorageUnavailableError);
      await expect(storage.removeAll('kept')).rejects.toBeInstanceOf(StorageUnavailableError);
    } finally {
      await s3.resume();
    }
    expect((await text(await storage.read('kept/object'))).equals(bytes(100))).toBe(true);
    expect(await s3.keys('staging/')).toEqual([]);
  });
});
