import { describe, expect, it } from 'vitest';
import { feeDue, feeExempt, licenseFee } from './fee-rule.js';

describe('the platform fee rule', () => {
  it('charges 4 USD once per license, keyed by the license for the processor', () => {
    expect(feeDue({ licenseId: 'lic_1', licenseType: 'perpetual' })).toEqual({
      license_id: 'lic_1',
      amount_cents: 400,
      currency: 'usd',
      report_idempotency_key: 'license_fee:lic_1',
      collected_by: 'usage_report',
      report_status: 'pending',
      report_detail: null,
    });
    expect(feeDue({ licenseId: 'lic_2', licenseType: 'subscription' })?.amount_cents).toBe(400);
  });

  it('never bills a trial license or a test license, whatever its type', () => {
    expect(feeDue({ licenseId: 'lic_1', licenseType: 'trial' })).toBeNull();
    expect(feeDue({ licenseId: 'lic_1', licenseType: 'perpetual', test: true })).toBeNull();
    expect(feeExempt({ licenseType: 'subscription', test: true })).toBe(true);
    expect(feeExempt({ licenseType: 'subscription' })).toBe(false);
  });

  it('records a fee the processor took as the application fee without reporting it', () => {
    expect(licenseFee('lic_1', 'application_fee')).toMatchObject({
      amount_cents: 400,
      collected_by: 'application_fee',
      report_status: 'not_reported',
      report_detail: "collected by the processor as the sale's application fee",
    });
  });
});
