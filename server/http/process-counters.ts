import type { FixedWindow } from './rate-window.js';

/** Enough for every address of a busy window; past it the oldest counts are forgotten (lenient, never stricter). */
const MAX_BUCKETS = 100_000;
const PRUNE_EVERY_MS = 10_000;

/**
 * Fixed-window counters in this process's memory: no round trip, but each process counts alone,
 * so a limit counted here holds per process (N processes admit up to N times the limit). Only for
 * coarse abuse guards in front of limits that PostgreSQL counts exactly.
 */
export function createProcessCounters() {
  const counts = new Map<string, { hits: number; endsAt: number }>();
  let pruneAt = 0;

  function prune(nowMs: number): void {
    pruneAt = nowMs + PRUNE_EVERY_MS;
    for (const [key, entry] of counts) if (entry.endsAt <= nowMs) counts.delete(key);
    // Still full within one window: drop the oldest buckets (Map keeps insertion order).
    for (const key of counts.keys()) {
      if (counts.size < MAX_BUCKETS) break;
      counts.delete(key);
    }
  }

  return {
    /** Counts one hit of `bucket` in `window`; the count including it. */
    count(bucket: string, window: FixedWindow, nowMs: number): number {
      if (nowMs >= pruneAt || counts.size >= MAX_BUCKETS) prune(nowMs);
      const key = `${bucket}@${window.endsAt}`;
      const entry = counts.get(key);
      if (entry) return ++entry.hits;
      counts.set(key, { hits: 1, endsAt: window.endsAt });
      return 1;
    },
  };
}

export type ProcessCounters = ReturnType<typeof createProcessCounters>;
