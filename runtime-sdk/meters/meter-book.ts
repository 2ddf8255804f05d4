/**
 * What an installation knows of its license's meters between answers of the authority
 * (docs/protocol.md, Metered features): the last balance the authority answered per feature, and the
 * consumptions not yet reported, in order, each with the idempotency key it keeps until answered.
 * Pure state and rules; metering.ts persists it and talks to the authority.
 */
import type { LicenseError } from '../errors.js';
import type { ConsumeAnswer } from '../protocol.js';

export interface Balance {
  /** Units left after the authority's last answer for the feature. */
  remaining: number;
  usesPerPeriod: number;
  /** Epoch ms; null for a lifetime meter. Past it, the balance is not known any more. */
  periodEndsAt: number | null;
}

export interface PendingConsumption {
  idempotencyKey: string;
  feature: string;
  quantity: number;
  /** ISO 8601, as the authority reckons time: recorded with it; the period is the one current when it is reported. */
  consumedAt: string;
}

export interface MeterBookState {
  /** The license the book is for: a book of another license (after a new activation) is dropped. */
  licenseId: string;
  balances: Record<string, Balance>;
  pending: PendingConsumption[];
}

/** The last balance the authority answered for `feature`; a name like `constructor` is a feature, not an Object.prototype key. */
export const balanceFor = (book: MeterBookState, feature: string): Balance | undefined => (Object.hasOwn(book.balances, feature) ? book.balances[feature] : undefined);

export const emptyBook = (licenseId: string): MeterBookState => ({ licenseId, balances: {}, pending: [] });

export function balanceOf(answer: ConsumeAnswer): Balance {
  return {
    remaining: answer.remaining,
    usesPerPeriod: answer.uses_per_period,
    periodEndsAt: answer.period_ends_at === null ? null : Date.parse(answer.period_ends_at),
  };
}

/**
 * The units of `feature` this installation may still consume without the authority: the last
 * answered balance less everything queued, whenever it was consumed (the authority counts a report in
 * the period it arrives in). Undefined when no balance is known, or its period has ended (the next
 * period's balance is the authority's to tell).
 */
export function localRemaining(book: MeterBookState, feature: string, now: number): number | undefined {
  const balance = balanceFor(book, feature);
  if (!balance || (balance.periodEndsAt !== null && now >= balance.periodEndsAt)) return undefined;
  const queued = book.pending.filter((p) => p.feature === feature).reduce((sum, p) => sum + p.quantity, 0);
  return Math.max(0, balance.remaining - queued);
}

/** A book read back from disk, or undefined when it is not one (then an empty book is used). */
export function parseBook(value: unknown): MeterBookState | undefined {
  const b = value as Partial<MeterBookState> | undefined;
  if (typeof b?.licenseId !== 'string' || typeof b.balances !== 'object' || b.balances === null || !Array.isArray(b.pending)) return undefined;
  const pendingOk = b.pending.every(
    (p) => typeof p?.idempotencyKey === 'string' && typeof p.feature === 'string' && Number.isInteger(p.quantity) && p.quantity > 0 && typeof p.consumedAt === 'string',
  );
  const balancesOk = Object.values(b.balances).every(
    (x) => Number.isInteger(x?.remaining) && Number.isInteger(x.usesPerPeriod) && (x.periodEndsAt === null || Number.isFinite(x.periodEndsAt)),
  );
  return pendingOk && balancesOk ? (b as MeterBookState) : undefined;
}

/**
 * What a report does with a queued consumption the authority did not count (docs/protocol.md,
 * Metered features, offline rule 4). `drop`: it never will (over the limit, no meter any more, the
 * license expired or revoked, the key counted for another consumption: 409). `keep`: it may later
 * (unreachable, the device to be activated again, the token to be renewed): the report stops and
 * fails. `set-aside`: the authority refused the request's form (400, or a code this SDK does not know):
 * kept for a later report (an update of the app or the authority), without blocking consumption.
 */
export function whenRefused(err: LicenseError): 'drop' | 'keep' | 'set-aside' {
  switch (err.code) {
    case 'USAGE_LIMIT_REACHED':
    case 'FEATURE_NOT_METERED':
    case 'LICENSE_EXPIRED':
    case 'INVALID_LICENSE_KEY':
      return 'drop';
    case 'REQUEST_REJECTED':
      return err.extra.status === 409 ? 'drop' : 'set-aside';
    default:
      return 'keep';
  }
}
