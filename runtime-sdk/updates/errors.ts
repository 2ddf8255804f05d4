import type { UpdateFailureReason } from '../protocol.js';

/**
 * Every way an update can fail: one closed list of stable codes. The updater never throws them at
 * the app (a failed update leaves it running as it is); they name what happened in the outcome of
 * `checkInBackground()` and in the debug log. Those with a `reported` reason are failures of an
 * install the user asked for: reported to the authority (`event: failed`) and backed off.
 */
export const UPDATE_ERROR_CODES = {
  /** The authority could not be reached, answered 5xx, or answered something unreadable. */
  CHECK_FAILED: { retryable: true },
  /** The authority refused the check (4xx): a revoked key, a request it does not accept. */
  CHECK_REFUSED: { retryable: false },
  /** The manifest did not verify: signature, app, platform, device, license, expiry, serial, claims. */
  MANIFEST_REJECTED: { retryable: false },
  /** The package could not be fetched (network, timeouts, 5xx, an expired link); a partial download is kept to resume. */
  DOWNLOAD_FAILED: { retryable: true, reported: 'download_failed' },
  /** The bytes are not the ones the manifest signed: a wrong hash, longer or shorter than `length`, a bad archive. */
  PACKAGE_REJECTED: { retryable: false, reported: 'package_rejected' },
  /** What to replace cannot be worked out on this host (a platform the authority does not list, no app file). */
  TARGET_UNSUPPORTED: { retryable: false },
  /** The `appFile` the app named is not the app's own running file (a document, node itself): nothing is fetched or touched. */
  APP_FILE_REFUSED: { retryable: false },
  /** A step of the swap was refused (a locked file, a permission); what was done is rolled back. */
  INSTALL_FAILED: { retryable: true, reported: 'install_failed' },
  /** The updater's own files (its state, the download cache) could not be read or written. */
  DISK_FAILED: { retryable: true, reported: 'disk_failed' },
} as const satisfies Record<string, { retryable: boolean; reported?: UpdateFailureReason }>;

export type UpdateErrorCode = keyof typeof UPDATE_ERROR_CODES;

/** The reason an install failing with `code` is reported with, or undefined when it is no install failure. */
export function reportedReason(code: UpdateErrorCode): UpdateFailureReason | undefined {
  const entry = UPDATE_ERROR_CODES[code];
  return 'reported' in entry ? entry.reported : undefined;
}

export class UpdateError extends Error {
  readonly retryable: boolean;

  constructor(
    readonly code: UpdateErrorCode,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'UpdateError';
    this.retryable = UPDATE_ERROR_CODES[code].retryable;
  }
}

/** An UpdateError as is; anything else (a bug, an fs error escaping a step) as `fallback`. */
export function asUpdateError(err: unknown, fallback: UpdateErrorCode): UpdateError {
  return err instanceof UpdateError ? err : new UpdateError(fallback, err instanceof Error ? err.message : String(err), { cause: err });
}
