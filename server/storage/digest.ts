import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Transform } from 'node:stream';

export interface Digest {
  size: number;
  /** Lower-case hex SHA-256. */
  sha256: string;
}

/** Size and SHA-256 of a local file, streamed through node:crypto (never whole in memory). */
export async function digestFile(file: string): Promise<Digest> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { size, sha256: hash.digest('hex') };
}

/** A pass-through stream that hashes and counts the bytes it carries; `digest()` once they all went through. */
export function digestingStream(): { stream: Transform; digest(): Digest } {
  const hash = createHash('sha256');
  let size = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  return { stream, digest: () => ({ size, sha256: hash.digest('hex') }) };
}
