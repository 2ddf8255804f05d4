/**
 * The calls the runtime makes to the license authority: activation and refresh, and the updater's
 * check and report. Retries with backoff on network errors and 5xx only: a 4xx is an answer (bad
 * key, limit reached, too many attempts) and retrying it would only burn the user's activation allowance.
 */
import { LicenseError, type LicenseErrorCode } from '../errors.js';
import type { ComponentHashes } from '../fingerprint/index.js';
import type { ConsumeAnswer, ConsumeRequest, DeactivateAnswer, DeactivateRequest, TamperReportRequest, UpdateCheckRequest, UpdateReportRequest } from '../protocol.js';
import type { ProxyEnv } from '../network/proxy-rules.js';
import { NetworkError, postJson, type HttpAnswer } from './json-post.js';

/** Sent with every call so the authority can record the installed version (never hardware identifiers). */
export interface DeviceReport {
  app_version: string;
  platform?: string;
  engine_version?: string;
}

export interface AuthorityOptions {
  serverUrl: string;
  report: DeviceReport;
  userAgent: string;
  requestTimeoutMs: number;
  retryLimit: number;
  retryBaseDelayMs: number;
  /** Where the proxy variables are read (the process's environment). */
  env: ProxyEnv;
}

/**
 * What each grant request says of the installation: the running build and the public half of its
 * X25519 key pair, to which the authority wraps that build's content key (docs/protocol.md).
 */
export type GrantContext = { build_id: string | null; device_key: string };
/** The device as the key-based calls name it: its fingerprint hash and, optionally, the hash of each component. */
export type DeviceIdentity = { device_fingerprint: string; fingerprint_components?: ComponentHashes };
export type ActivateBody = GrantContext & DeviceIdentity & { license_key: string };
/** By token (with the device as read now when the token's device is no longer on record: docs/protocol.md, Fingerprint) or by license key. */
export type RefreshBody = GrantContext & ({ token: string } | (Required<DeviceIdentity> & { token: string }) | (DeviceIdentity & { license_key: string }));

/** The only field trusted is the signed token; the unsigned `policy` and `expires_at` are echoed in its claims. */
export interface Grant {
  token: string;
}

/** No call keeps the process alive on its own: one the app awaits is held by the license client (process-hold.ts). */
export interface AuthorityClient {
  activate(body: ActivateBody): Promise<Grant>;
  refresh(body: RefreshBody): Promise<Grant>;
  /** The compact JWS manifest of the push that applies to this device (unverified), or null when none does (204). */
  checkUpdate(body: UpdateCheckRequest): Promise<string | null>;
  reportUpdate(body: UpdateReportRequest): Promise<void>;
  reportTamper(body: TamperReportRequest): Promise<void>;
  /** Frees the seat of the device the token names; `deactivated: false` when it was no longer activated. */
  deactivate(body: DeactivateRequest): Promise<DeactivateAnswer>;
  /**
   * Frees a floating license's seat (docs/protocol.md, Floating licenses). Best effort for a closing
   * app: one attempt within `timeoutMs`, and still sent after `close()`, which it follows.
   */
  checkin(body: { token: string }, timeoutMs: number): Promise<void>;
  /** Counts units of a metered feature once per idempotency key (docs/protocol.md, Metered features). */
  consume(body: ConsumeRequest): Promise<ConsumeAnswer>;
  /** Aborts every call in flight and refuses new ones (`DISPOSED`): the license client is closing. */
  close(): void;
}

/** The authority's `error_code` values the runtime can act on; anything else is a rejected request. */
const AUTHORITY_CODES: Record<string, LicenseErrorCode> = {
  INVALID_LICENSE_KEY: 'INVALID_LICENSE_KEY',
  LICENSE_EXPIRED: 'LICENSE_EXPIRED',
  DEVICE_LIMIT_EXCEEDED: 'DEVICE_LIMIT_REACHED',
  TRIAL_ALREADY_USED: 'TRIAL_ALREADY_USED',
  DEVICE_NOT_ACTIVATED: 'DEVICE_DEACTIVATED',
  NO_SEAT_AVAILABLE: 'NO_SEAT_AVAILABLE',
  INVALID_RUNTIME_TOKEN: 'TOKEN_NOT_RECOGNISED',
  USAGE_LIMIT_EXCEEDED: 'USAGE_LIMIT_REACHED',
  METER_NOT_FOUND: 'FEATURE_NOT_METERED',
};

export function createAuthorityClient(options: AuthorityOptions): AuthorityClient {
  const base = options.serverUrl.replace(/\/+$/, '');
  const closing = new AbortController();
  const postOptions = {
    headers: { 'user-agent': options.userAgent, accept: 'application/json' },
    timeoutMs: options.requestTimeoutMs,
    retryLimit: options.retryLimit,
    retryBaseDelayMs: options.retryBaseDelayMs,
    env: options.env,
    signal: closing.signal,
  };

  /** A 2xx answer; anything else becomes the LicenseError it means. */
  async function post(path: string, json: object, options = postOptions): Promise<{ status: number; text: string }> {
    let answer: HttpAnswer;
    try {
      answer = await postJson(new URL(`${base}${path}`), json, options);
    } catch (err) {
      if (closing.signal.aborted) throw new LicenseError('DISPOSED', 'the license client was disposed during the request', { cause: err });
      if (err instanceof NetworkError) throw new LicenseError('OFFLINE', err.message, { cause: err });
      throw new LicenseError('INVALID_SERVER_RESPONSE', String(err), { cause: err });
    }
    if (answer.status < 200 || answer.status > 299) throw errorFor(answer);
    return answer;
  }

  // Activation and refresh carry the device report; the update bodies have their own version, platform and engine version.
  const grant = async (path: string, body: object) => ({ token: stringField((await post(path, { ...options.report, ...body })).text, 'token') });

  return {
    activate: (body) => grant('/v1/licenses/activate', body),
    refresh: (body) => grant('/v1/licenses/refresh', body),
    async checkUpdate(body) {
      const { status, text } = await post('/v1/updates/check', body);
      return status === 204 ? null : stringField(text, 'manifest');
    },
    reportUpdate: async (body) => void (await post('/v1/updates/report', body)),
    reportTamper: async (body) => void (await post('/v1/licenses/tamper-report', body)),
    deactivate: async (body) => deactivateAnswer((await post('/v1/licenses/deactivate', body)).text),
    consume: async (body) => consumeAnswer((await post('/v1/licenses/consume', body)).text),
    checkin: async (body, timeoutMs) => void (await post('/v1/licenses/checkin', body, { ...postOptions, timeoutMs, retryLimit: 0, signal: new AbortController().signal })),
    close: () => closing.abort(),
  };
}

function parseAnswer(text: string): Record<string, unknown> | null {
  try {
    return JSON.parse(text) as Record<string, unknown> | null;
  } catch {
    throw new LicenseError('INVALID_SERVER_RESPONSE', 'the authority answered with something other than JSON');
  }
}

/** A string field of a JSON answer; anything else is an answer the runtime cannot use. */
function stringField(text: string, field: string): string {
  const value = parseAnswer(text)?.[field];
  if (typeof value !== 'string') throw new LicenseError('INVALID_SERVER_RESPONSE', `the authority answer has no ${field}`);
  return value;
}

/** The deactivation answer, its fields checked: the client reports them to the app. */
function deactivateAnswer(text: string): DeactivateAnswer {
  const a = parseAnswer(text);
  const ok =
    typeof a?.license_id === 'string' &&
    typeof a.deactivated === 'boolean' &&
    Number.isInteger(a.deactivations_remaining) &&
    typeof a.next_deactivation_available_at === 'string' &&
    Number.isFinite(Date.parse(a.next_deactivation_available_at));
  if (!ok) throw new LicenseError('INVALID_SERVER_RESPONSE', 'the authority answer is not a deactivation');
  return a as unknown as DeactivateAnswer;
}

/** The consumption answer, its fields checked: the client keeps the balance and reports it to the app. */
function consumeAnswer(text: string): ConsumeAnswer {
  const a = parseAnswer(text);
  const ok =
    typeof a?.feature === 'string' &&
    [a.quantity, a.used, a.remaining, a.uses_per_period].every(Number.isInteger) &&
    typeof a.replayed === 'boolean' &&
    (a.period_ends_at === null || (typeof a.period_ends_at === 'string' && Number.isFinite(Date.parse(a.period_ends_at))));
  if (!ok) throw new LicenseError('INVALID_SERVER_RESPONSE', 'the authority answer is not a consumption');
  return a as unknown as ConsumeAnswer;
}

function errorFor(answer: HttpAnswer): LicenseError {
  const { status } = answer;
  const { error_code: errorCode, detail, balance } = parseErrorBody(answer.text);
  const message = detail ?? `the authority answered ${status}`;
  if (status === 429) {
    const retryAfter = Number(answer.headers['retry-after']);
    const code = errorCode === 'DEACTIVATION_QUOTA_EXCEEDED' ? 'DEACTIVATION_LIMIT_REACHED' : 'TOO_MANY_ATTEMPTS';
    return new LicenseError(code, message, { status, ...(Number.isFinite(retryAfter) ? { retryAfterSeconds: retryAfter } : {}) });
  }
  if (status >= 500) return new LicenseError('SERVER_UNAVAILABLE', message, { status });
  return new LicenseError((errorCode && AUTHORITY_CODES[errorCode]) || 'REQUEST_REJECTED', message, { status, ...balance });
}

function parseErrorBody(body: string): { error_code?: string; detail?: string; balance?: { remaining: number; periodEndsAt: Date | null } } {
  try {
    const parsed = JSON.parse(body) as { error_code?: unknown; detail?: unknown; remaining?: unknown; period_ends_at?: unknown };
    const ends = typeof parsed.period_ends_at === 'string' ? new Date(parsed.period_ends_at) : null;
    return {
      ...(typeof parsed.error_code === 'string' ? { error_code: parsed.error_code } : {}),
      ...(typeof parsed.detail === 'string' ? { detail: parsed.detail } : {}),
      ...(Number.isInteger(parsed.remaining) ? { balance: { remaining: parsed.remaining as number, periodEndsAt: ends } } : {}),
    };
  } catch {
    return {};
  }
}
