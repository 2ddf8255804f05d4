import { LICENSE_FEE_USD } from '../billing/fee-rule.js';

/** The Pro subscription, per year. docs/contract.md names the field, not the amount: our price list. */
export const PRO_BASE_FEE_ANNUAL_USD = 99;
/** docs/contract.md Limits: downloads a license gets by default ("10 in the example"). */
export const FREE_DOWNLOAD_LIMIT = 10;
/** Artifact storage beyond the included allowance, per GB-month: our price list. */
export const STORAGE_FEE_PER_GB_MONTH_USD = 0.1;

/** `GET /v1/public/pricing`. */
export const PUBLIC_PRICING = {
  base_fee_annual_usd: PRO_BASE_FEE_ANNUAL_USD,
  license_fee_usd: LICENSE_FEE_USD,
  free_download_limit: FREE_DOWNLOAD_LIMIT,
  storage_fee_per_gb_month_usd: STORAGE_FEE_PER_GB_MONTH_USD,
} as const;
