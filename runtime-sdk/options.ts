import path from 'node:path';
import { systemClock, type Clock } from './clock.js';
import { LicenseError } from './errors.js';
import { importSystemInformation, type Probe, type SystemInformationLoader } from './fingerprint/index.js';
import type { OptionalModule } from './optional-module.js';
import { hostPlatform, type Platform } from './platform.js';
import { importSodium, type SodiumLoader } from './token-store/secret-memory.js';
import type { Ed25519PublicJwk } from './protocol.js';

/** Anything with `warn` (console, a pino child wrapped in a lambda); the SDK never logs keys or tokens. */
export interface LicenseLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
  debug?(message: string, fields?: Record<string, unknown>): void;
}

/** A JWK as read from JSON; checked at start to be an Ed25519 public key (`kty` OKP, `crv` Ed25519, `x`, `kid`). */
export interface PublicJwkInput {
  kty: string;
  crv?: string;
  x?: string;
  kid?: string;
  alg?: string;
  use?: string;
}

export interface LicenseClientOptions {
  appId: string;
  /** Origin of the license authority, e.g. `https://licensing.example.com`. */
  serverUrl: string;
  /** The JWK Set from `GET /v1/public/keys` (or its `keys` array), pinned in the app. */
  publicKeys: { keys: readonly PublicJwkInput[] } | readonly PublicJwkInput[];
  /** The app's `fingerprint_salt`. */
  fingerprintSalt: string;
  appVersion: string;
  /** The protected build this app is, when it is one. */
  buildId?: string | null;
  /** Version of the runtime engine a protected build carries (`1.0.0.0.0.N`); reported to the authority. */
  engineVersion?: string | null;
  /** Where the encrypted license cache lives; default: the per-user app-data folder. */
  cacheDir?: string;
  clock?: Clock;
  platform?: Platform;
  logger?: LicenseLogger;
  /** Per HTTP attempt. Default 10 s. */
  requestTimeoutMs?: number;
  /** Retries on network errors and 5xx. Default 2. */
  retryLimit?: number;
  /** First retry delay, doubled per retry. Default 500 ms. */
  retryBaseDelayMs?: number;
  /** Background refresh interval while online. Default 1 hour. */
  refreshIntervalMs?: number;
  /** First wait after a failed background refresh, doubled per failure up to the interval. Default 30 s. */
  offlineBackoffMs?: number;
  /** Refresh in the background soon after start (revocations are seen at the next start). Default true. */
  refreshOnStart?: boolean;
  /**
   * How the start-up refresh of an activated license runs. `background` (default): after start,
   * so the start never waits on the network, and a revocation is seen a few seconds after start.
   * `{ blockingMs }`: `createLicenseClient` waits for the authority's answer up to that budget, so a
   * revoked license is refused at the first online start; past the budget (slow or no network) the
   * start goes on from the cache and the answer is applied when it comes.
   */
  revalidate?: Revalidate;
  /**
   * How long after start the background work (that refresh, and re-probing a remembered fingerprint)
   * waits, so it does not compete with the app's own start-up. Default 2 s.
   */
  startupDelayMs?: number;
  /** Clock steps backwards smaller than this are not tampering. Default 5 minutes. */
  clockToleranceMs?: number;
  /** Time allowed to each hardware probe. Default 3 s. */
  fingerprintTimeoutMs?: number;
  /** Replaces the systeminformation probes (tests, unusual hosts). */
  fingerprintProbes?: Probe[];
  /**
   * How the hardware probes get the `systeminformation` package. Default: imported at run time
   * from the app's node_modules, out of a bundler's sight; pass `() => import('systeminformation')`
   * to bundle it. Without it the fingerprint is the OS machine id alone.
   */
  loadSystemInformation?: () => Promise<unknown>;
  /** `auto`: sodium-native secure memory when it loads (right after start), else masked. Default `auto`. */
  memoryProtection?: 'auto' | 'masked';
  /**
   * How `auto` gets `sodium-native`. Default: imported at run time from the app's node_modules, out
   * of a bundler's sight; the engine of a protected executable passes the copy it carries.
   */
  loadSodium?: () => Promise<unknown>;
  /**
   * Bind the license cache to a secret in the OS's store where there is one (Secret Service via
   * `secret-tool`, the macOS Keychain, DPAPI); otherwise, or when false, to the fingerprint and the
   * installation. Default true.
   */
  osKeyStore?: boolean;
}

export type Revalidate = 'background' | { blockingMs: number };

/** A budget past this is a unit mistake (seconds for milliseconds), not a start anyone waits for. */
export const MAX_REVALIDATE_BLOCKING_MS = 30_000;

export interface ResolvedOptions {
  appId: string;
  serverUrl: string;
  publicKeys: Ed25519PublicJwk[];
  fingerprintSalt: string;
  appVersion: string;
  buildId: string | null;
  engineVersion: string | null;
  cacheFile: string;
  clock: Clock;
  platform: Platform;
  logger: LicenseLogger;
  requestTimeoutMs: number;
  retryLimit: number;
  retryBaseDelayMs: number;
  refreshIntervalMs: number;
  offlineBackoffMs: number;
  refreshOnStart: boolean;
  revalidate: Revalidate;
  startupDelayMs: number;
  clockToleranceMs: number;
  fingerprintTimeoutMs: number;
  fingerprintProbes: Probe[] | undefined;
  loadSystemInformation: SystemInformationLoader;
  memoryProtection: 'auto' | 'masked';
  loadSodium: SodiumLoader;
  osKeyStore: boolean;
}

const CACHE_FILE_NAME = 'license.cache';
const silentLogger: LicenseLogger = { warn: () => {} };

export function resolveOptions(options: LicenseClientOptions): ResolvedOptions {
  const fail = (message: string): never => {
    throw new LicenseError('INVALID_OPTIONS', message);
  };
  if (!options || typeof options !== 'object') fail('options are required');
  const nonEmpty = (name: keyof LicenseClientOptions) => {
    const value = options[name];
    if (typeof value !== 'string' || !value.trim()) fail(`${name} must be a non-empty string`);
    return value as string;
  };
  const appId = nonEmpty('appId');
  const serverUrl = nonEmpty('serverUrl');
  if (!/^https?:\/\/[^/]/.test(serverUrl) || !URL.canParse(serverUrl)) fail('serverUrl must be an http(s) URL');
  const platform = options.platform ?? hostPlatform;
  const positive = (name: keyof LicenseClientOptions, fallback: number, allowZero = false) => positiveOption(options[name], name, fallback, allowZero, fail);
  return {
    appId,
    serverUrl,
    publicKeys: pinnedKeys(options.publicKeys, fail),
    fingerprintSalt: nonEmpty('fingerprintSalt'),
    appVersion: version('appVersion', options.appVersion, fail),
    buildId: options.buildId ?? null,
    engineVersion: options.engineVersion == null ? null : version('engineVersion', options.engineVersion, fail),
    cacheFile: path.join(options.cacheDir ?? platform.appDataDir(appId), CACHE_FILE_NAME),
    clock: options.clock ?? systemClock,
    platform,
    logger: options.logger ?? silentLogger,
    requestTimeoutMs: positive('requestTimeoutMs', 10_000),
    retryLimit: positive('retryLimit', 2, true),
    retryBaseDelayMs: positive('retryBaseDelayMs', 500),
    refreshIntervalMs: positive('refreshIntervalMs', 3_600_000),
    offlineBackoffMs: positive('offlineBackoffMs', 30_000),
    refreshOnStart: options.refreshOnStart ?? true,
    revalidate: revalidation(options.revalidate, options.refreshOnStart, fail),
    startupDelayMs: positive('startupDelayMs', 2_000, true),
    clockToleranceMs: positive('clockToleranceMs', 300_000, true),
    fingerprintTimeoutMs: positive('fingerprintTimeoutMs', 3_000),
    fingerprintProbes: options.fingerprintProbes,
    loadSystemInformation: options.loadSystemInformation ? optionalModuleFrom('systeminformation', options.loadSystemInformation) : importSystemInformation,
    memoryProtection: options.memoryProtection ?? 'auto',
    loadSodium: options.loadSodium ? optionalModuleFrom('sodium-native', options.loadSodium) : importSodium,
    osKeyStore: options.osKeyStore ?? true,
  };
}

/** A duration or count option: `fallback` when unset, else a finite number above zero (or zero, with `allowZero`). */
export function positiveOption(value: unknown, name: string, fallback: number, allowZero: boolean, fail: (message: string) => never): number {
  const chosen = value ?? fallback;
  if (typeof chosen !== 'number' || !Number.isFinite(chosen) || chosen < 0 || (!allowZero && chosen === 0)) fail(`${name} must be a positive number`);
  return chosen as number;
}

function revalidation(value: unknown, refreshOnStart: boolean | undefined, fail: (message: string) => never): Revalidate {
  if (value === undefined || value === 'background') return 'background';
  const keys = value && typeof value === 'object' ? Object.keys(value) : [];
  const blockingMs = (value as { blockingMs?: unknown } | null)?.blockingMs;
  if (keys.length !== 1 || typeof blockingMs !== 'number' || !Number.isInteger(blockingMs) || blockingMs <= 0 || blockingMs > MAX_REVALIDATE_BLOCKING_MS) {
    return fail(`revalidate must be 'background' or { blockingMs } with a whole number of milliseconds from 1 to ${MAX_REVALIDATE_BLOCKING_MS}`);
  }
  if (refreshOnStart === false) return fail('revalidate { blockingMs } refreshes at start: it cannot be combined with refreshOnStart: false');
  return { blockingMs };
}

/** The app's own loader of optional module `name`, memoised, its failure turned into the reason the SDK runs without it. */
function optionalModuleFrom<T>(name: string, load: () => Promise<unknown>): () => Promise<OptionalModule<T>> {
  let loaded: Promise<OptionalModule<T>> | undefined;
  return () =>
    (loaded ??= load().then(
      (module) => ({ module: ((module as { default?: unknown }).default ?? module) as T }),
      (err: unknown) => ({ reason: `${name} did not load: ${(err as Error).message}` }),
    ));
}

function pinnedKeys(input: LicenseClientOptions['publicKeys'], fail: (message: string) => never): Ed25519PublicJwk[] {
  const keys: unknown = Array.isArray(input) ? input : (input as { keys?: unknown } | undefined)?.keys;
  if (!Array.isArray(keys) || keys.length === 0) return fail('publicKeys must be a JWK Set or a non-empty array of keys');
  for (const key of keys as Partial<Ed25519PublicJwk>[]) {
    const valid = key?.kty === 'OKP' && key.crv === 'Ed25519' && typeof key.kid === 'string' && typeof key.x === 'string' && Buffer.from(key.x, 'base64url').length === 32;
    if (!valid) fail('every public key must be an Ed25519 JWK (kty OKP, crv Ed25519) with a kid');
  }
  return keys as Ed25519PublicJwk[];
}

/** The authority records the app and engine versions and accepts versions such as `1.4.2` or `2.0.0-beta.1`. */
function version(name: 'appVersion' | 'engineVersion', value: unknown, fail: (message: string) => never): string {
  if (typeof value !== 'string' || !/^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$/.test(value)) return fail(`${name} must be a version such as 1.4.2`);
  return value;
}
