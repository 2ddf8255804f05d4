/**
 * Packages a CommonJS script as a Node single executable (SEA): a Node of the target's version
 * writes the preparation blob (`--experimental-sea-config`), postject injects it into a copy of
 * the target platform's Node binary. postject runs in a child process: it loads the whole ~100 MB
 * binary into WebAssembly memory, which is then returned to the system with the process instead of
 * staying in the caller's heap.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The fuse Node's SEA support looks for (`NODE_SEA_FUSE_<hash>`, from Node's documentation); `:0` until injected, `:1` after. */
export const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
/** The resource (ELF note, PE resource, Mach-O section) that holds the blob. */
export const SEA_RESOURCE = 'NODE_SEA_BLOB';

/** Operating systems a Node binary can be, by executable format. */
export type ExecutableFormat = 'elf' | 'pe' | 'macho';

export interface SingleExecutableJob {
  /** A self-contained CommonJS script (a bundle: a SEA can `require` built-in modules only). */
  script: string;
  /** Files the script reads with `require('node:sea').getAsset(name)`, by name. */
  assets?: Record<string, string>;
  /** The target platform's Node binary, copied and injected. */
  nodeBinary: string;
  /**
   * A Node that runs on this machine and is the same version as `nodeBinary`: it writes the blob,
   * whose layout is the version's own.
   */
  blobWriter: string;
  /**
   * Ship V8's compiled code of the script in the blob, so a start does not compile it again. Only
   * when the blob writer is the target itself: the cache is the writing V8's, and Node's
   * documentation has it off for a blob made for another platform.
   */
  useCodeCache: boolean;
  format: ExecutableFormat;
  /** Where the executable is written. */
  output: string;
  /** Scratch directory for the blob and its configuration. */
  workDir: string;
}

const postjectCli = (): string => createRequire(import.meta.url).resolve('postject/dist/cli.js');

/** Why single executables cannot be made here, or null when they can. */
export function singleExecutableUnavailable(): string | null {
  try {
    postjectCli();
    return null;
  } catch {
    return 'postject is not installed';
  }
}

export async function buildSingleExecutable(job: SingleExecutableJob): Promise<void> {
  const blob = path.join(job.workDir, 'sea-prep.blob');
  const config = path.join(job.workDir, 'sea-config.json');
  await fs.writeFile(config, JSON.stringify({ main: job.script, output: blob, disableExperimentalSEAWarning: true, useCodeCache: job.useCodeCache, assets: job.assets ?? {} }));
  // The blob writer gets nothing of the server's environment but PATH: NODE_OPTIONS and the like are the server's business.
  await run(job.blobWriter, ['--experimental-sea-config', config], { cwd: job.workDir, env: { PATH: process.env.PATH ?? '' } });
  await fs.copyFile(job.nodeBinary, job.output);
  // A copied binary keeps the source's mode; it must be writable for postject and runnable after.
  await fs.chmod(job.output, 0o755);
  const machO = job.format === 'macho' ? ['--macho-segment-name', 'NODE_SEA'] : [];
  await run(process.execPath, [postjectCli(), job.output, SEA_RESOURCE, blob, '--sentinel-fuse', SEA_FUSE, ...machO], {
    maxBuffer: 16 * 1024 * 1024,
  });
}
