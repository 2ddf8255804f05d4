import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { assertKey, BlobNotFoundError, type BlobStorage, type ByteRange, type StagedBlob } from './blob-storage.js';
import { digestFile } from './digest.js';

/** Where staged objects wait: inside the root, so committing is a rename on the same filesystem. */
const STAGING_DIR = '.staging';

/** Large chunks: artifacts run to gigabytes, and fewer, bigger writes keep the CPU cost per byte low. */
const CHUNK_BYTES = 1024 * 1024;

/**
 * Artifacts and protected packages are the developers' property: only the server's user reads
 * them. Modes are given at creation (a umask can only narrow them further).
 */
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

const isMissing = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

/** Objects as files under `root`; several server processes may share it (a network filesystem). */
export function createFilesystemStorage(root: string): BlobStorage {
  const staging = path.join(root, STAGING_DIR);
  const fileOf = (key: string) => {
    assertKey(key);
    return path.join(root, ...key.split('/'));
  };
  const open = async (key: string): Promise<fs.FileHandle> => {
    try {
      return await fs.open(fileOf(key), 'r');
    } catch (err) {
      if (isMissing(err)) throw new BlobNotFoundError(key);
      throw err;
    }
  };

  return {
    async stage(source: Readable, key: string): Promise<StagedBlob> {
      const target = fileOf(key);
      await fs.mkdir(staging, { recursive: true, mode: DIR_MODE });
      const file = path.join(staging, randomUUID());
      const out = createWriteStream(file, { highWaterMark: CHUNK_BYTES, mode: FILE_MODE });
      try {
        await pipeline(source, out);
      } catch (err) {
        // Nothing half-written is kept, whatever stopped the write (a full disk, a client gone).
        await fs.rm(file, { force: true });
        throw err;
      }
      return {
        key,
        size: out.bytesWritten,
        async commit() {
          await fs.mkdir(path.dirname(target), { recursive: true, mode: DIR_MODE });
          await fs.rename(file, target);
        },
        discard: () => fs.rm(file, { force: true }),
      };
    },

    async read(key: string, range?: ByteRange): Promise<Readable> {
      const handle = await open(key);
      // The stream owns the handle from here and closes it at its end, on error and on destroy.
      return handle.createReadStream({ highWaterMark: CHUNK_BYTES, ...(range ? { start: range.start, end: range.end } : {}) });
    },

    open,

    async copyToFile(key: string, file: string) {
      try {
        // The kernel copies (or clones) the file; hashing the copy reads it from the page cache.
        await fs.copyFile(fileOf(key), file);
      } catch (err) {
        if (isMissing(err)) throw new BlobNotFoundError(key);
        throw err;
      }
      return digestFile(file);
    },

    removeAll: (prefix: string) => fs.rm(fileOf(prefix), { recursive: true, force: true }),

    remove: (key: string) => fs.rm(fileOf(key), { force: true }),

    async sweepStaged(ageMs: number): Promise<number> {
      const names = await fs.readdir(staging).catch((err) => (isMissing(err) ? [] : Promise.reject(err)));
      const cutoff = Date.now() - ageMs;
      let removed = 0;
      for (const name of names) {
        const file = path.join(staging, name);
        const stat = await fs.stat(file).catch(() => undefined);
        if (stat && stat.mtimeMs < cutoff) {
          await fs.rm(file, { force: true });
          removed++;
        }
      }
      return removed;
    },
  };
}

/** A local file as a stream, with the storage's chunk size. */
export const readLocalFile = (file: string): Readable => createReadStream(file, { highWaterMark: CHUNK_BYTES });
