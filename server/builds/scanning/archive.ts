import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import yauzl from 'yauzl';
import { checkLinks, placeLinks, type ArchiveLink } from './archive-links.js';
import { MAX_ARCHIVE_DEPTH, MAX_ARCHIVE_ENTRIES, MAX_EXPANSION_RATIO, unpackBudget } from './archive-limits.js';
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

/**
 * Counts unpacked bytes and entries against the budget, stopping a bomb as it goes off rather than
 * after. One guard serves an artifact and every archive nested in it.
 */
class ExpansionGuard {
  private used = 0;
  private entries = 0;
  constructor(private readonly budget: number) {}

  /** Entries about to be unpacked (a zip declares them all at once; a tar one by one). */
  expectEntries(count: number, what: string): void {
    this.entries += count;
    if (this.entries > MAX_ARCHIVE_ENTRIES) throw rejected(`${what} would unpack more than ${MAX_ARCHIVE_ENTRIES} entries in all, the most accepted`);
  }

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

/** Reads an entry to its end and keeps nothing: a listing (`dest` null) still counts the bytes a bomb would write. */
const discard = () => new Writable({ write: (_chunk, _encoding, done) => done() });

/**
 * Refusals of the filesystem that the archive's own layout causes (a file and a folder of one name,
 * a name too long): the archive is refused, the job is not retried, and no server path is shown.
 * Anything else (a full disk) is the server's and stays an error, retried.
 */
const LAYOUT_ERRORS = new Set(['EEXIST', 'ENOTDIR', 'EISDIR', 'ENAMETOOLONG', 'ELOOP']);

function layoutRefusal(err: unknown, relative: string): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  return code !== undefined && LAYOUT_ERRORS.has(code)
    ? rejected(`archive entry ${JSON.stringify(relative)} cannot be unpacked (${code}): its name clashes with another entry's`)
    : err;
}

/** Makes an entry's folder; `relative` names it in a refusal. */
async function makeFolder(dest: string, relative: string): Promise<void> {
  await fs.mkdir(path.join(dest, ...relative.split('/')), { recursive: true }).catch((err: unknown) => {
    throw layoutRefusal(err, relative);
  });
}

/** Resolves once a file stream let go of its file: none of its writes or its opening is still under way. */
const released = (out: Writable) => new Promise<void>((resolve) => (out.closed ? resolve() : out.once('close', () => resolve())));

/**
 * Writes one entry (or, listing, reads it); `guard` counts its bytes when they are not counted
 * already (zip entries inflate one by one). Stopped by `signal`; settles only once its file is
 * closed, so nothing is written into the folder after an abort was answered.
 */
async function writeEntry(dest: string | null, relative: string, content: Readable, signal: AbortSignal, guard?: ExpansionGuard): Promise<void> {
  if (dest === null) {
    await (guard ? pipeline(content, guard.tap(), discard(), { signal }) : pipeline(content, discard(), { signal }));
    return;
  }
  const file = path.join(dest, ...relative.split('/'));
  let out: Writable | undefined;
  try {
    signal.throwIfAborted();
    await fs.mkdir(path.dirname(file), { recursive: true });
    signal.throwIfAborted();
    out = createWriteStream(file, { mode: 0o600 });
    await (guard ? pipeline(content, guard.tap(), out, { signal }) : pipeline(content, out, { signal }));
  } catch (err) {
    content.destroy();
    if (out) {
      out.destroy();
      await released(out);
    }
    throw signal.aborted ? signal.reason : layoutRefusal(err, relative);
  }
}

/**
 * Entries as the archive lists them, refused the moment one clashes with another: a file that
 * another entry is inside of (`a`, then `a/b`, in either order), or a name that is a file and a
 * folder. No filesystem holds both; refused while reading, before anything is written, and the
 * same whether listing or unpacking, whatever order the writes finish in.
 */
class LayoutGuard {
  /** Files: names that cannot have anything inside them (entries under a link are checkLinks' to refuse). */
  private readonly leaves = new Set<string>();
  /** Folders, listed or implied by an entry inside them. */
  private readonly folders = new Set<string>();

  leaf(name: string): void {
    if (this.folders.has(name)) throw rejected(`archive entry ${JSON.stringify(name)} is a file, and a folder of other entries`);
    this.parents(name);
    this.leaves.add(name);
  }

  folder(name: string): void {
    if (this.leaves.has(name)) throw rejected(`archive entry ${JSON.stringify(name)} is a folder, and a file of the archive`);
    this.parents(name);
    this.folders.add(name);
  }

  private parents(name: string): void {
    const parts = name.split('/');
    for (let depth = 1; depth < parts.length; depth++) {
      const parent = parts.slice(0, depth).join('/');
      if (this.leaves.has(parent)) throw rejected(`archive entry ${JSON.stringify(name)} is inside ${JSON.stringify(parent)}, which the archive also holds as a file`);
      this.folders.add(parent);
    }
  }
}

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;
/** A zip stores a link's target as its content. */
const MAX_LINK_TARGET_BYTES = 4096;

/** What an archive holds besides its files: folders and symbolic links, checked together once all are read. */
interface Contents {
  files: string[];
  folders: string[];
  links: ArchiveLink[];
}

async function readLinkTarget(content: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of content as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_LINK_TARGET_BYTES) break;
    chunks.push(chunk);
  }
  content.destroy();
  // Longer than any real target: checkLinks refuses it.
  return size > MAX_LINK_TARGET_BYTES ? 'x'.repeat(MAX_LINK_TARGET_BYTES + 1) : Buffer.concat(chunks).toString('utf8');
}

/**
 * yauzl's own complaints about a damaged or deceptive zip, as reasons a developer can act on. Every
 * error of the zip's reading is the archive's (refused); only the filesystem's (an errno code other
 * than zlib's `Z_...`) is the server's and stays an error.
 */
function zipProblem(err: Error): ScanRefusal | Error {
  if (err instanceof ScanRefusal) return err;
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== undefined && !code.startsWith('Z_')) return err;
  if (/too many bytes|not enough bytes|invalid (comp|uncomp)ressed size/i.test(err.message)) {
    return rejected('zip entry sizes do not match their headers: a damaged or deceptive archive');
  }
  if (/encrypted/i.test(err.message)) return rejected('the zip has encrypted entries, which cannot be scanned');
  return rejected(`the zip cannot be read: ${err.message}`);
}

async function unpackZip(file: string, dest: string | null, guard: ExpansionGuard, contents: Contents, signal: AbortSignal): Promise<void> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    // decodeStrings off: yauzl would refuse bad names with an error; we say which entry and why.
    yauzl.open(file, { lazyEntries: true, decodeStrings: false, autoClose: true }, (err, z) => (err ? reject(zipProblem(err)) : resolve(z))),
  );
  try {
    guard.expectEntries(zip.entryCount, `a zip of ${zip.entryCount} entries`);
  } catch (err) {
    zip.close();
    throw err;
  }
  const layout = new LayoutGuard();
  const openEntry = (entry: yauzl.Entry) => new Promise<Readable>((resolve, reject) => zip.openReadStream(entry, (err, stream) => (err ? reject(err) : resolve(stream))));
  // The entry being written, stopped and waited for when the zip fails while it is: nothing is written after this settles.
  const stopEntry = new AbortController();
  const writing = AbortSignal.any([signal, stopEntry.signal]);
  let current: Promise<void> = Promise.resolve();
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', resolve);
      zip.on('entry', (entry: yauzl.Entry) => {
        current = (async () => {
          signal.throwIfAborted();
          const name = safeEntryPath(yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, entry.fileNameRaw, entry.extraFields, false));
          const type = (entry.externalFileAttributes >>> 16) & S_IFMT;
          if (type === S_IFLNK && name !== '') {
            contents.links.push({ name, target: await readLinkTarget(await openEntry(entry)) });
          } else if (type !== 0 && type !== S_IFREG && type !== S_IFDIR) {
            throw rejected(`zip entry ${JSON.stringify(name)} is a special file`);
          } else if (name === '' || type === S_IFDIR || /[\\/]$/.test(entry.fileNameRaw.toString('latin1'))) {
            if (name !== '') layout.folder(name);
            if (dest !== null) await makeFolder(dest, name);
            if (name !== '') contents.folders.push(name);
          } else {
            layout.leaf(name);
            guard.expect(entry.uncompressedSize);
            await writeEntry(dest, name, await openEntry(entry), writing, guard);
            contents.files.push(name);
          }
        })().then(() => zip.readEntry(), reject);
      });
      zip.readEntry();
    });
  } catch (err) {
    stopEntry.abort(err);
    await current.catch(() => undefined);
    zip.close();
    throw signal.aborted ? signal.reason : zipProblem(err as Error);
  }
}

const TAR_FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);

/**
 * A tar, gzipped or not: the guard counts the bytes as they leave the gzip layer (or the file).
 * Entries are written while the archive is still read; however reading ends (done, refused, or
 * `signal`), it settles only once every write has, stopping them first when it did not finish.
 */
async function unpackTar(file: string, gzipped: boolean, dest: string | null, guard: ExpansionGuard, contents: Contents, signal: AbortSignal): Promise<void> {
  const stopWrites = new AbortController();
  const writing = AbortSignal.any([signal, stopWrites.signal]);
  const parser = new Parser({ strict: true });
  const layout = new LayoutGuard();
  const writes: Promise<void>[] = [];
  let failure: Error | undefined;
  // Kept, not thrown, until the stream is through: an entry's error must not go unhandled meanwhile.
  const track = (work: Promise<unknown>) =>
    writes.push(
      work.then(
        () => undefined,
        (err: Error) => void (failure ??= err),
      ),
    );
  parser.on('entry', (entry: ReadEntry) => {
    // Entries the parser had queued keep coming once the writes are stopped: none may start another.
    if (writing.aborted) {
      entry.resume();
      return;
    }
    try {
      if (failure) throw failure;
      guard.expectEntries(1, 'the tar');
      const name = safeEntryPath(entry.path);
      if (entry.type === 'Directory') {
        if (name !== '') layout.folder(name);
        if (dest !== null) track(makeFolder(dest, name));
        if (name !== '') contents.folders.push(name);
        entry.resume();
      } else if (TAR_FILE_TYPES.has(entry.type) && name !== '') {
        layout.leaf(name);
        contents.files.push(name);
        // The gzip layer is guarded as it inflates, so entries need no guard of their own. An entry
        // that cannot be written is still read to its end: the parser waits for it before the next.
        track(
          writeEntry(dest, name, Readable.from(entry), writing).catch((err: unknown) => {
            entry.resume();
            throw err;
          }),
        );
      } else if (entry.type === 'SymbolicLink' && name !== '') {
        contents.links.push({ name, target: entry.linkpath ?? '' });
        entry.resume();
      } else {
        throw rejected(`archive entry ${JSON.stringify(name || entry.path)} is a hard link or special file (${entry.type})`);
      }
    } catch (err) {
      failure ??= err as Error;
      entry.resume();
    }
  });
  try {
    await (gzipped ? pipeline(createReadStream(file), createGunzip(), guard.tap(), parser, { signal }) : pipeline(createReadStream(file), guard.tap(), parser, { signal }));
  } catch (err) {
    // The parser is gone, so the entries being written will never end: stop them, and wait.
    stopWrites.abort(err);
    await Promise.all(writes);
    if (signal.aborted) throw signal.reason;
    if (err instanceof ScanRefusal) throw err;
    throw rejected(`the ${gzipped ? 'tar.gz' : 'tar'} archive cannot be read: ${(err as Error).message}`);
  }
  await Promise.all(writes);
  if (failure) throw failure;
}

/** A file to scan, and how a finding names it: its path through the archives (`app.zip: lib/inner.zip: readme.txt`). */
export interface NestedFile {
  file: string;
  shownAs: string;
}

type NestedKind = 'zip' | 'gzip' | 'tar';

/** Magic numbers: a zip, a gzip (perhaps of a tar), or a POSIX tar ("ustar" at offset 257). */
async function nestedKindOf(file: string): Promise<NestedKind | null> {
  const handle = await fs.open(file, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(262), 0, 262, 0);
    if (bytesRead >= 4 && buffer.readUInt32BE(0) === 0x504b0304) return 'zip';
    if (bytesRead >= 2 && buffer[0] === 0x1f && buffer[1] === 0x8b) return 'gzip';
    if (bytesRead === 262 && buffer.toString('latin1', 257, 262) === 'ustar') return 'tar';
    return null;
  } finally {
    await handle.close();
  }
}

/** Whether a gzip holds a tar: its first 262 inflated bytes carry the tar magic. */
async function gzipHoldsTar(file: string, signal: AbortSignal): Promise<boolean> {
  let head = Buffer.alloc(0);
  await pipeline(
    createReadStream(file),
    createGunzip(),
    async (chunks: AsyncIterable<Buffer>) => {
      for await (const chunk of chunks) {
        head = Buffer.concat([head, chunk]);
        if (head.length >= 262) return;
      }
    },
    { signal },
  ).catch(() => {
    // Stopped once the head was read (an abort), or a damaged gzip, which unpacking it as a file reports.
  });
  signal.throwIfAborted();
  return head.length >= 262 && head.toString('latin1', 257, 262) === 'ustar';
}

/**
 * The unpacking of one artifact: the artifact itself and every archive nested in it (a zip in a
 * zip, a zip in a tar.gz, a lone gzipped file) draw on one budget, the outer archive's, so nesting
 * cannot multiply what a bomb may expand to, and archives nested deeper than `MAX_ARCHIVE_DEPTH`
 * are refused rather than passed unscanned.
 */
export class ArtifactUnpacker {
  private nestedCount = 0;
  private constructor(
    private readonly guard: ExpansionGuard,
    private readonly signal: AbortSignal,
  ) {}

  /**
   * `signal` (a job's) stops the unpacking: it then rejects with the signal's reason, once nothing
   * it started is still writing, so the caller may remove the folder at once.
   */
  static async of(artifact: string, signal: AbortSignal = new AbortController().signal): Promise<ArtifactUnpacker> {
    const { size } = await fs.stat(artifact);
    return new ArtifactUnpacker(new ExpansionGuard(unpackBudget(size)), signal);
  }

  /**
   * Unpacks the artifact, a zip or tar.gz, into `dest` for scanning and bundling, refusing (a
   * `ScanRefusal`) paths that leave the archive, hard links and special files, symbolic links that
   * lead out of it (an `ArchiveLinkRefusal`), and archives that expand past the budget. Links that
   * stay inside are made once every file is written. Answers the files written (links are not
   * listed: what they point to is), as `/`-separated paths relative to `dest`.
   */
  async unpack(file: string, kind: ArchiveKind, dest: string): Promise<string[]> {
    const contents = await this.read(file, kind, dest);
    await placeLinks(dest, contents.links);
    return contents.files;
  }

  /**
   * What `unpack` would find, without writing anything: the upload's quick check, before a build
   * is made. Throws the refusals `unpack` would.
   */
  async list(file: string, kind: ArchiveKind): Promise<{ files: string[]; links: ArchiveLink[] }> {
    return this.read(file, kind, null);
  }

  private async read(file: string, kind: ArchiveKind, dest: string | null): Promise<Contents> {
    const contents: Contents = { files: [], folders: [], links: [] };
    if (dest !== null) await fs.mkdir(dest, { recursive: true });
    if (kind === 'zip') await unpackZip(file, dest, this.guard, contents, this.signal);
    else await unpackTar(file, true, dest, this.guard, contents, this.signal);
    checkLinks(contents.links, [...contents.files, ...contents.folders]);
    return contents;
  }

  /**
   * Unpacks every archive among `candidates` (the artifact's own files, level 2, or the artifact
   * itself, level 1, when it may be a plain tar) into folders under `scratch`, and the archives in
   * those, level by level; answers every file found inside them, named after the candidate they came from.
   */
  async unpackNested(candidates: NestedFile[], level: 1 | 2, scratch: string): Promise<NestedFile[]> {
    const found: NestedFile[] = [];
    let current = candidates;
    for (let depth: number = level; current.length > 0; depth++) {
      const next: NestedFile[] = [];
      for (const outer of current) {
        const kind = await nestedKindOf(outer.file);
        if (!kind) continue;
        if (depth > MAX_ARCHIVE_DEPTH) throw rejected(`${outer.shownAs} is an archive nested more than ${MAX_ARCHIVE_DEPTH} levels deep`);
        const dest = path.join(scratch, String(this.nestedCount++));
        let inside: string[];
        try {
          inside = await this.unpackNestedArchive(outer.file, kind, dest);
        } catch (err) {
          if (err instanceof ScanRefusal) throw rejected(`${outer.shownAs}: ${err.finding.reason}`);
          throw err;
        }
        for (const relative of inside) next.push({ file: path.join(dest, ...relative.split('/')), shownAs: `${outer.shownAs}: ${relative}` });
      }
      found.push(...next);
      current = next;
    }
    return found;
  }

  /** Links inside nested archives are checked like the artifact's own, but not made: only their files are scanned. */
  private async unpackNestedArchive(file: string, kind: NestedKind, dest: string): Promise<string[]> {
    const contents: Contents = { files: [], folders: [], links: [] };
    const files = contents.files;
    await fs.mkdir(dest, { recursive: true });
    if (kind === 'zip') await unpackZip(file, dest, this.guard, contents, this.signal);
    else if (kind === 'tar') await unpackTar(file, false, dest, this.guard, contents, this.signal);
    else if (await gzipHoldsTar(file, this.signal)) await unpackTar(file, true, dest, this.guard, contents, this.signal);
    else {
      // A lone gzipped file (`data.json.gz`): its content, named without the suffix.
      const name = path.basename(file).replace(/\.t?gz$/i, '') || 'content';
      this.guard.expectEntries(1, 'a gzip');
      const out = createWriteStream(path.join(dest, name), { mode: 0o600 });
      try {
        await pipeline(createReadStream(file), createGunzip(), this.guard.tap(), out, { signal: this.signal });
      } catch (err) {
        await released(out);
        if (this.signal.aborted) throw this.signal.reason;
        if (err instanceof ScanRefusal) throw err;
        throw rejected(`the gzip cannot be read: ${(err as Error).message}`);
      }
      files.push(name);
    }
    checkLinks(contents.links, [...contents.files, ...contents.folders]);
    return files;
  }
}
