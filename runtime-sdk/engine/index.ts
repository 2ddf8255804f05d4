/**
 * The runtime engine protection injects into a JavaScript app: its entry point runs
 * `runProtectedApp` with the values baked in at protection time, and the app's own code starts
 * only once the license gate is passed.
 */
import path from 'node:path';
import { createLicenseClient, type LicenseClient } from '../license-client.js';
import type { LicenseClientOptions, PublicJwkInput } from '../options.js';
import type { Ed25519PublicJwk, TamperKind } from '../protocol.js';
import { createUpdater } from '../updates/index.js';
import { isIntact } from './integrity.js';
import { passLicenseGate, processIo } from './license-gate.js';
import { importFromMemory } from './memory-import.js';
import { openVault, type VaultFiles } from './vault.js';
import { ENGINE_VERSION } from './version.js';
import { installVirtualFs } from './virtual-fs.js';
import { hostPlatform } from '../platform.js';
import { SODIUM_ADDON_KEY, type SodiumAddonPlace } from './native-addon.js';

export { ENGINE_VERSION } from './version.js';
export { loadSodiumAddon, SODIUM_ASSET } from './native-addon.js';
export { sealVault, VAULT_ASSET, type VaultFiles } from './vault.js';
export { CONTENT_KEY_BYTES, DEVICE_KEY_PATTERN, wrapContentKey, type ContentKeyContext } from './content-key.js';

/** The vault entry holding the app's code, bundled into one ES module; every other entry is a file of the app. */
export const APP_MODULE = '.latchkey/app.mjs';
/** The global symbol key naming the folder the app's files are served from (see bundle.ts's prelude). */
export const APP_ROOT_KEY = 'latchkey.appRoot';
/** That folder, beside the protected file; it never exists on disk. */
const APP_FOLDER = '.latchkey-app';

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
  /** The signed integrity document of the protected code in its slot (`hardened` builds, see integrity.ts), or null for no check. */
  integrity: string | null;
}

/** What the generated entry point passes. */
export interface ProtectedEntry {
  config: EngineConfig;
  /** The file the protected code is in: the bundle, or the single executable. */
  ownFile: string;
  /**
   * The app's code and files, sealed under the build's content key (vault.ts): a single
   * executable's asset (read in place), the file beside a launcher's script, or a bundle's literal.
   */
  vault: Buffer;
}

const MODIFIED = 'This app has been modified and cannot start. Install it again from its vendor.';

/**
 * Tells the authority a modified copy tried to start, under the license this installation holds
 * (the developer sees the count on the license); nothing is sent where no license was ever held.
 */
async function reportTamper(options: LicenseClientOptions, buildId: string, kind: TamperKind): Promise<void> {
  const license = await createLicenseClient({ ...options, revalidate: 'background', refreshOnStart: false }).catch(() => null);
  if (!license) return;
  await license.reportTamper(buildId, kind).catch(() => undefined);
  await license.dispose();
}

/** Exit code of a protected app that could not get a usable license (or was modified). */
const UNLICENSED_EXIT_CODE = 2;

/**
 * Short and never retried: an activation the user waits for must not wait out back-offs when
 * offline. The user can try an activation again; the next start checks in again.
 */
const REQUEST_TIMEOUT_MS = 5_000;
const RETRY_LIMIT = 0;
/**
 * A short-lived command-line app is gone before a background refresh would answer: the start asks
 * the authority itself, for this long at most, so a revocation or renewal takes effect on this run;
 * offline or slow, the app starts from the cache (docs/protocol.md, Timing).
 */
const REVALIDATE_BUDGET_MS = 1_500;
/**
 * A command-line app is often done before the authority has answered the update check, whose
 * request does not hold the process: its exit waits for the answer this long at most. Once the
 * check has answered, what follows holds the process by itself (the question's dialog, the
 * download's sockets, the install's file operations), as the user is then part of it.
 */
const UPDATE_CHECK_EXIT_WAIT_MS = 1_500;

/** Keeps the process up when the app is done but `work` is not, for `ms` at most. */
function waitAtExit(work: Promise<unknown>, ms: number): void {
  process.once('beforeExit', () => {
    const hold = setTimeout(() => undefined, ms);
    void work.finally(() => clearTimeout(hold));
  });
}

export async function runProtectedApp({ config, ownFile, vault }: ProtectedEntry): Promise<void> {
  const refuse = (message: string) => {
    processIo.say(message);
    process.exitCode = UNLICENSED_EXIT_CODE;
  };
  const { integrity: _checked, appName, ...baked } = config;
  const options: LicenseClientOptions = {
    ...baked,
    engineVersion: ENGINE_VERSION,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    retryLimit: RETRY_LIMIT,
    revalidate: { blockingMs: REVALIDATE_BUDGET_MS },
    // A literal import: protection bundles the hardware probes into the build.
    loadSystemInformation: () => import('systeminformation'),
    // And sodium-native into an executable, with the addon for its platform (native-addon.ts); a
    // JavaScript bundle imports it from beside itself, where the user may have it.
    loadSodium: () => import('sodium-native'),
  };
  const sodiumPlace: SodiumAddonPlace = { scriptDir: path.dirname(ownFile), dataDir: hostPlatform.appDataDir(baked.appId) };
  (globalThis as Record<symbol, unknown>)[Symbol.for(SODIUM_ADDON_KEY)] = sodiumPlace;
  if (config.integrity && !(await isIntact(ownFile, config.integrity, config.publicKeys.keys as Ed25519PublicJwk[], config))) {
    await reportTamper(options, config.buildId, 'integrity');
    return refuse(MODIFIED);
  }
  const license = await passLicenseGate(options);
  if (!license) {
    process.exitCode = UNLICENSED_EXIT_CODE;
    return;
  }
  const files = await unlockApp(license, config.buildId, vault);
  if (files === 'no_key') {
    return refuse('This app cannot be unlocked on this device yet: connect to the internet once and start it again.');
  }
  if (files === 'altered') {
    await license.reportTamper(config.buildId, 'vault').catch(() => undefined);
    return refuse(MODIFIED);
  }
  const app = files.get(APP_MODULE)!;
  files.delete(APP_MODULE);
  // The app's files are served from memory under the folder it would have had beside this file.
  const root = path.join(path.dirname(ownFile), APP_FOLDER);
  (globalThis as Record<symbol, unknown>)[Symbol.for(APP_ROOT_KEY)] = root;
  installVirtualFs(root, files);

  // Settles an install the previous run began, then asks the authority for a push: in the
  // background, so the app starts now whatever the network does. An install it leads to ends
  // this process and starts the new version with the same arguments.
  const updater = createUpdater({ license, appName, appFile: ownFile });
  waitAtExit(updater.checkInBackground(), UPDATE_CHECK_EXIT_WAIT_MS);
  await importFromMemory(app);
  // The app's code loaded and ran its start: this version works, the old copy can go.
  void updater.markHealthy();
}

/**
 * The app's files: the content key comes from the held token, or from the authority when the token
 * carries none for this build (the first start of a build installed since the last refresh).
 */
async function unlockApp(license: LicenseClient, buildId: string, vault: Buffer): Promise<VaultFiles | 'no_key' | 'altered'> {
  let key = license.contentKey(buildId);
  if (!key) {
    await license.refresh().catch(() => undefined);
    key = license.contentKey(buildId);
  }
  if (!key) return 'no_key';
  const files = openVault(vault, key, buildId);
  key.fill(0);
  return files ?? 'altered';
}
