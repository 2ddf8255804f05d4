import type { FileHandle } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { Digest } from './digest.js';

/**
 * Where artifacts and protected packages live: the filesystem under the data directory by default;
 * an object store implements the same few operations. Keys are `/`-separated paths such as
 * `builds/bld_123/artifact`.
 */
export interface BlobStorage {
  /**
   * Streams `source` (never whole in memory) into the object `key` names once committed. The key
   * is one no other write uses (a new build's, a fresh package's, one attempt's chunk): an object
   * store writes the bytes there at once, so a commit copies nothing whatever the size. Nothing
   * reads the key before the caller records it, after the commit. It is not hashed on the way:
   * hashing would cost a request path a fifth of its throughput, and whoever reads the object next
   * (`copyToFile`) hashes it anyway. One neither committed nor discarded (a crash) is swept after a day.
   */
  stage(source: Readable, key: string): Promise<StagedBlob>;
  /** The object's bytes, all or the inclusive `range`; rejects with `BlobNotFoundError` before any byte is read. */
  read(key: string, range?: ByteRange): Promise<Readable>;
  /**
   * Where objects are local files: the object opened for reading (the caller closes it), so that a
   * sender can refill its own few buffers instead of a stream allocating one per chunk. Rejects with
   * `BlobNotFoundError`. An object store has no file and leaves it out.
   */
  open?(key: string): Promise<FileHandle>;
  /** Copies an object into a local file, for tools that need one (unpacking, bundling), and answers its size and SHA-256. */
  copyToFile(key: string, file: string): Promise<Digest>;
  /** Removes every object whose key starts with `prefix/`; nothing there is fine. */
  removeAll(prefix: string): Promise<void>;
  /** Removes one object; a missing one is fine. */
  remove(key: string): Promise<void>;
  /** Removes staged objects older than `ageMs` that a crash left behind; answers how many. */
  sweepStaged(ageMs: number): Promise<number>;
  /**
   * Where downloads no allowance meters may go straight to the store (an object store configured to):
   * a short-lived URL that answers a GET of the object, Range included, saved under `fileName`. Absent otherwise.
   */
  presign?(key: string, fileName: string): Promise<string>;
}

export interface StagedBlob {
  /** The key it was staged for. */
  key: string;
  size: number;
  /** Makes it the object at its key, for good: no sweep removes it any more. */
  commit(): Promise<void>;
  /** Forgets the object if it was not committed; harmless afterwards. */
  discard(): Promise<void>;
}

/** Inclusive byte offsets, as in an HTTP Range. */
export interface ByteRange {
  start: number;
  end: number;
}

export class BlobNotFoundError extends Error {
  constructor(key: string) {
    super(`no stored object ${key}`);
  }
}

/**
 * The store did not do what was asked (unreachable, credentials refused, its own failure): nothing is
 * wrong with the request, and retrying later may work. Answered 503 STORAGE_UNAVAILABLE.
 */
export class StorageUnavailableError extends Error {}

const KEY = /^[A-Za-z0-9_-]+(\/[A-Za-z0-9_.-]+)*$/;

/** Keys are made by the server from ids, never from user input; a bad one is a bug, caught here. */
export function assertKey(key: string): void {
  if (!KEY.test(key) || key.split('/').includes('..')) throw new Error(`invalid storage key ${JSON.stringify(key)}`);
}
