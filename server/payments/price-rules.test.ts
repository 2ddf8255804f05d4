import { describe, expect, it } from 'vitest';
import { percentageFeeCovers } from './price-rules.js';

const ours = 'ca_ours';
const sale = (over: Partial<Parameters<typeof percentageFeeCovers>[0]> = {}) => ({
  applicationFeePercent: 10,
  paymentLinkApplication: ours,
  currency: 'usd',
  amountTotal: 4000,
  ...over,
});

describe('percentageFeeCovers (a Route C link paying the platform fee)', () => {
  it('holds when the percentage of a USD sale reaches 4 USD exactly, in whole basis points', () => {
    expect(percentageFeeCovers(sale(), ours)).toBe(true);
    // 0.07 * 100 is 7.000000000000001 in floating point: still 7 basis points.
    expect(percentageFeeCovers(sale({ applicationFeePercent: 0.07, amountTotal: 571_429 }), ours)).toBe(true);
    expect(percentageFeeCovers(sale({ applicationFeePercent: 0.07, amountTotal: 571_428 }), ours)).toBe(false);
    expect(percentageFeeCovers(sale({ amountTotal: 3999 }), ours)).toBe(false);
  });

  it('fails for a fee another application takes, no platform configured, another currency, or unknown amounts', () => {
    expect(percentageFeeCovers(sale({ paymentLinkApplication: 'ca_other' }), ours)).toBe(false);
    expect(percentageFeeCovers(sale({ paymentLinkApplication: null }), ours)).toBe(false);
    expect(percentageFeeCovers(sale({ paymentLinkApplication: null }), undefined)).toBe(false);
    expect(percentageFeeCovers(sale(), undefined)).toBe(false);
    expect(percentageFeeCovers(sale({ currency: 'eur' }), ours)).toBe(false);
    expect(percentageFeeCovers(sale({ applicationFeePercent: null }), ours)).toBe(false);
    expect(percentageFeeCovers(sale({ amountTotal: null }), ours)).toBe(false);
  });
});
