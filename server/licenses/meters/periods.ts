/**
 * A meter's period: calendar periods in UTC (a day from 00:00, a month from its 1st, a year from
 * 1 January), or the license's whole life. Calendar rather than rolling so that a balance resets at
 * a moment the app can show. A consumption counts in the period containing the moment the authority
 * receives it (service.ts), never one its own date chooses.
 */
export const METER_PERIODS = ['day', 'month', 'year', 'lifetime'] as const;
export type MeterPeriod = (typeof METER_PERIODS)[number];

/** `lifetime` counts in one period starting here. */
const LIFETIME_START = new Date(0);

export interface PeriodBounds {
  /** Counters are per kind too: a day and a month can start at the same instant. */
  kind: MeterPeriod;
  start: Date;
  /** Exclusive; null for `lifetime`. */
  end: Date | null;
}

/** The period of `kind` that contains `at`. */
export function periodContaining(kind: MeterPeriod, at: Date): PeriodBounds {
  const y = at.getUTCFullYear();
  const m = at.getUTCMonth();
  const d = at.getUTCDate();
  switch (kind) {
    case 'day':
      return { kind, start: new Date(Date.UTC(y, m, d)), end: new Date(Date.UTC(y, m, d + 1)) };
    case 'month':
      return { kind, start: new Date(Date.UTC(y, m, 1)), end: new Date(Date.UTC(y, m + 1, 1)) };
    case 'year':
      return { kind, start: new Date(Date.UTC(y, 0, 1)), end: new Date(Date.UTC(y + 1, 0, 1)) };
    case 'lifetime':
      return { kind, start: LIFETIME_START, end: null };
  }
}
