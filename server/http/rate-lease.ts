import { hotQuery, type Db } from '../db/knex.js';
import type { FixedWindow } from './rate-window.js';

/**
 * A process reserves at most 1/128 of what is left of a window beyond the requests it has waiting.
 * Below 128 hits left (every docs/contract.md limit at multiplier 1) it reserves exactly the hits of its
 * waiting requests, and the count is exact across processes. Above, hits one process reserved and
 * has not spent when the window ends are lost to the others: the limit can be met early by that
 * share, never exceeded.
 */
const SHARE_DIVISOR = 128;
/** Reservations stay small: at a few thousand requests a second, one statement per few dozen requests. */
const MAX_PREFETCH = 63;
const PRUNE_EVERY_MS = 10_000;

/** Adds `$3` hits to a window's count; the count after them. One upsert on an UNLOGGED table: no WAL flush. */
const RESERVE_SQL = `
  INSERT INTO rate_limit_hits (bucket, window_start, hits) VALUES ($1, $2, $3)
  ON CONFLICT (bucket, window_start) DO UPDATE SET hits = rate_limit_hits.hits + $3
  RETURNING hits`;

interface Reservation {
  size: number;
  /** Requests promised a hit of this reservation, in order; the first `granted` get one. */
  claimed: number;
  granted: Promise<number>;
}

/** What this process holds of one bucket's window. */
interface Lease {
  bucket: string;
  window: FixedWindow;
  /** Hits reserved in PostgreSQL and not spent yet. */
  tokens: number;
  /** The window's count in PostgreSQL after this process's latest reservation. */
  counted: number;
  /** A reservation came back short: the limit is reached for the rest of the window. */
  exhausted: boolean;
  pending: Reservation | undefined;
}

export interface CounterDecision {
  allowed: boolean;
  remaining: number;
}

/**
 * Fixed-window counters in PostgreSQL, spent through per-process leases. A request takes a hit its
 * process already reserved, else reserves hits with one upsert (concurrent requests of the process
 * join one reservation). The counter is only ever added to, and a reservation is granted only the
 * part of it that falls below the limit, so all processes together never admit more than the limit.
 * Once a reservation comes back short, the process refuses the rest of the window without asking.
 */
export function createLeasedCounters(db: Db) {
  const leases = new Map<string, Lease>();
  let pruneAt = 0;

  function leaseOf(bucket: string, window: FixedWindow, nowMs: number): Lease {
    if (nowMs >= pruneAt) {
      pruneAt = nowMs + PRUNE_EVERY_MS;
      for (const [key, lease] of leases) if (lease.window.endsAt <= nowMs && !lease.pending) leases.delete(key);
    }
    const key = `${bucket}@${window.endsAt}`;
    let lease = leases.get(key);
    if (!lease) {
      lease = { bucket, window, tokens: 0, counted: 0, exhausted: false, pending: undefined };
      leases.set(key, lease);
    }
    return lease;
  }

  function reserve(lease: Lease): Reservation {
    const left = lease.window.limit - lease.counted;
    const size = 1 + Math.min(MAX_PREFETCH, Math.max(0, Math.floor(left / SHARE_DIVISOR)));
    const reservation: Reservation = { size, claimed: 0, granted: Promise.resolve(0) };
    const settle = () => {
      if (lease.pending === reservation) lease.pending = undefined;
    };
    reservation.granted = hotQuery<{ hits: number }>(db, RESERVE_SQL, [lease.bucket, lease.window.start, size], 'rate_lease.reserve').then(
      (rows) => {
        const after = rows[0]!.hits;
        const granted = Math.min(size, Math.max(0, lease.window.limit - (after - size)));
        lease.counted = Math.max(lease.counted, after);
        if (granted < size) lease.exhausted = true;
        // Hits no waiting request claimed are kept for the next ones.
        lease.tokens += Math.max(0, granted - reservation.claimed);
        settle();
        return granted;
      },
      (err: unknown) => {
        settle();
        throw err;
      },
    );
    lease.pending = reservation;
    return reservation;
  }

  const remaining = (lease: Lease) => Math.max(0, lease.window.limit - lease.counted) + lease.tokens;

  return {
    /** Takes one hit of `bucket` in `window`. */
    async take(bucket: string, window: FixedWindow, nowMs: number): Promise<CounterDecision> {
      const lease = leaseOf(bucket, window, nowMs);
      if (lease.tokens > 0) {
        lease.tokens--;
        return { allowed: true, remaining: remaining(lease) };
      }
      if (lease.exhausted) return { allowed: false, remaining: 0 };
      let reservation = lease.pending;
      if (!reservation || reservation.claimed >= reservation.size) reservation = reserve(lease);
      const position = reservation.claimed++;
      const granted = await reservation.granted;
      return position < granted ? { allowed: true, remaining: remaining(lease) } : { allowed: false, remaining: 0 };
    },
  };
}

export type LeasedCounters = ReturnType<typeof createLeasedCounters>;
