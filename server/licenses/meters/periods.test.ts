import { describe, expect, it } from 'vitest';
import { periodContaining } from './periods.js';

const at = (iso: string) => new Date(iso);
const bounds = (kind: Parameters<typeof periodContaining>[0], iso: string) => {
  const { start, end } = periodContaining(kind, at(iso));
  return [start.toISOString(), end?.toISOString() ?? null];
};

describe('meter periods (UTC calendar)', () => {
  it('a day runs from 00:00 UTC to the next 00:00, whatever the moment inside it', () => {
    expect(bounds('day', '2026-03-14T00:00:00.000Z')).toEqual(['2026-03-14T00:00:00.000Z', '2026-03-15T00:00:00.000Z']);
    expect(bounds('day', '2026-03-14T23:59:59.999Z')).toEqual(['2026-03-14T00:00:00.000Z', '2026-03-15T00:00:00.000Z']);
    expect(bounds('day', '2026-12-31T12:00:00.000Z')).toEqual(['2026-12-31T00:00:00.000Z', '2027-01-01T00:00:00.000Z']);
  });

  it('a month runs from its 1st to the next 1st, across year ends and short months', () => {
    expect(bounds('month', '2026-12-31T23:59:59.999Z')).toEqual(['2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z']);
    expect(bounds('month', '2028-02-29T10:00:00.000Z')).toEqual(['2028-02-01T00:00:00.000Z', '2028-03-01T00:00:00.000Z']);
    expect(bounds('month', '2026-03-01T00:00:00.000Z')).toEqual(['2026-03-01T00:00:00.000Z', '2026-04-01T00:00:00.000Z']);
  });

  it('a year runs from 1 January to the next', () => {
    expect(bounds('year', '2026-07-04T08:00:00.000Z')).toEqual(['2026-01-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z']);
  });

  it('a moment just before midnight UTC belongs to the day before, in any local time zone', () => {
    // 23:30 UTC is already the next day east of UTC: the period is UTC's.
    expect(bounds('day', '2026-05-31T23:30:00.000Z')[0]).toBe('2026-05-31T00:00:00.000Z');
    expect(bounds('month', '2026-05-31T23:30:00.000Z')[0]).toBe('2026-05-01T00:00:00.000Z');
  });

  it('lifetime is one period with no end', () => {
    expect(bounds('lifetime', '2026-07-04T08:00:00.000Z')).toEqual(['1970-01-01T00:00:00.000Z', null]);
  });
});
