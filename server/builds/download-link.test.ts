import { describe, expect, it } from 'vitest';
import { linkExpiry } from './download-link.js';

const DAY = 86_400_000;

describe('linkExpiry', () => {
  it('is 7 days from now without an anchor', () => {
    const now = new Date('2026-03-01T10:00:00.250Z');
    expect(linkExpiry(now).getTime()).toBe(now.getTime() + 7 * DAY);
  });

  it('is the same whole second for every call within one 7-day window from the anchor, the next window after it', () => {
    const since = new Date('2026-03-01T10:00:00.250Z');
    const firstEnd = new Date('2026-03-08T10:00:01.000Z');
    for (const later of [0, 1, DAY, 7 * DAY - 1]) expect(linkExpiry(new Date(since.getTime() + later), since)).toEqual(firstEnd);
    expect(linkExpiry(new Date(since.getTime() + 7 * DAY), since)).toEqual(new Date('2026-03-15T10:00:01.000Z'));
    // A clock behind the anchor still gets the first window.
    expect(linkExpiry(new Date(since.getTime() - 5000), since)).toEqual(firstEnd);
  });
});
