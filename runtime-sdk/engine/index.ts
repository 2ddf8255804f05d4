/**
 * The runtime engine protection injects into a JavaScript app: its entry point runs
 * `runProtectedApp` with the values baked in at protection time, and the app's own code starts
 * only once the license gate is passed.
 */
import type { PublicJwkInput } from '../options.js';
import { createUpdater } from '../updates/index.js';
import { isIntact } from './integrity.js';
import { passLicenseGate, processIo } from './license-gate.js';
import { ENGINE_VERSION } from './version.js';

export { ENGINE_VERSION } from './version.js';

/** What protection bakes into the build. */
export interface EngineConfig {
  appId: string;
  /** The app's name as its developer gave it, shown in the update question. */
  appName: string;
  /** The authority's public URL. */
  serverUrl: string;
  /** The authority's JWK Set at protection time, pinned. */
  publicKeys: { keys: readonly PublicJwkInput[] };
  fingerprintSalt: string;
  buildId: string;
  appVersion: string;
  /** SHA-256 of the protected code (`hardened` builds, see integrity.ts), or null for no check. */
  integrity: string | null;
}

/** What the generated entry point passes. */
export interface ProtectedEntry {
  config: EngineConfig;
  /** The file the protected code is in: the bundle, or the single executable. */
  ownFile: string;
  startApp(): Promise<unknown>;
}

/** Exit code of a protected app that could not get a usable license (or was modified). */
const UNLICENSED_EXIT_CODE = 2;

/**
 * Short and barely retried: the check-in on the way out must not hold a command-line app for long
 * when offline. The user can try an activation again; the background refresh runs hourly anyway.
 */
const REQUEST_TIMEOUT_MS = 5_000;
const RETRY_LIMIT = 1;

export async function runProtectedApp({ config, ownFile, startApp }: ProtectedEntry): Promise<void> {
  if (config.integrity && !(await isIntact(ownFile, config.integrity))) {
    processIo.say('This app has been modified and cannot start. Install it again from its vendor.');
    process.exitCode = UNLICENSED_EXIT_CODE;
    return;
  }
  const { integrity: _checked, appName, ...options } = config;
  const license = await passLicenseGate({
    ...options,
    engineVersion: ENGINE_VERSION,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    retryLimit: RETRY_LIMIT,
    // A literal import: protection bundles the hardware probes into the build.
    loadSystemInformation: () => import('systeminformation'),
  });
  if (!license) {
    process.exitCode = UNLICENSED_EXIT_CODE;
    return;
  }
  // A short-lived command-line app is gone before the background refresh would run: it checks in
  // once on the way out instead, so a revocation or renewal takes effect on its next start.
  process.once('beforeExit', () => void license.refresh().catch(() => undefined));
  // Settles an install the previous run began, then asks the authority for a push: in the
  // background, so the app starts now whatever the network does. An install it leads to ends
  // this process and starts the new version with the same arguments.
  const updater = createUpdater({ license, appName, appFile: ownFile });
  void updater.checkInBackground();
  await startApp();
  // The app's code loaded and ran its start: this version works, the old copy can go.
  void updater.markHealthy();
}
