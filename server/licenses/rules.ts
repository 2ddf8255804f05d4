import { RequestError } from '../errors.js';

/** A no-commitment trial runs this long from its first activation on a machine. */
export const NO_COMMITMENT_TRIAL_DAYS = 14;

export const LICENSE_STATUSES = ['ACTIVE', 'REVOKED', 'EXPIRED', 'DEMO'] as const;
export type LicenseStatus = (typeof LICENSE_STATUSES)[number];

export const LICENSE_TYPES = ['perpetual', 'subscription', 'trial'] as const;
export type LicenseType = (typeof LICENSE_TYPES)[number];

/**
 * The status a license has now. Only transitions (revoke, redact) are stored; passing `expires_at`
 * expires a license by itself, so this one SQL expression is what every read and filter uses.
 * Its one binding is the current time.
 */
export const EFFECTIVE_STATUS_SQL =
  `CASE WHEN licenses.status IN ('ACTIVE', 'DEMO') AND licenses.expires_at <= ? THEN 'EXPIRED' ELSE licenses.status END`;

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
