import { describe, expect, it } from 'vitest';
import { LicenseError } from '../errors.js';
import { balanceOf, emptyBook, localRemaining, parseBook, whenRefused, type MeterBookState } from './meter-book.js';

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
  it('knows no balance for a feature named like an Object.prototype key the authority never answered', () => {
    for (const feature of ['constructor', 'toString', 'hasOwnProperty', 'valueOf']) expect(localRemaining(book(), feature, T)).toBeUndefined();
    const b = book({ balances: { constructor: { remaining: 2, usesPerPeriod: 2, periodEndsAt: null } } });
    expect(localRemaining(b, 'constructor', T)).toBe(2);
  });

  it('a consumption queued in a period that has since ended counts against the balance of the period it is reported in', () => {
    // The authority answered for June; the consumption was made in May and is still to be reported: June pays for it.
    const b = book({
      balances: { export: { remaining: 4, usesPerPeriod: 10, periodEndsAt: Date.parse('2026-07-01T00:00:00.000Z') } },
      pending: [{ idempotencyKey: 'k1-aaaaaaaa', feature: 'export', quantity: 3, consumedAt: '2026-05-31T23:00:00.000Z' }],
    });
    expect(localRemaining(b, 'export', Date.parse('2026-06-02T00:00:00.000Z'))).toBe(1);
  });

  it('drops a refused queued consumption only when the refusal is final', () => {
    const refused = (code: ConstructorParameters<typeof LicenseError>[0], status?: number) => whenRefused(new LicenseError(code, 'x', { status }));
    // The authority will never count it: over the limit, no meter any more, the license ended, the key spent on another consumption.
    for (const code of ['USAGE_LIMIT_REACHED', 'FEATURE_NOT_METERED', 'LICENSE_EXPIRED', 'INVALID_LICENSE_KEY'] as const) expect(refused(code)).toBe('drop');
    expect(refused('REQUEST_REJECTED', 409)).toBe('drop');
    // It may count later: once reachable, once the device is activated again, with another token.
    for (const code of ['OFFLINE', 'SERVER_UNAVAILABLE', 'TOO_MANY_ATTEMPTS', 'DEVICE_DEACTIVATED', 'TOKEN_NOT_RECOGNISED', 'INVALID_SERVER_RESPONSE', 'DISPOSED'] as const) {
      expect(refused(code)).toBe('keep');
    }
    // A format the authority does not take (an older or newer SDK): kept for a later report, not blocking consumption.
    expect(refused('REQUEST_REJECTED', 400)).toBe('set-aside');
    expect(refused('REQUEST_REJECTED')).toBe('set-aside');
  });
});
