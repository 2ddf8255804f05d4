import type { Knex } from 'knex';
import { hotQuery } from '../db/knex.js';

/**
 * Downloads a store license used so far: the whole ones counted before bytes were
 * (`downloads_used`), plus, per build and size, the bytes served over the build's size.
 */
const USED = `
  SELECT s.downloads_used + coalesce(sum(d.bytes_served::numeric / d.size_bytes), 0) AS downloads
  FROM store_licenses s LEFT JOIN store_license_downloads d ON d.store_license_id = s.id
  WHERE s.id = $1 GROUP BY s.id, s.downloads_used`;

/**
 * Adds $4 bytes of build $2 (of $3 bytes) to what store license $1 was served, only if the
 * downloads used stay within the limit $6 (and some are left): the check and the count are one
 * statement. Answers a row when counted. $5 now.
 */
const CHARGE = `
  WITH used AS (${USED})
  INSERT INTO store_license_downloads (store_license_id, build_id, size_bytes, bytes_served, updated_at)
  SELECT $1, $2, $3::bigint, $4::bigint, $5 FROM used
  WHERE used.downloads < $6::numeric AND used.downloads + $4::numeric / $3::numeric <= $6::numeric
  ON CONFLICT (store_license_id, build_id, size_bytes)
  DO UPDATE SET bytes_served = store_license_downloads.bytes_served + EXCLUDED.bytes_served, updated_at = EXCLUDED.updated_at
  RETURNING bytes_served`;

/** Takes back $4 bytes of build $2 (of $3 bytes) counted for store license $1 that never left the server. */
const REFUND = `
  UPDATE store_license_downloads SET bytes_served = greatest(0, bytes_served - $4::bigint)
  WHERE store_license_id = $1 AND build_id = $2 AND size_bytes = $3::bigint`;

export interface Charge {
  storeLicenseId: string;
  buildId: string;
  /** The file's size: this many bytes of it are one download. */
  sizeBytes: number;
  /** What the answer carries: the whole file, a range, or nothing (HEAD, 304). */
  bytes: number;
  limit: number;
  now: Date;
}

/**
 * The download allowance of a store license, counted in bytes served, so that no mix of headers
 * (Range, If-Range, several ranges, HEAD, a resumed transfer) serves more than `limit` files' worth.
 *
 * The caller holds the store license's row lock (`lockStoreLicense`) for its transaction, so
 * concurrent downloads of one store count one after another: each statement's snapshot, taken once
 * the lock is held, sees every earlier download's bytes.
 */
export const downloadMeter = {
  async used(q: Knex, storeLicenseId: string): Promise<number> {
    const rows = await hotQuery<{ downloads: string }>(q, USED, [storeLicenseId]);
    return Number(rows[0]?.downloads ?? 0);
  },

  /** Counts `bytes` against the allowance; false (nothing counted) when they would go past it or none is left. */
  async charge(trx: Knex.Transaction, c: Charge): Promise<boolean> {
    if (c.bytes === 0 || c.sizeBytes === 0) return (await downloadMeter.used(trx, c.storeLicenseId)) < c.limit;
    const rows = await hotQuery(trx, CHARGE, [c.storeLicenseId, c.buildId, c.sizeBytes, c.bytes, c.now, c.limit]);
    return rows.length === 1;
  },

  /**
   * A download the client left early is counted for the bytes that left the server (handed to the
   * network), not for all it asked: a customer on a flaky connection resumes without paying twice.
   * No lock: a smaller count never lets anything past the allowance.
   */
  async refund(q: Knex, c: Omit<Charge, 'limit' | 'now'>): Promise<void> {
    if (c.bytes <= 0) return;
    await hotQuery(q, REFUND, [c.storeLicenseId, c.buildId, c.sizeBytes, c.bytes]);
  },
};
