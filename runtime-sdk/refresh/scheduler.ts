/**
 * Background refresh timing. The timer is unref'd (it never keeps the app alive) and jittered (a
 * fleet started together does not call the authority together); after a retryable failure it backs
 * off exponentially, never waiting longer than the normal interval.
 */

import { MAX_TIMER_MS } from '../option-schemas.js';
import type { RuntimePolicy } from '../protocol.js';

/**
 * A floating license's token lives as long as its lease: it is renewed (the refresh is the
 * heartbeat) at a third of the lease TTL, so two heartbeats can fail before the seat lapses. Null
 * for a node-locked license, which refreshes at the normal interval.
 */
export function heartbeatIntervalMs(policy: RuntimePolicy | undefined): number | null {
  return policy?.seat_model === 'floating' && policy.lease_ttl_minutes ? (policy.lease_ttl_minutes * 60_000) / 3 : null;
}

/** `ok`: wait the normal interval; `retry`: back off; `stop`: nothing left to refresh. */
export type RefreshOutcome = 'ok' | 'retry' | 'stop';

export interface RefreshTiming {
  intervalMs: number;
  /** First wait after a failure; doubled per consecutive failure up to `intervalMs`. */
  backoffBaseMs: number;
  /** Each delay is spread by +/- this fraction. */
  jitterRatio: number;
}

export function nextRefreshDelay(timing: RefreshTiming, consecutiveFailures: number, random: () => number = Math.random): number {
  const base = consecutiveFailures === 0 ? timing.intervalMs : Math.min(timing.intervalMs, timing.backoffBaseMs * 2 ** (consecutiveFailures - 1));
  return Math.max(0, Math.round(base * (1 + timing.jitterRatio * (2 * random() - 1))));
}

export class RefreshScheduler {
  private timer: NodeJS.Timeout | undefined;
  private failures = 0;
  private stopped = false;
  /** A floating license's heartbeat interval, in place of `timing.intervalMs` (heartbeatIntervalMs). */
  private heartbeatMs: number | null = null;

  constructor(
    private readonly timing: RefreshTiming,
    private readonly run: () => Promise<RefreshOutcome>,
  ) {}

  /** The normal interval from now on: the heartbeat's for a floating license, the configured one otherwise. */
  useHeartbeat(intervalMs: number | null): void {
    this.heartbeatMs = intervalMs;
  }

  /** Schedules the next run after `delayMs`, replacing any pending one. */
  schedule(delayMs: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    // A jittered delay near the longest interval could pass what a timer keeps, and fire at once.
    this.timer = setTimeout(() => void this.fire(), Math.min(delayMs, MAX_TIMER_MS));
    this.timer.unref();
  }

  /** After a refresh that happened outside the timer (an explicit call): restart the normal interval. */
  reset(outcome: RefreshOutcome): void {
    this.failures = outcome === 'retry' ? this.failures + 1 : 0;
    if (outcome === 'stop') clearTimeout(this.timer);
    else this.schedule(nextRefreshDelay(this.heartbeatMs === null ? this.timing : { ...this.timing, intervalMs: this.heartbeatMs }, this.failures));
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private async fire(): Promise<void> {
    this.timer = undefined;
    // run() reports failures as outcomes; it does not throw.
    this.reset(await this.run());
  }
}
