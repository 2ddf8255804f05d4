import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { apiError, reach } from './api-client.js';
import { CliError } from './errors.js';

interface Progress {
  update(received: number, total: number): void;
  done(): void;
}

/**
 * Streams a signed download link to `out`, hashing as it goes: the file appears under its name only
 * once all of it arrived and its SHA-256 is the one the API gave. No API key is sent: the link is
 * its own credential, and may point at another host.
 */
export async function downloadVerified(url: string, out: string, expectedSha256: string | null, progress: Progress): Promise<{ size: number; sha256: string }> {
  const res = await reach(url, { method: 'GET' });
  if (!res.ok || !res.body) throw apiError(res.status, await res.json().catch(() => undefined));
  const total = Number(res.headers.get('content-length') ?? 0);
  const hash = createHash('sha256');
  let size = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      size += chunk.length;
      progress.update(size, total || size);
      done(null, chunk);
    },
  });
  const partial = path.join(path.dirname(out), `.${path.basename(out)}.${randomBytes(6).toString('hex')}.part`);
  try {
    await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), counted, fs.createWriteStream(partial, { flags: 'wx' }));
    progress.done();
    const sha256 = hash.digest('hex');
    if (expectedSha256 && sha256 !== expectedSha256) throw new CliError(`the download's SHA-256 is ${sha256}, not the build's ${expectedSha256}: nothing was saved; try again`);
    fs.renameSync(partial, out);
    return { size, sha256 };
  } catch (err) {
    fs.rmSync(partial, { force: true });
    if (err instanceof CliError) throw err;
    throw new CliError(`cannot save ${out}: ${(err as Error).message}`);
  }
}
