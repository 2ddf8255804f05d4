import type { Knex } from 'knex';
import { hotQuery } from '../db/knex.js';
import { chargeFits } from './download-allowance.js';

/**
 * Downloads a store license used so far: the whole ones counted before bytes were
 * (`downloads_used`), plus, per build and size, the bytes served over the build's size.
 */
const USED = `
  SELECT s.downloads_used + coalesce(sum(d.bytes_served::numeric / d.size_bytes), 0) AS downloads
  FROM store_licenses s LEFT JOIN store_license_downloads d ON d.store_license_id = s.id
  WHERE s.id = $1 GROUP BY s.id, s.downloads_used`;

/** Adds $4 bytes of build $2 (of $3 bytes) to what store license $1 was served. $5 now. */
const CHARGE = `
  INSERT INTO store_license_downloads (store_license_id, build_id, size_bytes, bytes_served, updated_at)
  VALUES ($1, $2, $3::bigint, $4::bigint, $5)
  ON CONFLICT (store_license_id, build_id, size_bytes)
  DO UPDATE SET bytes_served = store_license_downloads.bytes_served + EXCLUDED.bytes_served, updated_at = EXCLUDED.updated_at`;

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
 * The count of a store license's downloads, in bytes served; the rule of what fits is
 * `download-allowance.ts`.
 *
 * The caller holds the store license's row lock (`lockStoreLicense`) for its transaction, so
 * concurrent downloads of one store count one after another: the read of what was used, taken once
 * the lock is held, sees every earlier download's bytes, and nothing is counted between it and the charge.
 */
export const downloadMeter = {
  async used(q: Knex, storeLicenseId: string): Promise<number> {
    const rows = await hotQuery<{ downloads: string }>(q, USED, [storeLicenseId]);
    return Number(rows[0]?.downloads ?? 0);
  },

  /** Counts `bytes` against the allowance; false (nothing counted) when they would go past it or none is left. */
  async charge(trx: Knex.Transaction, c: Charge): Promise<boolean> {
    const used = await downloadMeter.used(trx, c.storeLicenseId);
    if (!chargeFits({ used, bytes: c.bytes, sizeBytes: c.sizeBytes, limit: c.limit })) return false;
    if (c.bytes > 0 && c.sizeBytes > 0) await hotQuery(trx, CHARGE, [c.storeLicenseId, c.buildId, c.sizeBytes, c.bytes, c.now]);
    return true;
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
