import { LicenseError } from '../errors.js';

/**
 * Accepts what people paste (lower case, spaces, missing dashes) and returns `XXXX-XXXX-XXXX-XXXX`.
 * A key that cannot be one is refused here, so it never spends the license's activation allowance.
 */
export function normalizeLicenseKey(input: string): string {
  const compact = String(input).replace(/[\s-]/g, '').toUpperCase();
  if (!/^[A-Z0-9]{16}$/.test(compact)) throw new LicenseError('INVALID_LICENSE_KEY', 'a license key is 16 letters and digits in groups of 4');
  return compact.match(/.{4}/g)!.join('-');
}
