/**
 * The calls the runtime makes to the license authority: activation and refresh, and the updater's
 * check and report. Retries with backoff on network errors and 5xx only: a 4xx is an answer (bad
 * key, limit reached, too many attempts) and retrying it would only burn the user's activation allowance.
 */
import type { Got } from 'got';
import { LicenseError, type LicenseErrorCode } from '../errors.js';
import type { UpdateCheckRequest, UpdateReportRequest } from '../protocol.js';

type GotModule = typeof import('got');

/** got (and its dependency tree) loads on the first call, so a start answered from the cache never pays for it. */
let gotModule: Promise<GotModule> | undefined;
const loadGot = () => (gotModule ??= import('got'));

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
}

export type ActivateBody = { license_key: string; device_fingerprint: string; build_id: string | null };
export type RefreshBody = { token: string } | { license_key: string; device_fingerprint: string };

/** The only field trusted is the signed token; the unsigned `policy` and `expires_at` are echoed in its claims. */
export interface Grant {
  token: string;
}

export interface AuthorityClient {
  activate(body: ActivateBody): Promise<Grant>;
  refresh(body: RefreshBody): Promise<Grant>;
  /** The compact JWS manifest of the push that applies to this device (unverified), or null when none does (204). */
  checkUpdate(body: UpdateCheckRequest): Promise<string | null>;
  reportUpdate(body: UpdateReportRequest): Promise<void>;
}

const RETRY_STATUS_CODES = [500, 502, 503, 504, 521, 522, 524];
const RETRY_ERROR_CODES = ['ETIMEDOUT', 'ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'EPIPE', 'ENOTFOUND', 'ENETUNREACH', 'EHOSTUNREACH', 'EAI_AGAIN'];
const MAX_RETRY_DELAY_MS = 10_000;

/** The authority's `error_code` values the runtime can act on; anything else is a rejected request. */
const AUTHORITY_CODES: Record<string, LicenseErrorCode> = {
  INVALID_LICENSE_KEY: 'INVALID_LICENSE_KEY',
  LICENSE_EXPIRED: 'LICENSE_EXPIRED',
  DEVICE_LIMIT_EXCEEDED: 'DEVICE_LIMIT_REACHED',
  TRIAL_ALREADY_USED: 'TRIAL_ALREADY_USED',
  DEVICE_NOT_ACTIVATED: 'DEVICE_DEACTIVATED',
  INVALID_RUNTIME_TOKEN: 'TOKEN_NOT_RECOGNISED',
};

export function createAuthorityClient(options: AuthorityOptions): AuthorityClient {
  const base = options.serverUrl.replace(/\/+$/, '');
  let http: Got | undefined;
  const client = (module: GotModule): Got =>
    (http ??= module.got.extend({
      headers: { 'user-agent': options.userAgent, accept: 'application/json' },
      responseType: 'text',
      timeout: { request: options.requestTimeoutMs },
      retry: {
        limit: options.retryLimit,
        methods: ['POST'],
        statusCodes: RETRY_STATUS_CODES,
        errorCodes: RETRY_ERROR_CODES,
        calculateDelay: ({ attemptCount, computedValue }) =>
          // computedValue is 0 when got's rules (limit, method, status, code) say no retry.
          computedValue === 0
            ? 0
            : Math.min(options.retryBaseDelayMs * 2 ** (attemptCount - 1), MAX_RETRY_DELAY_MS) + Math.random() * options.retryBaseDelayMs * 0.25,
      },
    }));

  async function post(path: string, json: object): Promise<{ status: number; text: string }> {
    const module = await loadGot();
    try {
      const response = await client(module).post(`${base}${path}`, { json });
      return { status: response.statusCode, text: response.body };
    } catch (err) {
      throw toLicenseError(err, module);
    }
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
  };
}

/** A string field of a JSON answer; anything else is an answer the runtime cannot use. */
function stringField(text: string, field: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new LicenseError('INVALID_SERVER_RESPONSE', 'the authority answered with something other than JSON');
  }
  const value = (parsed as Record<string, unknown> | null)?.[field];
  if (typeof value !== 'string') throw new LicenseError('INVALID_SERVER_RESPONSE', `the authority answer has no ${field}`);
  return value;
}

function toLicenseError(err: unknown, { HTTPError, RequestError }: GotModule): LicenseError {
  if (err instanceof HTTPError) {
    const status = err.response.statusCode;
    const { error_code: errorCode, detail } = parseErrorBody(err.response.body);
    const message = detail ?? `the authority answered ${status}`;
    if (status === 429) {
      const retryAfter = Number(err.response.headers['retry-after']);
      return new LicenseError('TOO_MANY_ATTEMPTS', message, { status, ...(Number.isFinite(retryAfter) ? { retryAfterSeconds: retryAfter } : {}) });
    }
    if (status >= 500) return new LicenseError('SERVER_UNAVAILABLE', message, { status });
    return new LicenseError((errorCode && AUTHORITY_CODES[errorCode]) || 'REQUEST_REJECTED', message, { status });
  }
  if (err instanceof RequestError) return new LicenseError('OFFLINE', `${err.code}: ${err.message}`, { cause: err });
  return new LicenseError('INVALID_SERVER_RESPONSE', String(err), { cause: err });
}

function parseErrorBody(body: unknown): { error_code?: string; detail?: string } {
  try {
    const parsed = JSON.parse(String(body)) as { error_code?: unknown; detail?: unknown };
    return {
      ...(typeof parsed.error_code === 'string' ? { error_code: parsed.error_code } : {}),
      ...(typeof parsed.detail === 'string' ? { detail: parsed.detail } : {}),
    };
  } catch {
    return {};
  }
}
