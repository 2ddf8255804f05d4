/**
 * How far an archive may expand when it is unpacked for scanning and bundling. Past the ratio it is
 * treated as a decompression bomb; small archives get a floor, since a few megabytes of text can
 * compress far better than 100:1 and harm nothing.
 */
export const MAX_EXPANSION_RATIO = 100;
export const EXPANSION_FLOOR_BYTES = 16 * 1024 * 1024;
/** Whatever the archive's size: unpacking happens on the server's disk. */
export const MAX_UNPACKED_BYTES = 8 * 1024 ** 3;
export const MAX_ARCHIVE_ENTRIES = 100_000;
/**
 * Archives inside archives are unpacked and scanned too, the artifact being level 1; one nested
 * deeper is refused rather than passed unscanned. The budgets above hold for all levels together.
 */
export const MAX_ARCHIVE_DEPTH = 4;

/** Bytes an archive of `archiveBytes` may unpack to. */
export function unpackBudget(archiveBytes: number): number {
  return Math.min(MAX_UNPACKED_BYTES, Math.max(EXPANSION_FLOOR_BYTES, archiveBytes * MAX_EXPANSION_RATIO));
}
