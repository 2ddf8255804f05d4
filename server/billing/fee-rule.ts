import type { LicenseType } from '../licenses/rules.js';

/** docs/contract.md: "Platform fee: 4 USD per license". */
export const LICENSE_FEE_USD = 4;
export const LICENSE_FEE_CENTS = LICENSE_FEE_USD * 100;
export const FEE_CURRENCY = 'usd';

/** docs/contract.md: "Trial and test licenses are never billed" (a test license is flagged apart, whatever its type). */
export const FEE_EXEMPT_LICENSE_TYPES: readonly LicenseType[] = ['trial'];

/** How a fee reaches the platform: one closed list (the table's CHECK matches). */
export const FEE_COLLECTIONS = ['usage_report', 'application_fee'] as const;
export type FeeCollection = (typeof FEE_COLLECTIONS)[number];

/**
 * The processor's idempotency keys are one namespace per account: the prefix keeps this event's key
 * from ever matching another request's that also names the license.
 */
export const feeIdempotencyKey = (licenseId: string) => `license_fee:${licenseId}`;

/** The ledger row's values a fee carries (billing/store.ts writes them with the license's other columns). */
export interface LicenseFee {
  license_id: string;
  amount_cents: number;
  currency: string;
  report_idempotency_key: string;
  collected_by: FeeCollection;
  /** `pending`: a job reports it to the processor; `not_reported`: the processor took it from the sale itself. */
  report_status: 'pending' | 'not_reported';
  report_detail: string | null;
}

/** Whether selling a license of this type owes no fee: trial and test licenses never do. */
export const feeExempt = (sale: { licenseType: LicenseType; test?: boolean }): boolean => FEE_EXEMPT_LICENSE_TYPES.includes(sale.licenseType) || sale.test === true;

/**
 * The fee of one license sold, however it is collected: `usage_report` (the default) is reported
 * to the processor by a job; `application_fee` was taken by the processor from the sale itself,
 * so it is recorded, not reported. Whether one is due at all is `feeExempt`'s (or `feeDue`'s).
 */
export function licenseFee(licenseId: string, collectedBy: FeeCollection = 'usage_report'): LicenseFee {
  const byApplicationFee = collectedBy === 'application_fee';
  return {
    license_id: licenseId,
    amount_cents: LICENSE_FEE_CENTS,
    currency: FEE_CURRENCY,
    report_idempotency_key: feeIdempotencyKey(licenseId),
    collected_by: collectedBy,
    report_status: byApplicationFee ? 'not_reported' : 'pending',
    report_detail: byApplicationFee ? "collected by the processor as the sale's application fee" : null,
  };
}

/** The fee a sale owes, or null for a sale that owes none (docs/contract.md's platform fee rule). */
export const feeDue = (sale: { licenseId: string; licenseType: LicenseType; test?: boolean; collectedBy?: FeeCollection }): LicenseFee | null =>
  feeExempt(sale) ? null : licenseFee(sale.licenseId, sale.collectedBy);
