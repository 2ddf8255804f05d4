import { describe, expect, it } from 'vitest';
import { balanceOf, emptyBook, localRemaining, parseBook, type MeterBookState } from './meter-book.js';

const T = Date.parse('2026-05-10T12:00:00.000Z');
const book = (over: Partial<MeterBookState> = {}): MeterBookState => ({ ...emptyBook('lic_1'), ...over });

describe('the meter book', () => {
  it('knows no balance for a feature the authority never answered', () => {
    expect(localRemaining(book(), 'export', T)).toBeUndefined();
  });

  it('subtracts the consumptions queued since the last answer', () => {
    const b = book({
      balances: { export: { remaining: 5, usesPerPeriod: 10, periodEndsAt: Date.parse('2026-06-01T00:00:00.000Z') } },
      pending: [
        { idempotencyKey: 'k1-aaaaaaaa', feature: 'export', quantity: 2, consumedAt: '2026-05-10T11:00:00.000Z' },
        { idempotencyKey: 'k2-aaaaaaaa', feature: 'print', quantity: 9, consumedAt: '2026-05-10T11:00:00.000Z' },
      ],
    });
    expect(localRemaining(b, 'export', T)).toBe(3);
  });

  it('forgets a balance once its period has ended, keeps a lifetime one', () => {
    const ends = Date.parse('2026-05-11T00:00:00.000Z');
    const b = book({ balances: { export: { remaining: 5, usesPerPeriod: 10, periodEndsAt: ends }, once: { remaining: 1, usesPerPeriod: 1, periodEndsAt: null } } });
    expect(localRemaining(b, 'export', ends - 1)).toBe(5);
    expect(localRemaining(b, 'export', ends)).toBeUndefined();
    expect(localRemaining(b, 'once', ends + 1e12)).toBe(1);
  });

  it('takes the balance from an answer', () => {
    const answer = { license_id: 'lic_1', feature: 'export', quantity: 1, used: 4, remaining: 6, uses_per_period: 10, period_ends_at: '2026-06-01T00:00:00.000Z', replayed: false };
    expect(balanceOf(answer)).toEqual({ remaining: 6, usesPerPeriod: 10, periodEndsAt: Date.parse('2026-06-01T00:00:00.000Z') });
    expect(balanceOf({ ...answer, period_ends_at: null }).periodEndsAt).toBeNull();
  });

  it('reads back only a well-formed book', () => {
    const good = book({ pending: [{ idempotencyKey: 'k1-aaaaaaaa', feature: 'export', quantity: 1, consumedAt: '2026-05-10T11:00:00.000Z' }] });
    expect(parseBook(JSON.parse(JSON.stringify(good)))).toEqual(good);
    expect(parseBook(undefined)).toBeUndefined();
    expect(parseBook({ ...good, pending: [{ ...good.pending[0], quantity: 0 }] })).toBeUndefined();
    expect(parseBook({ ...good, licenseId: 7 })).toBeUndefined();
  });
});
