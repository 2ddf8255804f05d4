/**
 * What an installation knows of its license's meters between answers of the authority
 * (docs/protocol.md, Metered features): the last balance the authority answered per feature, and the
 * consumptions not yet reported, in order, each with the idempotency key it keeps until answered.
 * Pure state and rules; metering.ts persists it and talks to the authority.
 */
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
  /** ISO 8601: counted in the period this falls in. */
  consumedAt: string;
}

export interface MeterBookState {
  /** The license the book is for: a book of another license (after a new activation) is dropped. */
  licenseId: string;
  balances: Record<string, Balance>;
  pending: PendingConsumption[];
}

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
 * answered balance less what is queued since. Undefined when no balance is known, or its period has
 * ended (the next period's balance is the authority's to tell).
 */
export function localRemaining(book: MeterBookState, feature: string, now: number): number | undefined {
  const balance = book.balances[feature];
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
