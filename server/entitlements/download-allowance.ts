/**
 * The download allowance of a store license, as a pure rule. A download is counted in bytes served
 * (a file's size is one download), so that no mix of headers (Range, If-Range, several ranges, HEAD,
 * a resumed transfer) serves more than `limit` files' worth.
 */
export interface AllowanceQuestion {
  /** Downloads used so far (whole ones plus fractions served of each file). */
  used: number;
  /** What this answer would carry, in bytes; 0 for HEAD or 304. */
  bytes: number;
  /** The file's size: this many bytes are one download. */
  sizeBytes: number;
  limit: number;
}

/** Downloads left: never below zero. */
export const allowanceLeft = (used: number, limit: number): number => Math.max(0, limit - used);

/**
 * Whether the answer may be served and counted: some allowance must be left, and what it carries
 * must fit in what is left. An answer carrying no bytes needs only some allowance left.
 */
export function chargeFits({ used, bytes, sizeBytes, limit }: AllowanceQuestion): boolean {
  const left = allowanceLeft(used, limit);
  if (left === 0) return false;
  if (bytes === 0 || sizeBytes === 0) return true;
  return bytes / sizeBytes <= left;
}
