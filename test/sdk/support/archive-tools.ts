import fs from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createWriteStream } from 'node:fs';
import yauzl from 'yauzl';
import type { CommandResult } from '../../../runtime-sdk/updates/commands.js';
import type { CommandCall } from './fake-commands.js';

/** Unpacks `zip` into `dest`, as `ditto -x -k` or Windows' `tar -x -f` would (files, folders, modes). */
export async function unzipInto(zip: string, dest: string): Promise<void> {
  const archive = await new Promise<yauzl.ZipFile>((resolve, reject) => yauzl.open(zip, { lazyEntries: true }, (err, z) => (err ? reject(err) : resolve(z!))));
  await new Promise<void>((resolve, reject) => {
    archive.on('error', reject);
    archive.on('end', resolve);
    archive.on('entry', (entry: yauzl.Entry) => {
      const target = path.join(dest, entry.fileName);
      if (entry.fileName.endsWith('/')) {
        fs.mkdir(target, { recursive: true }).then(() => archive.readEntry(), reject);
        return;
      }
      archive.openReadStream(entry, async (err, stream) => {
        if (err) return reject(err);
        try {
          await fs.mkdir(path.dirname(target), { recursive: true });
          await pipeline(stream!, createWriteStream(target, { mode: (entry.externalFileAttributes >>> 16) & 0o777 || 0o644 }));
          archive.readEntry();
        } catch (error) {
          reject(error);
        }
      });
    });
    archive.readEntry();
  });
}

/**
 * The archive tools of macOS (`ditto -x -k <zip> <dest>`) and Windows (`tar -x -f <zip> -C <dest>`),
 * done here with yauzl so the installers' real argv runs on Linux.
 */
export async function fakeArchiveTool(call: CommandCall): Promise<CommandResult> {
  const [zip, dest] = call.file.endsWith('ditto') ? [call.args[2]!, call.args[3]!] : [call.args[2]!, call.args[4]!];
  try {
    await unzipInto(zip, dest);
    return { code: 0, stdout: '', stderr: '' };
  } catch (err) {
    return { code: 1, stdout: '', stderr: String(err) };
  }
}
