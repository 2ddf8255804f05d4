/**
 * The one closed list of error codes the API answers with, each bound to its HTTP status.
 * Every error body is `{ detail, error_code, status_code }` (plus `reason` where docs/contract.md names one,
 * `earliest_expiry` with NO_SEAT_AVAILABLE, and `remaining` and `period_ends_at` with USAGE_LIMIT_EXCEEDED).
 */
export const ERROR_CODES = {
  VALIDATION_FAILED: 400,
  INVALID_JSON: 400,
  /** Bytes that are not an HTTP/1.1 request (answered by the HTTP server before any route). */
  MALFORMED_REQUEST: 400,
  /** A payment processor notification whose signature is missing, wrong or too old. */
  INVALID_WEBHOOK_SIGNATURE: 400,
  /** The connected processor account has no Price by the id the request names. */
  PRICE_NOT_FOUND: 400,
  /** A Price the price rules refuse (tiered, usage-based, under 4 USD per period, not USD). */
  PRICE_NOT_SUPPORTED: 400,
  /** A processor-connection callback whose `state` is unknown, expired (10 minutes) or already used. */
  PAYMENT_CONNECT_STATE_INVALID: 400,
  /** The processor refused the authorization code of a connection (expired, used, or not for this platform). */
  PAYMENT_AUTHORIZATION_FAILED: 400,
  UNAUTHORIZED: 401,
  INVALID_CREDENTIALS: 401,
  INVALID_TWO_FACTOR_CODE: 401,
  INVALID_REFRESH_TOKEN: 401,
  /** A password reset token that is unknown, expired (15 minutes) or already used. */
  INVALID_RESET_TOKEN: 401,
  INVALID_LICENSE_KEY: 401,
  INVALID_RUNTIME_TOKEN: 401,
  FORBIDDEN: 403,
  /** An API key without the scope the operation needs (`read`, `licenses`, `builds`, `admin`). */
  INSUFFICIENT_SCOPE: 403,
  /** An API key on an operation that changes 2FA, the password or API keys: those take a signed-in session. */
  SESSION_REQUIRED: 403,
  /** A change to 2FA, the password or API keys without the password or a current two-factor code in the request. */
  REAUTHENTICATION_REQUIRED: 403,
  /** A processor-connection callback from a browser or sign-in session other than the one that started it (or one since ended). */
  PAYMENT_CONNECT_STATE_MISMATCH: 403,
  DOWNLOAD_LINK_INVALID: 403,
  DOWNLOAD_LINK_EXPIRED: 403,
  PLAN_REQUIRED: 403,
  /** A change by a developer whose own Latchkey subscription was deleted: reading and signing in still work; a new subscription reactivates the account. */
  ACCOUNT_DEACTIVATED: 403,
  /** The permanent delivery page's download allowance (or the developer's download limit) is used up. */
  DOWNLOAD_LIMIT_REACHED: 403,
  LICENSE_EXPIRED: 403,
  DEVICE_LIMIT_EXCEEDED: 403,
  DEVICE_NOT_ACTIVATED: 403,
  TRIAL_ALREADY_USED: 403,
  /** A redemption batch larger than this server's per-batch quota (docs/contract.md, Limits: per-tenant quotas). */
  REDEMPTION_BATCH_TOO_LARGE: 403,
  /** A build upload that would take the developer's stored builds past their plan's bytes; delete builds or upgrade. */
  STORAGE_QUOTA_EXCEEDED: 403,
  NOT_FOUND: 404,
  APP_NOT_FOUND: 404,
  DEVELOPER_NOT_FOUND: 404,
  API_KEY_NOT_FOUND: 404,
  LICENSE_NOT_FOUND: 404,
  BUILD_NOT_FOUND: 404,
  /** The public entitlement of a checkout session whose payment notification is not processed yet. */
  LICENSE_NOT_PROVISIONED: 404,
  /** A consumption of a feature the license has no meter for (docs/protocol.md, Metered features). */
  METER_NOT_FOUND: 404,
  /** The app has no current payment link (never generated, or paused with DELETE). */
  PAYMENT_LINK_NOT_FOUND: 404,
  /** The app's entitlement webhook is not enabled. */
  ENTITLEMENT_WEBHOOK_NOT_FOUND: 404,
  REDEMPTION_BATCH_NOT_FOUND: 404,
  /** A redemption code nobody issued: a typo or the wrong format (a developer's revoke of another tenant's code too). */
  REDEMPTION_CODE_NOT_FOUND: 404,
  /** A resumable upload session that is not this developer's and app's, or was completed, deleted or expired. */
  UPLOAD_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  EMAIL_IN_USE: 409,
  PRICE_ID_IN_USE: 409,
  TWO_FACTOR_ALREADY_ENABLED: 409,
  TWO_FACTOR_NOT_ENABLED: 409,
  TWO_FACTOR_SETUP_REQUIRED: 409,
  /** An account has at most 20 active API keys. */
  API_KEY_LIMIT_REACHED: 409,
  BUILD_NOT_READY: 409,
  /** A signed package for a build whose package carries no signature the service checks (not Windows or macOS, or a macOS launcher archive). */
  BUILD_NOT_SIGNABLE: 409,
  /** A chunk of a resumable upload that does not start where the upload stands (`Upload-Offset` says where). */
  UPLOAD_OFFSET_MISMATCH: 409,
  /** Completing a resumable upload that is missing bytes (`Upload-Offset` says how many it has). */
  UPLOAD_INCOMPLETE: 409,
  /** An update push, release or delivery-mode change that the push rules refuse; the body carries `reason`. */
  PUSH_CONFLICT: 409,
  NO_READY_BUILD: 409,
  NO_ACTIVE_LICENSE: 409,
  /** Every seat of a floating license is leased to another running device; the body carries `earliest_expiry`, when one frees by itself. */
  NO_SEAT_AVAILABLE: 409,
  /** Setting the seats of a license that is node_locked: its devices are set by device_limit at creation. */
  LICENSE_NOT_FLOATING: 409,
  /** Offline activation of a floating license: its seats are leases that running copies renew online, which an air-gapped machine cannot. */
  FLOATING_LICENSE_ONLINE_ONLY: 409,
  /** A consumption past its meter's uses_per_period in the period; nothing was counted. The body carries `remaining` and `period_ends_at`. */
  USAGE_LIMIT_EXCEEDED: 409,
  /** A consumption's idempotency key already counted for another feature or quantity: keys are one per consumption. */
  IDEMPOTENCY_KEY_REUSED: 409,
  /** A commerce operation while no payment processor account is connected. */
  PAYMENT_ACCOUNT_NOT_CONNECTED: 409,
  /** The processor account is already connected to another developer. */
  PAYMENT_ACCOUNT_IN_USE: 409,
  /** Selling an app needs its Price ID saved first. */
  PRICE_ID_NOT_SET: 409,
  /** A purchase link for a license that is already paid for, or revoked. */
  LICENSE_NOT_PURCHASABLE: 409,
  /** Enabling the entitlement webhook of an app that already has one: rotate its secret, or disable it first. */
  ENTITLEMENT_WEBHOOK_ENABLED: 409,
  /** An entitlement companion request whose `app` is not the app's product key. */
  APP_MISMATCH: 409,
  /** A redact of a store that is still paying or in a live subscription trial, without `force`; the body carries `reason`. */
  STORE_STILL_ENTITLED: 409,
  /** A redemption code that was already redeemed: single use. */
  REDEMPTION_CODE_ALREADY_REDEEMED: 409,
  /** Revoking a code that is no longer Available (redeemed: revoke its license instead; expired). */
  REDEMPTION_CODE_NOT_REVOCABLE: 409,
  /** A paid code whose seller has no active Pro subscription now (paid sales need one); the code stays Available. */
  REDEMPTION_UNAVAILABLE: 409,
  /** A redemption code past its batch's expiry. */
  REDEMPTION_CODE_EXPIRED: 410,
  /** A redemption code the developer revoked. */
  REDEMPTION_CODE_REVOKED: 410,
  /**
   * The request's headers, or its body, came too slowly: headers past LATCHKEY_HEADERS_TIMEOUT_MS, a body
   * past LATCHKEY_BODY_TIMEOUT_MS (uploads excepted), or a pause between body bytes past
   * LATCHKEY_BODY_IDLE_TIMEOUT_MS (uploads too). Nothing of the request is kept; the connection closes.
   */
  REQUEST_TIMEOUT: 408,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RANGE_NOT_SATISFIABLE: 416,
  PACKAGE_REJECTED: 422,
  /** A signed package without the platform's code signature: no Authenticode certificate table in the PE, no LC_CODE_SIGNATURE in the Mach-O. */
  PACKAGE_NOT_SIGNED: 422,
  /** The bytes of a resumable upload do not hash to the SHA-256 declared when it started. */
  UPLOAD_CHECKSUM_MISMATCH: 422,
  RATE_LIMITED: 429,
  /** More than 5 redemption attempts in a minute from one address. */
  REDEMPTION_RATE_LIMITED: 429,
  /** Too many wrong two-factor codes for the account: its second-factor checks are locked for a while (`Retry-After`). */
  TWO_FACTOR_LOCKED: 429,
  /** The developer's licenses minted this clock hour (every route) reached their quota; `Retry-After` says when the hour ends. */
  LICENSE_QUOTA_EXCEEDED: 429,
  /** The app deactivated devices of this license as often as its app allows in 30 days (`app_deactivations_per_30_days`); `Retry-After` says when the oldest leaves the window. */
  DEACTIVATION_QUOTA_EXCEEDED: 429,
  /** The developer's redemption codes created this UTC day reached their quota (`Retry-After`). */
  REDEMPTION_CODE_QUOTA_EXCEEDED: 429,
  /** The developer's license delivery emails queued this clock hour reached their quota (`Retry-After`). */
  EMAIL_QUOTA_EXCEEDED: 429,
  /** The request line and headers exceed LATCHKEY_MAX_HEADER_BYTES. */
  HEADERS_TOO_LARGE: 431,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  /** No Stripe key configured on this server (LATCHKEY_STRIPE_SECRET_KEY). */
  PAYMENTS_NOT_CONFIGURED: 503,
  /** The payment processor did not answer, or answered with its own failure; retry later. */
  PAYMENT_PROCESSOR_UNAVAILABLE: 503,
  /** The object storage (LATCHKEY_STORAGE=s3) did not answer or refused the server; an upload it cut off is not kept. Retry later. */
  STORAGE_UNAVAILABLE: 503,
  /** The server's disk (its storage or its database) is full: nothing of the request was kept. */
  INSUFFICIENT_STORAGE: 507,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorBody {
  detail: string;
  error_code: ErrorCode;
  status_code: number;
  reason?: string;
  /** NO_SEAT_AVAILABLE: when the first of the leases holding the seats expires unless renewed (ISO 8601). */
  earliest_expiry?: string;
  /** USAGE_LIMIT_EXCEEDED: the units left in the period, and when it resets (ISO 8601; null for a lifetime meter). */
  remaining?: number;
  period_ends_at?: string | null;
}

/** The one error type routes and services raise; the error middleware renders it. */
export class RequestError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    detail: string,
    readonly extra: { reason?: string; earliest_expiry?: string; balance?: { remaining: number; period_ends_at: string | null }; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.status = ERROR_CODES[code];
  }

  toBody(): ErrorBody {
    const body: ErrorBody = { detail: this.message, error_code: this.code, status_code: this.status };
    if (this.extra.reason) body.reason = this.extra.reason;
    if (this.extra.earliest_expiry) body.earliest_expiry = this.extra.earliest_expiry;
    if (this.extra.balance) Object.assign(body, this.extra.balance);
    return body;
  }
}

/** One-line guard: `assertThat(app, 'APP_NOT_FOUND', 'No such app')`. */
export function assertThat(condition: unknown, code: ErrorCode, detail: string): asserts condition {
  if (!condition) throw new RequestError(code, detail);
}
