/**
 * The signed protocol between the license authority and the runtime: compact JWS (RFC 7515) with
 * `alg: EdDSA` (RFC 8037, Ed25519) and a `kid` naming a key of the authority's JWK Set.
 *
 * The server imports this module to build what it signs; the SDK uses it to verify. Signatures are
 * checked with node:crypto (OpenSSL's Ed25519): no dependency to bundle or audit, in every Node and
 * Electron an app can run on.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';

/** What a signed document is for; a token can never pass as a manifest or the reverse. */
export const DOCUMENT_TYPES = {
  runtimeToken: 'latchkey-runtime+jwt',
  updateManifest: 'latchkey-update-manifest+jwt',
  buildIntegrity: 'latchkey-build-integrity+jwt',
  licenseFile: 'latchkey-license-file+jwt',
} as const;
export type DocumentType = (typeof DOCUMENT_TYPES)[keyof typeof DOCUMENT_TYPES];

export interface Ed25519PublicJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg?: 'EdDSA';
  use?: 'sig';
}

export interface JwkSet {
  keys: Ed25519PublicJwk[];
}

export interface JwsHeader {
  alg: 'EdDSA';
  kid: string;
  typ: DocumentType;
}

export type LicenseType = 'perpetual' | 'subscription' | 'trial';

export interface RuntimePolicy {
  /** Floating licenses: the seats in use at once. */
  device_limit: number;
  offline_grace_hours: number;
  /** Only on a floating license's token, whose `exp` is its lease's end (docs/protocol.md, Floating licenses). */
  seat_model?: 'floating';
  /** With `seat_model`: the lease life a refresh (the heartbeat) renews; the SDK heartbeats at a third of it. */
  lease_ttl_minutes?: number;
}

/** Claims of the runtime token issued at activation and refresh. */
export interface RuntimeTokenClaims {
  iss: 'latchkey';
  /** License id (`lic_...`). */
  sub: string;
  app_id: string;
  /** The device fingerprint hash the token is bound to (64 hex, already salted by the SDK). */
  device: string;
  license_type: LicenseType;
  features: Record<string, unknown>;
  policy: RuntimePolicy;
  /** License expiry (seconds since epoch), null when perpetual or not yet started. */
  license_expires_at: number | null;
  iat: number;
  /** `iat` + offline grace: the last moment the token may be used without contacting the authority. */
  exp: number;
  /** The content key of the protected build the device runs, wrapped for this device alone (engine/content-key.ts). */
  content_key?: WrappedContentKey;
}

/** A build's content key wrapped for one device; every field base64url (docs/protocol.md, "Protected builds"). */
export interface WrappedContentKey {
  build_id: string;
  /** The authority's ephemeral X25519 public key. */
  epk: string;
  iv: string;
  /** The encrypted 32-byte key followed by its 16-byte GCM tag. */
  ct: string;
}

/** Stable reasons a signed document is refused; callers map them to their own errors. */
export const PROTOCOL_FAILURES = [
  'malformed',
  'unsupported_alg',
  'wrong_type',
  'unknown_key',
  'bad_signature',
  'wrong_app',
  'wrong_device',
  'wrong_license',
  'wrong_platform',
  'expired',
  'replayed',
] as const;
export type ProtocolFailure = (typeof PROTOCOL_FAILURES)[number];

export class ProtocolError extends Error {
  constructor(
    readonly failure: ProtocolFailure,
    message: string,
  ) {
    super(message);
    this.name = 'ProtocolError';
  }
}

const b64url = (data: Uint8Array | string): string => Buffer.from(data).toString('base64url');

/** The bytes a signer signs: `base64url(header) "." base64url(claims)`. */
export function signingInput(header: JwsHeader, claims: object): string {
  return `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
}

export function assembleJws(input: string, signature: Uint8Array): string {
  return `${input}.${b64url(signature)}`;
}

function decodeJson(part: string): unknown {
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    throw new ProtocolError('malformed', 'not valid base64url JSON');
  }
}

const B64URL = /^[A-Za-z0-9_-]*$/;

/** Checks an Ed25519 signature over `input` with the pinned `key`. */
export type SignatureCheck = (input: Uint8Array, signature: Uint8Array, key: Ed25519PublicJwk) => boolean;

/** Imported once per pinned key: importing costs more than verifying. */
const importedKeys = new Map<string, KeyObject>();

const nodeCryptoCheck: SignatureCheck = (input, signature, key) => {
  let publicKey = importedKeys.get(key.x);
  try {
    publicKey ??= createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: key.x }, format: 'jwk' });
  } catch {
    return false;
  }
  importedKeys.set(key.x, publicKey);
  return signature.length === 64 && verify(null, input, publicKey, signature);
};

/**
 * Checks a compact JWS against pinned keys and returns its claims. Only EdDSA is accepted (no
 * `none`, no HMAC confusion); the key is chosen by `kid` from the caller's set, never from the token.
 */
export function verifyJws<T>(
  compact: string,
  keys: JwkSet | Ed25519PublicJwk[],
  type: DocumentType,
  /** The authority passes its own check here, with the key objects it already holds. */
  checkSignature: SignatureCheck = nodeCryptoCheck,
): { header: JwsHeader; claims: T } {
  const parts = typeof compact === 'string' ? compact.split('.') : [];
  if (parts.length !== 3 || !parts.every((p) => p.length > 0 && B64URL.test(p))) {
    throw new ProtocolError('malformed', 'not a compact JWS');
  }
  const header = decodeJson(parts[0]!) as Partial<JwsHeader>;
  if (!header || typeof header !== 'object') throw new ProtocolError('malformed', 'header is not an object');
  if (header.alg !== 'EdDSA') throw new ProtocolError('unsupported_alg', `alg ${String(header.alg)} is not accepted`);
  if (header.typ !== type) throw new ProtocolError('wrong_type', `expected a ${type}`);
  const list = Array.isArray(keys) ? keys : keys.keys;
  const jwk = list.find((k) => k.kid === header.kid && k.kty === 'OKP' && k.crv === 'Ed25519');
  if (!jwk) throw new ProtocolError('unknown_key', `no pinned key with kid ${String(header.kid)}`);
  const publicKey = Buffer.from(jwk.x, 'base64url');
  const signature = Buffer.from(parts[2]!, 'base64url');
  if (publicKey.length !== 32 || signature.length !== 64) throw new ProtocolError('malformed', 'bad key or signature length');
  const ok = checkSignature(Buffer.from(`${parts[0]}.${parts[1]}`, 'ascii'), signature, jwk);
  if (!ok) throw new ProtocolError('bad_signature', 'signature does not verify');
  const claims = decodeJson(parts[1]!);
  if (!claims || typeof claims !== 'object' || Array.isArray(claims)) throw new ProtocolError('malformed', 'claims are not an object');
  return { header: header as JwsHeader, claims: claims as T };
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isFiniteNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

/** Verifies a runtime token and that it belongs to this app and this device and is within its life. */
export function verifyRuntimeToken(
  token: string,
  keys: JwkSet | Ed25519PublicJwk[],
  expect: { appId: string; device: string; /** Omit to leave the expiry decision to the caller (offline grace). */ nowSeconds?: number },
): RuntimeTokenClaims {
  const { claims } = verifyJws<RuntimeTokenClaims>(token, keys, DOCUMENT_TYPES.runtimeToken);
  if (claims.iss !== 'latchkey' || typeof claims.sub !== 'string' || typeof claims.exp !== 'number' || typeof claims.iat !== 'number') {
    throw new ProtocolError('malformed', 'missing required claims');
  }
  // What the status and the grace are computed from: a token without them is refused before it is
  // kept, never left in the cache to fail every start after.
  if (!isRecord(claims.policy) || !isFiniteNumber(claims.policy.offline_grace_hours)) throw new ProtocolError('malformed', 'missing or malformed policy');
  if (!isRecord(claims.features) || (claims.license_expires_at != null && !isFiniteNumber(claims.license_expires_at))) {
    throw new ProtocolError('malformed', 'malformed features or license_expires_at');
  }
  if (claims.app_id !== expect.appId) throw new ProtocolError('wrong_app', 'token was issued for another app');
  if (claims.device !== expect.device) throw new ProtocolError('wrong_device', 'token was issued for another device');
  if (expect.nowSeconds !== undefined && claims.exp <= expect.nowSeconds) throw new ProtocolError('expired', 'token has expired');
  return claims;
}

/**
 * Claims of an update manifest, answered by `POST /v1/updates/check` when a push applies. Bound to
 * one app, platform, license and device, short-lived, and numbered: an app refuses a manifest for
 * anyone else, an old one replayed (serial below the highest seen), or one past `exp`, so an
 * attacker on the update channel can neither roll an install back nor freeze it on a stale offer.
 * `sha256` and `length` bind the bytes: a download is cut off past `length` and refused unless it
 * hashes to `sha256` (the lessons of TUF: rollback, freeze, mix-and-match, endless data).
 */
export interface UpdateManifestClaims {
  iss: 'latchkey';
  /** License id (`lic_...`). */
  sub: string;
  app_id: string;
  /** The device's platform label as the check sent it (`linux-x64`, `mac-arm64`, `win-x64`, ...). */
  platform: string;
  /** The device fingerprint hash as the check sent it. */
  device: string;
  build_id: string;
  /** The target build's version as the developer labelled it. */
  version: string;
  /** Lower-case hex SHA-256 of the package the URL serves. */
  sha256: string;
  /** Its size in bytes. */
  length: number;
  /** Where to download it (a signed link, valid days; the manifest's `exp` is minutes). */
  url: string;
  /** Plain text, shown verbatim. */
  release_notes: string;
  /** Monotonic across every push of the authority: a newer push always has a higher serial. */
  serial: number;
  iat: number;
  exp: number;
}

/** Body of `POST /v1/updates/check`. */
/**
 * The license key and the fingerprint hash are all an update check needs (the authority reads the
 * rest from the license and the device's record); the SDK sends the others so the record stays current.
 */
export interface UpdateCheckRequest {
  license_key: string;
  device_fingerprint: string;
  app_id?: string;
  /** The running build, or null for an app embedding the SDK without a protected build. */
  build_id?: string | null;
  version?: string;
  platform?: string;
  engine_version?: string;
}

export const UPDATE_REPORT_EVENTS = ['installed', 'skipped', 'failed'] as const;
export type UpdateReportEvent = (typeof UPDATE_REPORT_EVENTS)[number];

/**
 * Why an install of an offered build failed (`event: failed`), one closed list for runtime and server:
 * - `download_failed`: the package could not be fetched (network, timeouts, 5xx, an expired link);
 * - `package_rejected`: its bytes were not the signed ones (hash, length, an archive that does not unpack);
 * - `disk_failed`: the updater's own files could not be written (space, permissions);
 * - `install_failed`: a step of the swap was refused and undone (a locked file, a permission);
 * - `rolled_back`: an install interrupted (crash, power cut) was rolled back at the next start.
 */
export const UPDATE_FAILURE_REASONS = ['download_failed', 'package_rejected', 'disk_failed', 'install_failed', 'rolled_back'] as const;
export type UpdateFailureReason = (typeof UPDATE_FAILURE_REASONS)[number];

/** Body of `POST /v1/updates/report`: what the user did with an offer, what is now installed, or what failed to install. */
export interface UpdateReportRequest {
  license_key: string;
  device_fingerprint: string;
  app_id: string;
  /**
   * `installed`: sent on the first start of the new build (`build_id`, `version` are the running ones);
   * `skipped`: the user chose Skip this version of `build_id`; `failed`: installing `build_id` failed
   * (`version` is the running one, which runs on), `reason` says why.
   */
  event: UpdateReportEvent;
  /** With `failed` only. */
  reason?: UpdateFailureReason;
  build_id: string;
  version: string;
  platform?: string;
  engine_version?: string;
}

/** Verifies an update manifest and that it is for this app, platform, license and device, unexpired and not replayed. */
export function verifyUpdateManifest(
  manifest: string,
  keys: JwkSet | Ed25519PublicJwk[],
  expect: { appId: string; platform: string; device: string; /** Omit when the license id is not known yet. */ licenseId?: string; nowSeconds: number; highestSerialSeen: number },
): UpdateManifestClaims {
  const { claims } = verifyJws<UpdateManifestClaims>(manifest, keys, DOCUMENT_TYPES.updateManifest);
  const wellFormed =
    claims.iss === 'latchkey' &&
    typeof claims.sub === 'string' &&
    typeof claims.build_id === 'string' &&
    claims.build_id.length > 0 &&
    typeof claims.version === 'string' &&
    typeof claims.sha256 === 'string' &&
    /^[0-9a-f]{64}$/.test(claims.sha256) &&
    Number.isSafeInteger(claims.length) &&
    claims.length > 0 &&
    typeof claims.url === 'string' &&
    /^https?:\/\//.test(claims.url) &&
    typeof claims.release_notes === 'string' &&
    Number.isSafeInteger(claims.serial) &&
    claims.serial > 0 &&
    typeof claims.iat === 'number' &&
    typeof claims.exp === 'number';
  if (!wellFormed) throw new ProtocolError('malformed', 'missing or malformed manifest claims');
  if (claims.app_id !== expect.appId) throw new ProtocolError('wrong_app', 'manifest was issued for another app');
  if (claims.platform !== expect.platform) throw new ProtocolError('wrong_platform', 'manifest was issued for another platform');
  if (claims.device !== expect.device) throw new ProtocolError('wrong_device', 'manifest was issued for another device');
  if (expect.licenseId !== undefined && claims.sub !== expect.licenseId) throw new ProtocolError('wrong_license', 'manifest was issued for another license');
  if (claims.exp <= expect.nowSeconds) throw new ProtocolError('expired', 'manifest has expired');
  if (claims.serial < expect.highestSerialSeen) throw new ProtocolError('replayed', 'manifest is older than one already seen');
  return claims;
}

/**
 * Claims of a protected build's integrity document, signed at protection time and baked into the
 * build: the SHA-256 of its protected region (engine/integrity.ts). A modified build cannot carry a
 * matching signature without the authority's key.
 */
export interface BuildIntegrityClaims {
  iss: 'latchkey';
  app_id: string;
  build_id: string;
  /** Lower-case hex SHA-256 of the protected region, with the document's slot filled with the placeholder. */
  sha256: string;
  iat: number;
}

/** Verifies a build's integrity document and that it is this app's and this build's. */
export function verifyBuildIntegrity(document: string, keys: JwkSet | Ed25519PublicJwk[], expect: { appId: string; buildId: string }): BuildIntegrityClaims {
  const { claims } = verifyJws<BuildIntegrityClaims>(document, keys, DOCUMENT_TYPES.buildIntegrity);
  if (claims.iss !== 'latchkey' || typeof claims.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(claims.sha256)) {
    throw new ProtocolError('malformed', 'missing or malformed integrity claims');
  }
  if (claims.app_id !== expect.appId || claims.build_id !== expect.buildId) throw new ProtocolError('wrong_app', 'integrity document of another build');
  return claims;
}

/** What a modified protected build failed: its signed integrity check, or opening its encrypted vault. */
export const TAMPER_KINDS = ['integrity', 'vault'] as const;
export type TamperKind = (typeof TAMPER_KINDS)[number];

/** Body of `POST /v1/licenses/tamper-report`, sent with the runtime token the installation holds. */
export interface TamperReportRequest {
  token: string;
  build_id: string;
  kind: TamperKind;
}

/** Body of `POST /v1/licenses/deactivate`: the runtime token names the license and the device whose seat is freed. */
export interface DeactivateRequest {
  token: string;
}

/** The answer to a deactivation; `deactivated: false` when the device was no longer activated (nothing counted). */
export interface DeactivateAnswer {
  license_id: string;
  deactivated: boolean;
  deactivations_remaining: number;
  next_deactivation_available_at: string;
}

/** Body of `POST /v1/licenses/consume` (docs/protocol.md, Metered features). */
export interface ConsumeRequest {
  token: string;
  feature: string;
  quantity: number;
  /** Unique per consumption, kept with it until the authority answered: a replay counts nothing. */
  idempotency_key: string;
  /** ISO 8601; an offline consumption's own time, reported later. */
  consumed_at?: string;
}

/** The balance after a consumption (or, `replayed`, after the first one with the same key). */
export interface ConsumeAnswer {
  license_id: string;
  feature: string;
  quantity: number;
  used: number;
  remaining: number;
  uses_per_period: number;
  /** ISO 8601; null for a lifetime meter. */
  period_ends_at: string | null;
  replayed: boolean;
}

/** `format` of an offline activation request file (docs/protocol.md, "Offline activation"). */
export const ACTIVATION_REQUEST_FORMAT = 'latchkey-activation-request/1';
/** `format` claim of a license file. */
export const LICENSE_FILE_FORMAT = 'latchkey-license-file/1';

/**
 * An offline activation request file, written by `exportActivationRequest()` on a machine without
 * network and carried to `POST /v1/licenses/offline-activation`. It holds the license key: a secret.
 */
export interface ActivationRequestFile {
  format: typeof ACTIVATION_REQUEST_FORMAT;
  app_id: string;
  license_key: string;
  device_fingerprint: string;
  fingerprint_components?: Partial<Record<string, string>>;
  /** The installation's X25519 public key (base64url): the content key and the license file are bound to it. */
  device_key: string;
  build_id: string | null;
  /** ISO 8601, the machine's clock when it wrote the file; informative only. */
  created_at: string;
}

/** Claims of a license file: a runtime token issued to one device, bound to its device key, importable until `file_expires_at`. */
export interface LicenseFileClaims {
  iss: 'latchkey';
  format: typeof LICENSE_FILE_FORMAT;
  app_id: string;
  device: string;
  device_key: string;
  /** The license key of the request: kept by the SDK as after an online activation (refresh by key, updates). A secret, like the key. */
  license_key: string;
  /** The runtime token, exactly as online activation answers it (its policy and content key included). */
  token: string;
  iat: number;
  /** Seconds since the epoch: the file is refused after this (the earlier of the token's `exp` and 30 days). */
  file_expires_at: number;
}

/** The answer of `POST /v1/licenses/offline-activation`: `license_file` is the file's whole text. */
export interface OfflineActivationAnswer {
  license_file: string;
  file_expires_at: string;
}

/**
 * Verifies a license file in the order docs/protocol.md gives: signature (pinned keys, typ), format,
 * app, device fingerprint, device key, import deadline. The token inside is verified by the caller.
 */
export function verifyLicenseFile(
  file: string,
  keys: JwkSet | Ed25519PublicJwk[],
  expect: { appId: string; device: string; deviceKey: string; nowSeconds: number },
): LicenseFileClaims {
  const { claims } = verifyJws<LicenseFileClaims>(file.trim(), keys, DOCUMENT_TYPES.licenseFile);
  if (
    claims.iss !== 'latchkey' ||
    claims.format !== LICENSE_FILE_FORMAT ||
    typeof claims.token !== 'string' ||
    typeof claims.license_key !== 'string' ||
    typeof claims.file_expires_at !== 'number'
  ) {
    throw new ProtocolError('malformed', 'not a license file of this format');
  }
  if (claims.app_id !== expect.appId) throw new ProtocolError('wrong_app', 'the license file was issued for another app');
  if (claims.device !== expect.device || claims.device_key !== expect.deviceKey) throw new ProtocolError('wrong_device', 'the license file was issued for another device');
  if (claims.file_expires_at <= expect.nowSeconds) throw new ProtocolError('expired', 'the license file is past its import deadline');
  return claims;
}

/** A device fingerprint as the authority accepts it: a SHA-256 (HMAC) output in lower-case hex. */
export const FINGERPRINT_PATTERN = /^[0-9a-f]{64}$/;

/** Component-tolerant device matching: the one rule the SDK and the authority both apply (docs/protocol.md, "Fingerprint"). */
export { COMPONENT_NAMES, type ComponentHashes, type ComponentName } from './fingerprint/components.js';
export { DEFAULT_MATCH_RULE, deviceMatches, MACHINE_ID, type MatchRule } from './fingerprint/match.js';
