import path from 'node:path';
import { systemClock, type Clock } from './clock.js';
import * as z from 'zod/mini';
import { importSystemInformation, type Probe, type SystemInformationLoader } from './fingerprint/index.js';
import type { OptionalModule } from './optional-module.js';
import { duration, optionalFlag, optionalFunction, parseOptions, positiveNumber } from './option-schemas.js';
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

const nonEmptyString = z.string({ error: 'must be a non-empty string' }).check(z.refine((s) => s.trim().length > 0, 'must be a non-empty string'));

/** The authority records the app and engine versions and accepts versions such as `1.4.2` or `2.0.0-beta.1`. */
const version = z.string({ error: 'must be a version such as 1.4.2' }).check(z.regex(/^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$/, 'must be a version such as 1.4.2'));

const ed25519Jwk = z.looseObject({
  kty: z.literal('OKP', { error: "must be 'OKP': pinned keys are Ed25519" }),
  crv: z.literal('Ed25519', { error: "must be 'Ed25519'" }),
  kid: z.string({ error: 'must be the key id (kid)' }),
  x: z.string().check(z.refine((x) => Buffer.from(x, 'base64url').length === 32, 'must be 32 bytes, base64url')),
});
const keyList = z.array(ed25519Jwk).check(z.minLength(1, 'must hold at least one key'));
const PUBLIC_KEYS_WANTED = 'must be a JWK Set or a non-empty array of keys, each an Ed25519 JWK (kty OKP, crv Ed25519, x of 32 bytes) with a kid';

const revalidate = z.union([z.literal('background'), z.strictObject({ blockingMs: z.int().check(z.gte(1), z.lte(MAX_REVALIDATE_BLOCKING_MS)) })], {
  error: `must be 'background' or { blockingMs } with a whole number of milliseconds from 1 to ${MAX_REVALIDATE_BLOCKING_MS}`,
});

const objectWith = <T>(method: string, wanted: string) =>
  z.optional(z.custom<T>((value) => typeof value === 'object' && value !== null && typeof (value as Record<string, unknown>)[method] === 'function', wanted));

/** What `createLicenseClient` accepts; anything else is refused with `INVALID_OPTIONS` naming the option. */
const LicenseClientOptionsSchema = z
  .object({
    appId: nonEmptyString,
    serverUrl: nonEmptyString.check(z.refine((url) => /^https?:\/\/[^/]/.test(url) && URL.canParse(url), 'must be an http(s) URL')),
    publicKeys: z.union([keyList, z.object({ keys: keyList })], { error: PUBLIC_KEYS_WANTED }),
    fingerprintSalt: nonEmptyString,
    appVersion: version,
    buildId: z.optional(z.nullable(z.string({ error: 'must be a build id or null' }).check(z.minLength(1), z.maxLength(64)))),
    engineVersion: z.optional(z.nullable(version)),
    cacheDir: z.optional(nonEmptyString),
    clock: objectWith<Clock>('now', 'must be a clock: an object with now()'),
    platform: z.optional(z.custom<Platform>((value) => typeof value === 'object' && value !== null, 'must be a platform object')),
    logger: objectWith<LicenseLogger>('warn', 'must be a logger: an object with warn()'),
    requestTimeoutMs: duration(),
    retryLimit: positiveNumber(true),
    retryBaseDelayMs: duration(),
    refreshIntervalMs: duration(),
    offlineBackoffMs: duration(),
    refreshOnStart: optionalFlag,
    revalidate: z.optional(revalidate),
    startupDelayMs: duration(true),
    clockToleranceMs: positiveNumber(true),
    fingerprintTimeoutMs: duration(),
    // Passed through as given (z.array would copy it): the process's one hardware reading is keyed by this array.
    fingerprintProbes: z.optional(z.custom<Probe[]>((value) => Array.isArray(value) && value.every((probe) => typeof probe === 'function'), 'must be an array of probe functions')),
    loadSystemInformation: optionalFunction<() => Promise<unknown>>(),
    memoryProtection: z.optional(z.enum(['auto', 'masked'], { error: "must be 'auto' or 'masked'" })),
    loadSodium: optionalFunction<() => Promise<unknown>>(),
    osKeyStore: optionalFlag,
  })
  .check(
    z.refine((o) => !(o.refreshOnStart === false && typeof o.revalidate === 'object'), {
      message: 'revalidate { blockingMs } refreshes at start: it cannot be combined with refreshOnStart: false',
      path: ['revalidate'],
    }),
  );

export function resolveOptions(input: LicenseClientOptions): ResolvedOptions {
  const options = parseOptions(LicenseClientOptionsSchema, input);
  const platform = options.platform ?? hostPlatform;
  return {
    appId: options.appId,
    serverUrl: options.serverUrl,
    publicKeys: (Array.isArray(options.publicKeys) ? options.publicKeys : options.publicKeys.keys) as Ed25519PublicJwk[],
    fingerprintSalt: options.fingerprintSalt,
    appVersion: options.appVersion,
    buildId: options.buildId ?? null,
    engineVersion: options.engineVersion ?? null,
    cacheFile: path.join(options.cacheDir ?? platform.appDataDir(options.appId), CACHE_FILE_NAME),
    clock: options.clock ?? systemClock,
    platform,
    logger: options.logger ?? silentLogger,
    requestTimeoutMs: options.requestTimeoutMs ?? 10_000,
    retryLimit: options.retryLimit ?? 2,
    retryBaseDelayMs: options.retryBaseDelayMs ?? 500,
    refreshIntervalMs: options.refreshIntervalMs ?? 3_600_000,
    offlineBackoffMs: options.offlineBackoffMs ?? 30_000,
    refreshOnStart: options.refreshOnStart ?? true,
    revalidate: options.revalidate ?? 'background',
    startupDelayMs: options.startupDelayMs ?? 2_000,
    clockToleranceMs: options.clockToleranceMs ?? 300_000,
    fingerprintTimeoutMs: options.fingerprintTimeoutMs ?? 3_000,
    fingerprintProbes: options.fingerprintProbes,
    loadSystemInformation: options.loadSystemInformation ? optionalModuleFrom('systeminformation', options.loadSystemInformation) : importSystemInformation,
    memoryProtection: options.memoryProtection ?? 'auto',
    loadSodium: options.loadSodium ? optionalModuleFrom('sodium-native', options.loadSodium) : importSodium,
    osKeyStore: options.osKeyStore ?? true,
  };
}

/**
 * The app's own loader of optional module `name`, memoised. Whatever goes wrong (it throws, even
 * before returning a promise, or rejects, or gives nothing) becomes the reason the SDK runs without it.
 */
function optionalModuleFrom<T>(name: string, load: () => Promise<unknown>): () => Promise<OptionalModule<T>> {
  let loaded: Promise<OptionalModule<T>> | undefined;
  return () =>
    (loaded ??= (async () => {
      try {
        const module = (await load()) as { default?: unknown } | null | undefined;
        const found = module?.default ?? module;
        return found ? { module: found as T } : { reason: `${name}'s loader gave nothing` };
      } catch (err) {
        return { reason: `${name} did not load: ${err instanceof Error ? err.message : String(err)}` };
      }
    })());
}
