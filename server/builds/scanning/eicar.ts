import { createReadStream } from 'node:fs';
import type { Scanner } from './scanner.js';

/**
 * The EICAR anti-malware test file's signature. Assembled from two halves so that this source file
 * does not itself look infected to a scanner on a developer's machine.
 */
export const EICAR_SIGNATURE = Buffer.from('X5O!P%@AP[4\\PZX54(P^)7CC)7}$' + 'EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*');

/** Whether `needle` occurs in the file, read in chunks; a match may straddle two of them. */
async function fileContains(file: string, needle: Buffer, signal: AbortSignal): Promise<boolean> {
  const keep = needle.length - 1;
  let tail: Buffer = Buffer.alloc(0);
  for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024, signal }) as AsyncIterable<Buffer>) {
    // Only the seam between chunks is copied; each chunk is searched where it lies.
    if (tail.length > 0 && Buffer.concat([tail, chunk.subarray(0, keep)]).includes(needle)) return true;
    if (chunk.includes(needle)) return true;
    tail = Buffer.concat([tail, chunk.subarray(-keep)]).subarray(-keep);
  }
  return false;
}

/** Built in: finds the EICAR test signature anywhere in the artifact or in a file unpacked from it. */
export const eicarScanner: Scanner = {
  name: 'eicar',
  async scan(subject, signal) {
    for (const file of [subject.artifact, ...subject.unpacked]) {
      if (await fileContains(file, EICAR_SIGNATURE, signal)) {
        return { scan_status: 'INFECTED', reason: `the EICAR test signature was found in ${subject.describe(file)}` };
      }
    }
    return null;
  },
};
