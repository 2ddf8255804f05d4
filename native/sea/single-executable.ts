/**
 * Packages a CommonJS script as a Node single executable (SEA): Node writes the preparation blob
 * (`--experimental-sea-config`), postject injects it into a copy of a Node binary. postject runs in
 * a child process: it loads the whole ~99 MB binary into WebAssembly memory, which is then returned
 * to the system with the process instead of staying in the caller's heap.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The fuse Node's SEA support looks for (`NODE_SEA_FUSE_<hash>`, from Node's documentation). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

/** Operating systems a Node binary can be, by executable format. */
export type ExecutableFormat = 'elf' | 'pe' | 'macho';

export interface SingleExecutableJob {
  /** A self-contained CommonJS script (a bundle: a SEA can `require` built-in modules only). */
  script: string;
  /** The Node binary to copy; it must be the same Node version as the one running this code, which writes the blob. */
  nodeBinary: string;
  format: ExecutableFormat;
  /** Where the executable is written. */
  output: string;
  /** Scratch directory for the blob and its configuration. */
  workDir: string;
}

const postjectCli = (): string => createRequire(import.meta.url).resolve('postject/dist/cli.js');

/** Why single executables cannot be made here, or null when they can. */
export async function singleExecutableUnavailable(nodeBinary: string): Promise<string | null> {
  try {
    postjectCli();
  } catch {
    return 'postject is not installed';
  }
  try {
    await fs.access(nodeBinary, fs.constants.R_OK);
  } catch {
    return `the Node binary ${nodeBinary} cannot be read`;
  }
  return null;
}

export async function buildSingleExecutable(job: SingleExecutableJob): Promise<void> {
  const blob = path.join(job.workDir, 'sea-prep.blob');
  const config = path.join(job.workDir, 'sea-config.json');
  await fs.writeFile(config, JSON.stringify({ main: job.script, output: blob, disableExperimentalSEAWarning: true }));
  await run(process.execPath, ['--experimental-sea-config', config], { cwd: job.workDir });
  await fs.copyFile(job.nodeBinary, job.output);
  // A copied binary keeps the source's mode; it must be writable for postject and runnable after.
  await fs.chmod(job.output, 0o755);
  const machO = job.format === 'macho' ? ['--macho-segment-name', 'NODE_SEA'] : [];
  await run(process.execPath, [postjectCli(), job.output, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE, ...machO], {
    maxBuffer: 16 * 1024 * 1024,
  });
}
