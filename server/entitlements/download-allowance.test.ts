import { describe, expect, it } from 'vitest';
import { allowanceLeft, chargeFits } from './download-allowance.js';

describe('download allowance', () => {
  it('leaves the limit less what was used, never below zero', () => {
    expect(allowanceLeft(0, 10)).toBe(10);
    expect(allowanceLeft(9.5, 10)).toBe(0.5);
    expect(allowanceLeft(12, 10)).toBe(0);
  });

  it('serves a whole file while a whole download is left, and not past the limit', () => {
    expect(chargeFits({ used: 9, bytes: 100, sizeBytes: 100, limit: 10 })).toBe(true);
    expect(chargeFits({ used: 9.01, bytes: 100, sizeBytes: 100, limit: 10 })).toBe(false);
    expect(chargeFits({ used: 10, bytes: 100, sizeBytes: 100, limit: 10 })).toBe(false);
  });

  it('counts a range as its share of the file: the rest of a resumed download fits what is left', () => {
    expect(chargeFits({ used: 9.5, bytes: 50, sizeBytes: 100, limit: 10 })).toBe(true);
    expect(chargeFits({ used: 9.5, bytes: 51, sizeBytes: 100, limit: 10 })).toBe(false);
  });

  it('lets an answer without bytes (HEAD, 304) through only while some allowance is left', () => {
    expect(chargeFits({ used: 9.99, bytes: 0, sizeBytes: 100, limit: 10 })).toBe(true);
    expect(chargeFits({ used: 10, bytes: 0, sizeBytes: 100, limit: 10 })).toBe(false);
    expect(chargeFits({ used: 3, bytes: 0, sizeBytes: 0, limit: 10 })).toBe(true);
  });

  it('allows nothing with a limit of zero', () => {
    expect(chargeFits({ used: 0, bytes: 1, sizeBytes: 100, limit: 0 })).toBe(false);
  });
});
