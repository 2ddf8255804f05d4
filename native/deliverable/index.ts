/**
 * What a customer downloads for a platform, from a self-contained CommonJS script (and optional
 * asset files): one interface, whatever the script holds. Every platform gets the pinned Node
 * runtime (native/runtimes), so no Node needs to be installed:
 *
 * - linux-x64, linux-arm64, win-x64, win-arm64: a Node single executable (postject), the blob written by the
 *   pinned runtime of this machine, the same Node version as the target's.
 * - mac-x64, mac-arm64: a `.tar.gz` with the unmodified, vendor-signed runtime, the script and a
 *   launcher (launcher-archive.ts says why).
 *
 * Assets: in a single executable the script reads them with `require('node:sea').getAsset(name)`;
 * in the archive they lie beside the script, at `path.join(__dirname, name)`.
 *
 * Every deliverable carries THIRD_PARTY_NOTICES, an asset like the others: the notices of what the
 * script holds, given by the caller, then Node's licence. Open-source licences (MIT, Apache-2.0,
 * Node's own) ask that their notice go with every copy, and a customer who got one file gets them
 * in it: as plain text in an executable's blob, or a file beside the script in an archive.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { hostRuntimePlatform, NODE_RUNTIME_VERSION, nodeRuntime, nodeRuntimeLicense, type RuntimePlatform } from '../runtimes/node-runtimes.js';
import { buildSingleExecutable, singleExecutableUnavailable, type ExecutableFormat } from '../sea/single-executable.js';
import { buildLauncherArchive } from './launcher-archive.js';

export type DeliverableFormat = 'single_executable' | 'launcher_archive';

/** How each platform is delivered, and the file's extension. */
export const DELIVERY: Record<RuntimePlatform, { format: DeliverableFormat; extension: '' | '.exe' | '.tar.gz'; executable?: ExecutableFormat }> = {
  'linux-x64': { format: 'single_executable', extension: '', executable: 'elf' },
  'linux-arm64': { format: 'single_executable', extension: '', executable: 'elf' },
  'win-x64': { format: 'single_executable', extension: '.exe', executable: 'pe' },
  'win-arm64': { format: 'single_executable', extension: '.exe', executable: 'pe' },
  'mac-x64': { format: 'launcher_archive', extension: '.tar.gz' },
  'mac-arm64': { format: 'launcher_archive', extension: '.tar.gz' },
};

export interface RuntimeSource {
  /** Where runtimes are cached, and where pre-fetched tarballs are looked for first. */
  dir: string;
  /** The npm registry they are downloaded from otherwise. */
  registry?: string;
}

export interface DeliverableJob {
  platform: RuntimePlatform;
  /** A self-contained CommonJS script: it can `require` built-in modules only. */
  script: string;
  assets?: Record<string, string>;
  /** The notices of the open-source code the script holds (THIRD_PARTY_NOTICES; Node's licence is added). */
  notices: string;
  /** The command's name where the format shows one (the archive's folder and launcher): `[a-z0-9._-]`. */
  name: string;
  runtimes: RuntimeSource;
  /** Scratch space; the deliverable is written here too. */
  workDir: string;
}

export interface Deliverable {
  file: string;
  format: DeliverableFormat;
  /** What the download's file name ends with. */
  extension: string;
}

/** The asset that holds the notices of everything the deliverable carries. */
export const NOTICES_ASSET = 'THIRD_PARTY_NOTICES';

/** This machine cannot make the platform's deliverable (no runtime runs here, postject missing). */
export class DeliverableUnavailableError extends Error {}

export async function buildDeliverable(job: DeliverableJob): Promise<Deliverable> {
  const delivery = DELIVERY[job.platform];
  // What a single executable needs of this server, checked before any runtime is downloaded.
  const host = hostRuntimePlatform();
  if (delivery.format === 'single_executable') {
    const unavailable = singleExecutableUnavailable();
    if (unavailable) throw new DeliverableUnavailableError(unavailable);
    if (!host) throw new DeliverableUnavailableError(`no pinned Node runtime runs on this server (${process.platform}-${process.arch})`);
  }
  const nodeBinary = await nodeRuntime(job.platform, job.runtimes.dir, job.runtimes.registry);
  const file = path.join(job.workDir, `deliverable${delivery.extension}`);
  const notices = path.join(job.workDir, NOTICES_ASSET);
  const nodeLicense = await nodeRuntimeLicense(job.platform, job.runtimes.dir, job.runtimes.registry);
  await fs.writeFile(notices, `${job.notices.trimEnd()}\n\n== Node.js ${NODE_RUNTIME_VERSION}: the runtime this file embeds ==\n\n${nodeLicense.trim()}\n`);
  const assets = { ...job.assets, [NOTICES_ASSET]: notices };
  if (delivery.format === 'launcher_archive') {
    await buildLauncherArchive({ script: job.script, assets, nodeBinary, name: job.name, output: file, workDir: job.workDir });
  } else {
    const blobWriter = await nodeRuntime(host!, job.runtimes.dir, job.runtimes.registry);
    await buildSingleExecutable({
      script: job.script,
      assets,
      nodeBinary,
      blobWriter,
      useCodeCache: host === job.platform,
      format: delivery.executable!,
      output: file,
      workDir: job.workDir,
    });
  }
  return { file, format: delivery.format, extension: delivery.extension };
}
