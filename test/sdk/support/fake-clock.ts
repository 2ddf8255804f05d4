import type { Clock } from '../../../runtime-sdk/clock.js';

export const HOUR = 3_600_000;

/** A clock the test moves by hand, forwards or backwards. */
export class FakeClock implements Clock {
  constructor(private ms = Date.UTC(2030, 0, 1)) {}
  now(): Date {
    return new Date(this.ms);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}
