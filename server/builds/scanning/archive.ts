import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import yauzl from 'yauzl';
import { MAX_ARCHIVE_ENTRIES, MAX_EXPANSION_RATIO, unpackBudget } from './archive-limits.js';
import { rejected, ScanRefusal } from './findings.js';

export type ArchiveKind = 'zip' | 'tar.gz';

/** By content, not by name: a renamed archive is still unpacked and checked. */
export async function archiveKindOf(file: string): Promise<ArchiveKind | null> {
  const handle = await fs.open(file, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(4), 0, 4, 0);
    const magic = buffer.subarray(0, bytesRead);
    if (magic.length === 4 && magic.readUInt32BE(0) === 0x504b0304) return 'zip';
    if (magic.length >= 2 && magic[0] === 0x1f && magic[1] === 0x8b) return 'tar.gz';
    return null;
  } finally {
    await handle.close();
  }
}

/**
 * The entry's path inside the archive, `/`-separated; refused when it is absolute or climbs out
 * with `..` (a "zip slip": writing outside the folder it is unpacked into).
 */
export function safeEntryPath(name: string): string {
  const shown = JSON.stringify(name.length > 200 ? `${name.slice(0, 200)}...` : name);
  if (name.includes('\0')) throw rejected(`archive entry ${shown} has a NUL character in its path`);
  const slashed = name.replace(/\\/g, '/');
  if (slashed.startsWith('/') || /^[A-Za-z]:/.test(slashed)) throw rejected(`archive entry ${shown} has an absolute path`);
  const parts = slashed.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw rejected(`archive entry ${shown} points outside the archive (..)`);
  return parts.join('/');
}

/** Counts unpacked bytes against the budget, stopping a bomb as it goes off rather than after. */
class ExpansionGuard {
  private used = 0;
  constructor(private readonly budget: number) {}

  /** Declared sizes, checked before a byte is written. */
  expect(bytes: number): void {
    if (this.used + bytes > this.budget) throw this.bomb();
  }

  tap(): Transform {
    return new Transform({
      transform: (chunk: Buffer, _encoding, done) => {
        this.used += chunk.length;
        done(this.used > this.budget ? this.bomb() : null, chunk);
      },
    });
  }

  private bomb(): ScanRefusal {
    return rejected(`the archive expands past ${MAX_EXPANSION_RATIO} times its size (or ${this.budget} bytes): a decompression bomb`);
  }
}

/** Writes one entry; `guard` counts its bytes when they are not counted already (zip entries inflate one by one). */
async function writeEntry(dest: string, relative: string, content: Readable, guard?: ExpansionGuard): Promise<void> {
  const file = path.join(dest, ...relative.split('/'));
  await fs.mkdir(path.dirname(file), { recursive: true });
  const out = createWriteStream(file, { mode: 0o644 });
  await (guard ? pipeline(content, guard.tap(), out) : pipeline(content, out));
}

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;

/** yauzl's own complaints about a damaged or deceptive zip, as reasons a developer can act on. */
function zipProblem(err: Error): ScanRefusal | Error {
  if (err instanceof ScanRefusal) return err;
  if (/too many bytes|not enough bytes|invalid (comp|uncomp)ressed size/i.test(err.message)) {
    return rejected('zip entry sizes do not match their headers: a damaged or deceptive archive');
  }
  if (/encrypted/i.test(err.message)) return rejected('the zip has encrypted entries, which cannot be scanned');
  if (/unsupported compression method|invalid|end of central directory|corrupt|expected/i.test(err.message)) {
    return rejected(`the zip cannot be read: ${err.message}`);
  }
  return err;
}

async function unpackZip(file: string, dest: string, guard: ExpansionGuard, files: string[]): Promise<void> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    // decodeStrings off: yauzl would refuse bad names with an error; we say which entry and why.
    yauzl.open(file, { lazyEntries: true, decodeStrings: false, autoClose: true }, (err, z) => (err ? reject(zipProblem(err)) : resolve(z))),
  );
  if (zip.entryCount > MAX_ARCHIVE_ENTRIES) {
    zip.close();
    throw rejected(`the zip has ${zip.entryCount} entries; at most ${MAX_ARCHIVE_ENTRIES} are accepted`);
  }
  const openEntry = (entry: yauzl.Entry) =>
    new Promise<Readable>((resolve, reject) => zip.openReadStream(entry, (err, stream) => (err ? reject(err) : resolve(stream))));
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', resolve);
      zip.on('entry', (entry: yauzl.Entry) => {
        (async () => {
          const name = safeEntryPath(yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, entry.fileNameRaw, entry.extraFields, false));
          const type = (entry.externalFileAttributes >>> 16) & S_IFMT;
          if (type !== 0 && type !== S_IFREG && type !== S_IFDIR) throw rejected(`zip entry ${JSON.stringify(name)} is a link or special file`);
          if (name === '' || type === S_IFDIR || /[\\/]$/.test(entry.fileNameRaw.toString('latin1'))) {
            await fs.mkdir(path.join(dest, name), { recursive: true });
          } else {
            guard.expect(entry.uncompressedSize);
            await writeEntry(dest, name, await openEntry(entry), guard);
            files.push(name);
          }
        })().then(() => zip.readEntry(), reject);
      });
      zip.readEntry();
    });
  } catch (err) {
    zip.close();
    throw zipProblem(err as Error);
  }
}

const TAR_FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);

async function unpackTarGz(file: string, dest: string, guard: ExpansionGuard, files: string[]): Promise<void> {
  const parser = new Parser({ strict: true });
  const writes: Promise<void>[] = [];
  let failure: Error | undefined;
  // Kept, not thrown, until the stream is through: an entry's error must not go unhandled meanwhile.
  const track = (work: Promise<unknown>) => writes.push(work.then(() => undefined, (err: Error) => void (failure ??= err)));
  parser.on('entry', (entry: ReadEntry) => {
    try {
      if (failure) throw failure;
      if (files.length >= MAX_ARCHIVE_ENTRIES) throw rejected(`the archive has over ${MAX_ARCHIVE_ENTRIES} entries`);
      const name = safeEntryPath(entry.path);
      if (entry.type === 'Directory') {
        track(fs.mkdir(path.join(dest, name), { recursive: true }));
        entry.resume();
      } else if (TAR_FILE_TYPES.has(entry.type) && name !== '') {
        files.push(name);
        // The gzip layer is guarded as it inflates, so entries need no guard of their own.
        track(writeEntry(dest, name, Readable.from(entry)));
      } else {
        throw rejected(`archive entry ${JSON.stringify(name || entry.path)} is a link or special file (${entry.type})`);
      }
    } catch (err) {
      failure ??= err as Error;
      entry.resume();
    }
  });
  try {
    await pipeline(createReadStream(file), createGunzip(), guard.tap(), parser);
  } catch (err) {
    if (err instanceof ScanRefusal) throw err;
    throw rejected(`the tar.gz archive cannot be read: ${(err as Error).message}`);
  }
  await Promise.all(writes);
  if (failure) throw failure;
}

/**
 * Unpacks a zip or tar.gz into `dest` for scanning and bundling, refusing (a `ScanRefusal`) paths
 * that leave the archive, links, and archives that expand past the budget. Answers the files
 * written, as `/`-separated paths relative to `dest`.
 */
export async function unpackArchive(file: string, kind: ArchiveKind, dest: string): Promise<string[]> {
  const { size } = await fs.stat(file);
  const guard = new ExpansionGuard(unpackBudget(size));
  const files: string[] = [];
  await fs.mkdir(dest, { recursive: true });
  if (kind === 'zip') await unpackZip(file, dest, guard, files);
  else await unpackTarGz(file, dest, guard, files);
  return files;
}
