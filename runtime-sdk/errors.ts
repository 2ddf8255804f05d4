/**
 * Every failure the SDK reports: one closed list of stable codes. Apps branch on `code`, retry when
 * `retryable`, and may show `userMessage` to the end user as is.
 */
export const LICENSE_ERROR_CODES = {
  INVALID_LICENSE_KEY: { retryable: false, userMessage: 'This license key is not valid. Check it and try again.' },
  LICENSE_EXPIRED: { retryable: false, userMessage: 'This license has expired.' },
  DEVICE_LIMIT_REACHED: {
    retryable: false,
    userMessage: 'This license is already in use on the maximum number of computers. Free a computer or ask the vendor to reset the devices.',
  },
  /** Every seat of the floating license is in use by other running computers; one frees when its app closes or stops renewing it. */
  NO_SEAT_AVAILABLE: {
    retryable: true,
    userMessage: 'All seats of this license are in use on other computers. Close the app on one of them, or try again in a few minutes.',
  },
  TRIAL_ALREADY_USED: { retryable: false, userMessage: 'A trial of this app has already been used on this computer.' },
  /** The vendor reset the license's devices; this computer must be activated again. */
  DEVICE_DEACTIVATED: { retryable: false, userMessage: 'This computer is no longer activated for this license. Enter your license key to activate it again.' },
  /** `deactivate()` past the license's deactivations from the app in 30 days (`retryAfterSeconds` says when one is free); nothing changed. */
  DEACTIVATION_LIMIT_REACHED: {
    retryable: false,
    userMessage: 'This license has been deactivated on computers too often recently. Try again later or ask the vendor to reset the devices.',
  },
  /** `consume()` past the meter's balance for its period (`remaining` and `periodEndsAt` say what is left and when it resets); nothing counted. */
  USAGE_LIMIT_REACHED: { retryable: false, userMessage: 'You have used all of this feature’s allowance for now. It renews at the start of the next period.' },
  /** `consume()` of a feature the license has no meter for. */
  FEATURE_NOT_METERED: { retryable: false, userMessage: 'This feature is not included in your license.' },
  TOO_MANY_ATTEMPTS: { retryable: true, userMessage: 'Too many activation attempts. Wait a few minutes and try again.' },
  OFFLINE: { retryable: true, userMessage: 'The license server cannot be reached. Check your internet connection and try again.' },
  SERVER_UNAVAILABLE: { retryable: true, userMessage: 'The license server is having trouble. Try again in a few minutes.' },
  /** The authority refused the request's shape: an SDK or app bug, not something the user can fix. */
  REQUEST_REJECTED: { retryable: false, userMessage: 'The license server refused the request. Update the app or contact its vendor.' },
  /** The authority does not recognise the token it is shown (keys rotated); the license key still works. */
  TOKEN_NOT_RECOGNISED: { retryable: false, userMessage: 'The license needs to be confirmed again. Enter your license key.' },
  /** The answer did not verify (signature, app, device) or could not be read: never trusted. */
  INVALID_SERVER_RESPONSE: { retryable: false, userMessage: 'The license server answer could not be verified. Contact the app vendor.' },
  /** The grant's issue time is too far from this computer's clock to be trusted. */
  CLOCK_INCORRECT: { retryable: false, userMessage: "This computer's date and time are wrong. Correct them and try again." },
  /** `importLicenseFile()` was given something that is not a license file of this app signed by the authority (forged, altered, truncated). */
  INVALID_LICENSE_FILE: { retryable: false, userMessage: 'This license file is not valid for this app. Use the file made from this computer’s activation request.' },
  /** The license file was made from another computer's (or another installation's) activation request. */
  LICENSE_FILE_WRONG_DEVICE: { retryable: false, userMessage: 'This license file was made for another computer. Create an activation request on this computer.' },
  /** The license file is past its import deadline (`file_expires_at`); a fresh request makes a new one without taking a seat. */
  LICENSE_FILE_EXPIRED: { retryable: false, userMessage: 'This license file has expired. Create a new activation request on this computer.' },
  NOT_ACTIVATED: { retryable: false, userMessage: 'This app has not been activated yet. Enter your license key.' },
  INVALID_OPTIONS: { retryable: false, userMessage: 'The app is not configured correctly for licensing. Contact the app vendor.' },
  DISPOSED: { retryable: false, userMessage: 'The license client has been closed.' },
} as const satisfies Record<string, { retryable: boolean; userMessage: string }>;

export type LicenseErrorCode = keyof typeof LICENSE_ERROR_CODES;

export class LicenseError extends Error {
  readonly retryable: boolean;
  readonly userMessage: string;

  constructor(
    readonly code: LicenseErrorCode,
    /** Developer-facing detail (the server's `detail`, the cause); never shown to end users as is. */
    message: string = LICENSE_ERROR_CODES[code].userMessage,
    readonly extra: {
      status?: number;
      retryAfterSeconds?: number;
      /** USAGE_LIMIT_REACHED: the units left in the meter's period, and when it resets (null: a lifetime meter, or not known). */
      remaining?: number;
      periodEndsAt?: Date | null;
      cause?: unknown;
    } = {},
  ) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'LicenseError';
    this.retryable = LICENSE_ERROR_CODES[code].retryable;
    this.userMessage = LICENSE_ERROR_CODES[code].userMessage;
  }
}
