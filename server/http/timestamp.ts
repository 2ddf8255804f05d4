import { z } from 'zod';

/** The last instant an answer can show: ISO 8601 as `toISOString()` writes it has four-digit years. */
const LAST_SHOWABLE_MS = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * An instant a caller gives, ISO 8601 with an offset, that answers can show again: before the year
 * 10000 in UTC. `9999-12-31T23:00:00-02:00` is already in the year 10000, which PostgreSQL stores but
 * `toISOString()` writes as `+010000-...`, so every answer showing it would fail. Kept a string.
 */
export const GivenInstant = z.iso.datetime({ offset: true }).refine((value) => Date.parse(value) <= LAST_SHOWABLE_MS, 'must be before the year 10000 (UTC)');
