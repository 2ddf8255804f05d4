import path from 'node:path';
import { buildDeliverable, DeliverableUnavailableError } from '@latchkey/native/deliverable';
import { RuntimeIntegrityError } from '@latchkey/native/runtimes';
import type { EngineConfig } from '@latchkey/runtime-sdk/engine';
import type { NodeRuntimeSource } from '../../config.js';
import type { BuildPlatform, PackageFormat } from '../schemas.js';
import { BundleError, bundleWithEngine, sodiumAddonFor, type BundledEngine, type IntegritySigner } from './bundle.js';
import type { JavaScriptApp } from './javascript-app.js';

export interface ProtectionJob {
  app: JavaScriptApp;
  engine: Omit<EngineConfig, 'integrity'>;
  platform: BuildPlatform;
  /** Minified, and checked for modification at every start. */
  hardened: boolean;
  /** The build's content key, which the app's code and files are sealed under. */
  contentKey: Buffer;
  signIntegrity: IntegritySigner;
  nodeRuntimes: NodeRuntimeSource;
  workDir: string;
}

export interface ProtectedPackage {
  file: string;
  format: Exclude<PackageFormat, 'as_uploaded'>;
}

/** The platform's deliverable cannot be made (a runtime that fails its pinned integrity, a server no runtime runs on): the build fails with this reason. */
export class PackagingError extends Error {}

/** The launcher's name in a macOS archive: the app's name as a command. */
const commandName = (appName: string): string =>
  appName
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '') || 'app';

/**
 * The app bundled behind the runtime engine: for `cross_platform` a JavaScript bundle that runs on
 * any Node >= 20 (installed by the customer); for every other platform what runs without Node
 * installed, with the pinned Node runtime of that platform (native/deliverable).
 */
export async function protectJavaScriptApp(job: ProtectionJob): Promise<ProtectedPackage> {
  const bundle = (format: 'esm' | 'cjs', outfile: string) =>
    bundleWithEngine({
      app: job.app,
      engine: job.engine,
      format,
      hardened: job.hardened,
      contentKey: job.contentKey,
      signIntegrity: job.signIntegrity,
      workDir: job.workDir,
      outfile,
      sodiumAddon: format === 'cjs' ? sodiumAddonFor(job.platform) : null,
    });

  if (job.platform === 'cross_platform') {
    const file = path.join(job.workDir, 'protected.mjs');
    await bundle('esm', file);
    return { file, format: 'javascript_bundle' };
  }
  const script = path.join(job.workDir, 'protected.cjs');
  let engine: BundledEngine;
  try {
    engine = await bundle('cjs', script);
  } catch (err) {
    if (err instanceof BundleError && /Top-level await is currently not supported/.test(err.message)) {
      throw new BundleError(
        `${err.message.replace(/Top-level await.*$/, '')}top-level await cannot run in an executable's script, which Node runs as CommonJS; ` +
          'move it into an async function, or upload the build as cross_platform to get a JavaScript bundle',
      );
    }
    throw err;
  }
  try {
    const delivered = await buildDeliverable({
      platform: job.platform,
      script,
      assets: engine.assets,
      notices: engine.notices,
      name: commandName(job.engine.appName),
      runtimes: job.nodeRuntimes,
      workDir: job.workDir,
    });
    return { file: delivered.file, format: delivered.format };
  } catch (err) {
    if (err instanceof RuntimeIntegrityError) throw new PackagingError(`the Node runtime for ${job.platform} could not be used: ${err.message}`);
    if (err instanceof DeliverableUnavailableError) throw new PackagingError(`this server cannot make ${job.platform} executables: ${err.message}`);
    throw err;
  }
}
