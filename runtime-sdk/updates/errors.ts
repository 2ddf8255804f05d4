/**
 * Every way an update can fail: one closed list of stable codes. The updater never throws them at
 * the app (a failed update leaves it running as it is); they name what happened in the outcome of
 * `checkInBackground()` and in the debug log.
 */
export const UPDATE_ERROR_CODES = {
  /** The authority could not be reached, answered 5xx, or answered something unreadable. */
  CHECK_FAILED: { retryable: true },
  /** The authority refused the check (4xx): a revoked key, a request it does not accept. */
  CHECK_REFUSED: { retryable: false },
  /** The manifest did not verify: signature, app, platform, device, license, expiry, serial, claims. */
  MANIFEST_REJECTED: { retryable: false },
  /** The package could not be fetched (network, timeouts, 5xx, an expired link); a partial download is kept to resume. */
  DOWNLOAD_FAILED: { retryable: true },
  /** The bytes are not the ones the manifest signed: a wrong hash, longer or shorter than `length`, a bad archive. */
  PACKAGE_REJECTED: { retryable: false },
  /** What to replace cannot be worked out on this host (a platform the authority does not list, no app file). */
  TARGET_UNSUPPORTED: { retryable: false },
  /** A step of the swap was refused (a locked file, a permission); what was done is rolled back. */
  INSTALL_FAILED: { retryable: true },
  /** The updater's own files (its state, the download cache) could not be read or written. */
  DISK_FAILED: { retryable: true },
} as const satisfies Record<string, { retryable: boolean }>;

export type UpdateErrorCode = keyof typeof UPDATE_ERROR_CODES;

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
