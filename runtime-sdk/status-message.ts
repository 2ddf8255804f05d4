import type { LicenseStatus } from './status.js';

/** What an end user reads when the app cannot run, by the reason the SDK gives. */
export function statusMessage(status: LicenseStatus): string {
  switch (status.reason) {
    case 'grace_exhausted':
      return 'This app needs to reach its license server again. Connect to the internet and restart it.';
    case 'revoked_by_vendor':
      return 'This license has been revoked.';
    case 'license_expired':
    case 'trial_used':
      return 'This license has expired.';
    case 'clock_rollback':
      return "This computer's clock was set back. Correct it and connect to the internet.";
    default:
      return 'This app needs a license key.';
  }
}
