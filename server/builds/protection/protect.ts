import path from 'node:path';
import { buildSingleExecutable, singleExecutableUnavailable, type ExecutableFormat } from '@latchkey/native/sea';
import type { EngineConfig } from '@latchkey/runtime-sdk/engine';
import type { NodeBinaries } from '../../config.js';
import type { BuildPlatform, PackageFormat } from '../schemas.js';
import { BundleError, bundleWithEngine } from './bundle.js';
import type { JavaScriptApp } from './javascript-app.js';

export interface ProtectionJob {
  app: JavaScriptApp;
  engine: Omit<EngineConfig, 'integrity'>;
  platform: BuildPlatform;
  /** Minified, and checked for modification at every start. */
  hardened: boolean;
  nodeBinaries: NodeBinaries;
  workDir: string;
}

export interface ProtectedPackage {
  file: string;
  format: Exclude<PackageFormat, 'as_uploaded'>;
}

const EXECUTABLE_FORMATS: Record<string, ExecutableFormat> = { linux: 'elf', win: 'pe', mac: 'macho' };

/** The Node binary for a single executable on `platform`, or null for a JavaScript bundle. */
async function nodeBinaryFor(platform: BuildPlatform, nodeBinaries: NodeBinaries): Promise<string | null> {
  const binary = platform === 'cross_platform' ? undefined : nodeBinaries[platform];
  // Packaging that is not possible here (postject missing, binary unreadable) falls back to the bundle.
  return binary && (await singleExecutableUnavailable(binary)) === null ? binary : null;
}

/**
 * The app bundled behind the runtime engine: a single executable where a Node binary is configured
 * for the build's platform, otherwise a JavaScript bundle that runs on any Node >= 20.
 */
export async function protectJavaScriptApp(job: ProtectionJob): Promise<ProtectedPackage> {
  const nodeBinary = await nodeBinaryFor(job.platform, job.nodeBinaries);
  const bundle = (format: 'esm' | 'cjs', outfile: string) =>
    bundleWithEngine({ app: job.app, engine: job.engine, format, hardened: job.hardened, workDir: job.workDir, outfile });

  if (!nodeBinary) {
    const file = path.join(job.workDir, 'protected.mjs');
    await bundle('esm', file);
    return { file, format: 'javascript_bundle' };
  }
  const script = path.join(job.workDir, 'protected.cjs');
  try {
    await bundle('cjs', script);
  } catch (err) {
    if (err instanceof BundleError && /Top-level await is currently not supported/.test(err.message)) {
      throw new BundleError(
        `${err.message.replace(/Top-level await.*$/, '')}top-level await cannot run in a Node 20 single executable, which runs its script as CommonJS; ` +
          'move it into an async function, or upload the build as cross_platform to get a JavaScript bundle',
      );
    }
    throw err;
  }
  const file = path.join(job.workDir, 'protected-executable');
  await buildSingleExecutable({ script, nodeBinary, format: EXECUTABLE_FORMATS[job.platform.split('-')[0]!]!, output: file, workDir: job.workDir });
  return { file, format: 'single_executable' };
}
