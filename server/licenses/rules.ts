import { RequestError } from '../errors.js';

/** A no-commitment trial runs this long from its first activation on a machine. */
export const NO_COMMITMENT_TRIAL_DAYS = 14;

export const LICENSE_STATUSES = ['ACTIVE', 'REVOKED', 'EXPIRED', 'DEMO'] as const;
export type LicenseStatus = (typeof LICENSE_STATUSES)[number];

export const LICENSE_TYPES = ['perpetual', 'subscription', 'trial'] as const;
export type LicenseType = (typeof LICENSE_TYPES)[number];

/** node_locked: a seat is an activated device; floating: a seat is a lease a running app holds (docs/protocol.md). */
export const SEAT_MODELS = ['node_locked', 'floating'] as const;
export type SeatModel = (typeof SEAT_MODELS)[number];

/** A floating license's lease life when its creator names none: the offline grace of its apps too. */
export const DEFAULT_LEASE_TTL_MINUTES = 15;

/**
 * The stored seat columns of what a request creates (a license, a redemption batch): a floating
 * one keeps its seats in device_limit and its lease life (defaulted); a node-locked one its device
 * limit, else the app's default.
 */
export function seatColumns(
  input: { seat_model: SeatModel; max_concurrent?: number | undefined; lease_ttl_minutes?: number | undefined; device_limit?: number | undefined },
  defaultDeviceLimit: number,
) {
  const floating = input.seat_model === 'floating';
  return {
    seat_model: input.seat_model,
    device_limit: input.max_concurrent ?? input.device_limit ?? defaultDeviceLimit,
    lease_ttl_minutes: floating ? (input.lease_ttl_minutes ?? DEFAULT_LEASE_TTL_MINUTES) : null,
  };
}

/**
 * The status a license has now. Only transitions (revoke, redact) are stored; passing `expires_at`
 * expires a license by itself, so this one SQL expression is what every read and filter uses.
 * `now` is the SQL of the current time: a knex binding (`?`, EFFECTIVE_STATUS_SQL) or a numbered
 * parameter of a prepared statement (`$1`).
 */
export const effectiveStatusSqlAt = (now: string) => `CASE WHEN licenses.status IN ('ACTIVE', 'DEMO') AND licenses.expires_at <= ${now} THEN 'EXPIRED' ELSE licenses.status END`;

/** effectiveStatusSqlAt with its one binding, the current time, as knex's `?`. */
export const EFFECTIVE_STATUS_SQL = effectiveStatusSqlAt('?');

/**
 * Whether a runtime may use the license, first failing rule wins: an unknown or revoked key is
 * indistinguishable from a wrong one (401); an expired license says so (403).
 */
export function assertUsable(license: { effective_status: LicenseStatus } | undefined): asserts license {
  if (!license || license.effective_status === 'REVOKED') {
    throw new RequestError('INVALID_LICENSE_KEY', 'The license key is invalid or has been revoked');
  }
  if (license.effective_status === 'EXPIRED') {
    throw new RequestError('LICENSE_EXPIRED', 'The license has expired');
  }
}

/** A trial created without an expiry: its clock starts at the first activation. */
export function isUnstartedTrial(license: { license_type: LicenseType; expires_at: Date | null }): boolean {
  return license.license_type === 'trial' && license.expires_at === null;
}
