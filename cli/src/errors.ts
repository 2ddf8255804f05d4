/**
 * What `latchkey` exits with: one closed list, so scripts can branch on the kind of failure.
 * `latchkey --help` and the README print the same table (`EXIT_CODE_HELP`).
 */
export const EXIT = {
  OK: 0,
  /** An API error without a code of its own (a 5xx, a 413, a 429), a failed build, a checksum mismatch. */
  FAILED: 1,
  /** A bad command line, or arguments the API refused as invalid (400). */
  USAGE: 2,
  /** No API key, or the key was refused or is not allowed to do this (401, 403). */
  AUTH: 3,
  NOT_FOUND: 4,
  /** The API refused the operation in the current state (409, 410, 422). */
  REFUSED: 5,
  UNREACHABLE: 6,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export const EXIT_CODE_HELP = `Exit codes:
  0  success
  1  API or other error (server error, failed build, checksum mismatch)
  2  usage error: bad arguments, or the API refused them as invalid (400)
  3  not signed in, or the API key was refused or lacks the right (401, 403)
  4  not found (404)
  5  refused in the current state (409, 410, 422)
  6  server unreachable`;

/** A failure to show the user as is (after `latchkey: `), with the exit code that classifies it. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode = EXIT.FAILED,
  ) {
    super(message);
  }
}

/** An error answer of the API: its body goes to stdout under `--json`. */
export class ApiError extends CliError {
  constructor(
    message: string,
    exitCode: ExitCode,
    readonly body: unknown,
    /** The HTTP status: what a retry decides on (a proxy's 502 carries no error body of ours). */
    readonly status: number,
  ) {
    super(message, exitCode);
  }
}

export function exitCodeForStatus(status: number): ExitCode {
  if (status === 400) return EXIT.USAGE;
  if (status === 401 || status === 403) return EXIT.AUTH;
  if (status === 404) return EXIT.NOT_FOUND;
  if (status === 409 || status === 410 || status === 422) return EXIT.REFUSED;
  return EXIT.FAILED;
}

/** Said wherever the CLI has no key, or the server refused the one it sent. */
export const SIGN_IN_HINT = 'run `latchkey login --url <server>` or set LATCHKEY_API_KEY (create a key in the portal)';
