import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { CliError, EXIT } from './errors.js';

/** A device or a pipe (`/dev/stdout`, a FIFO), directly or through a link: written to as it is, never replaced. */
function isStream(file: string): boolean {
  const stat = fs.statSync(file, { throwIfNoEntry: false });
  return stat !== undefined && !stat.isFile() && !stat.isDirectory();
}

/**
 * Writes `text` to `file` readable by the user alone: under a temporary name created for this write
 * (mode 0600, never an existing file or a link), then renamed over `file`. No reader sees half a
 * file, a link at `file` is replaced rather than followed, and an older file's wider mode goes with
 * it. A device or a pipe (`--out /dev/stdout`) is written to directly.
 */
export function writePrivateFile(file: string, text: string): void {
  if (isStream(file)) {
    try {
      fs.writeFileSync(file, text);
      return;
    } catch (err) {
      throw new CliError(`cannot write ${file}: ${(err as Error).message}`);
    }
  }
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    fs.writeFileSync(temporary, text, { mode: 0o600, flag: 'wx' });
    fs.renameSync(temporary, file);
  } catch (err) {
    fs.rmSync(temporary, { force: true });
    throw new CliError(`cannot write ${file}: ${(err as Error).message}`);
  }
}

/** Refuses, before anything is asked of the server, a path that `writePrivateFile` could not write. */
export function assertWritablePath(file: string, option: string): void {
  if (isStream(file)) return;
  const dir = path.dirname(path.resolve(file));
  if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new CliError(`${option} ${file}: the folder ${dir} does not exist`, EXIT.USAGE);
  if (fs.statSync(file, { throwIfNoEntry: false })?.isDirectory()) throw new CliError(`${option} ${file} is a folder: name the file to write`, EXIT.USAGE);
  try {
    fs.accessSync(dir, fs.constants.W_OK);
  } catch {
    throw new CliError(`${option} ${file}: you cannot create files in ${dir}`, EXIT.USAGE);
  }
}
