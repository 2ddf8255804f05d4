/**
 * The filesystem as the installers and the updater's state see it. One seam, so the Windows and
 * macOS strategies run on Linux against a fake that enforces those systems' rules (a running
 * executable can be renamed but not overwritten, a folder holding one cannot be renamed, antivirus
 * holds a file for a moment). The download streams into the cache with node:fs directly (the cache
 * is the updater's own folder, and nothing outside it is touched before the bytes verify); only its
 * final rename to the verified name goes through this seam, for the Windows retries.
 */
import fs from 'node:fs/promises';
import path from 'node:path';

export interface FileStat {
  isDirectory: boolean;
  mode: number;
  size: number;
  dev: number;
  ino: number;
  /** Last modified, by the filesystem's clock (ms since the epoch); optional for seams written before it. */
  mtimeMs?: number;
}

export interface UpdateFs {
  /** Like lstat; undefined when nothing is there. */
  stat(file: string): Promise<FileStat | undefined>;
  rename(from: string, to: string): Promise<void>;
  /** A second name for a file (POSIX): the running binary keeps a name while the new one replaces it atomically. */
  link(existing: string, newName: string): Promise<void>;
  copyFile(from: string, to: string): Promise<void>;
  /** Copies a file, or a folder with everything in it (symbolic links as they are), to a path where nothing is. */
  copyTree(from: string, to: string): Promise<void>;
  chmod(file: string, mode: number): Promise<void>;
  /** Removes a file or a whole folder; nothing there is fine. */
  rm(file: string): Promise<void>;
  mkdir(dir: string): Promise<void>;
  readdir(dir: string): Promise<string[]>;
  readFile(file: string): Promise<Buffer>;
  writeFile(file: string, data: string | Uint8Array, mode?: number): Promise<void>;
  /** Flushes a file's (or a folder's entries') data to the disk. */
  fsync(file: string): Promise<void>;
}

export const nodeUpdateFs: UpdateFs = {
  async stat(file) {
    try {
      const s = await fs.lstat(file);
      return { isDirectory: s.isDirectory(), mode: s.mode, size: s.size, dev: s.dev, ino: s.ino, mtimeMs: s.mtimeMs };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  },
  rename: (from, to) => fs.rename(from, to),
  link: (existing, newName) => fs.link(existing, newName),
  copyFile: (from, to) => fs.copyFile(from, to),
  // verbatimSymlinks: a bundle's relative links (macOS frameworks) stay relative.
  copyTree: (from, to) => fs.cp(from, to, { recursive: true, errorOnExist: true, force: false, preserveTimestamps: true, verbatimSymlinks: true }),
  chmod: (file, mode) => fs.chmod(file, mode),
  rm: (file) => fs.rm(file, { recursive: true, force: true }),
  mkdir: async (dir) => void (await fs.mkdir(dir, { recursive: true })),
  readdir: (dir) => fs.readdir(dir),
  readFile: (file) => fs.readFile(file),
  writeFile: (file, data, mode) => fs.writeFile(file, data, mode === undefined ? undefined : { mode }),
  async fsync(file) {
    let handle: fs.FileHandle;
    try {
      // Windows flushes a file only through a handle that may write (FlushFileBuffers); opened
      // read-only the flush is refused. Read-only where writing is not allowed (a 0444 file, a folder).
      handle = await fs.open(file, 'r+').catch(() => fs.open(file, 'r'));
    } catch (err) {
      // Windows cannot open a folder to flush it; its renames are durable through NTFS's journal.
      if ((await fs.stat(file)).isDirectory()) return;
      throw err;
    }
    try {
      await handle.sync();
    } catch (err) {
      // Some filesystems refuse fsync on a folder (EINVAL); the entries are as durable as they get.
      if (!['EINVAL', 'EISDIR', 'EPERM', 'EBADF'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
    } finally {
      await handle.close();
    }
  },
};

const TEMPORARY_SUFFIX = '.tmp';
/**
 * A durable write takes milliseconds: a sibling written this long before the file was last replaced
 * was left by a process that died in the middle of its write.
 */
const ABANDONED_AFTER_MS = 60_000;

/**
 * Replaces `file` with `data` so that a crash leaves the old or the new content, never half: write
 * a sibling, flush it, rename it over, flush the folder.
 */
export async function writeFileDurably(fs: UpdateFs, file: string, data: string, mode = 0o600): Promise<void> {
  const dir = path.dirname(file);
  await fs.mkdir(dir);
  const temporary = `${file}.${process.pid}${TEMPORARY_SUFFIX}`;
  try {
    await fs.writeFile(temporary, data, mode);
    await fs.fsync(temporary);
    await fs.rename(temporary, file);
  } catch (err) {
    await fs.rm(temporary).catch(() => undefined);
    throw err;
  }
  await fs.fsync(dir);
}

/**
 * Removes the siblings `writeFileDurably` left for `file` when a process died between writing and
 * renaming one (`<file>.<pid>.tmp`): those written well before `file` was last replaced. Another
 * instance of the app may be writing its own right now, perhaps from another machine sharing the
 * folder, so neither its pid nor this machine's clock says anything; both times are the filesystem's.
 */
export async function removeAbandonedTemporaries(fs: UpdateFs, file: string): Promise<void> {
  const replacedAt = (await fs.stat(file).catch(() => undefined))?.mtimeMs;
  if (replacedAt === undefined) return;
  const dir = path.dirname(file);
  const prefix = `${path.basename(file)}.`;
  const names = await fs.readdir(dir).catch(() => []);
  for (const name of names) {
    const pid = name.startsWith(prefix) && name.endsWith(TEMPORARY_SUFFIX) ? name.slice(prefix.length, -TEMPORARY_SUFFIX.length) : '';
    if (!/^\d+$/.test(pid)) continue;
    const temporary = path.join(dir, name);
    const writtenAt = (await fs.stat(temporary).catch(() => undefined))?.mtimeMs;
    if (writtenAt !== undefined && replacedAt - writtenAt > ABANDONED_AFTER_MS) await fs.rm(temporary).catch(() => undefined);
  }
}
