import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { isTransient, type ApiClient } from './api-client.js';
import { ApiError, CliError, EXIT } from './errors.js';

/** Above this size `builds upload` sends the file through a resumable upload session. */
export const RESUMABLE_THRESHOLD_BYTES = 100 * 1024 * 1024;
/** Bytes per chunk: what one interruption costs at most. */
export const DEFAULT_CHUNK_BYTES = 16 * 1024 * 1024;
/** Interruptions in a row (no chunk stored between them) before the upload gives up. */
const MAX_RETRIES = 5;

interface UploadSession {
  id: string;
  offset: number;
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * Worth another try: the server or the network failed, not the request (a 4xx other than 408 would
 * fail again). Decided on the HTTP status: a proxy's 502 while the server restarts has no body of ours.
 */
function retryable(err: unknown): boolean {
  if (err instanceof ApiError) {
    const { error_code } = (err.body ?? {}) as { error_code?: string };
    return error_code === 'UPLOAD_OFFSET_MISMATCH' || isTransient(err.status);
  }
  return err instanceof CliError && err.exitCode === EXIT.UNREACHABLE;
}

/**
 * Uploads `file` through the server's resumable upload sessions (docs/contract.md, Resumable
 * uploads): the SHA-256 first, then chunks in order; after an interruption it asks where the
 * upload stands and goes on from there. Answers the build, as a single upload would.
 */
export async function uploadResumable(
  api: ApiClient,
  appPath: string,
  file: string,
  fields: Record<string, string>,
  opts: { chunkBytes?: number; onProgress?: (sent: number, total: number) => void; onRetry?: (why: string) => void } = {},
): Promise<unknown> {
  const size = fs.statSync(file).size;
  const chunkBytes = opts.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  const sha256 = await sha256Of(file);
  const created = await api.request('POST', `${appPath}/uploads`, { filename: path.basename(file), size_bytes: size, sha256, ...fields });
  const session = created.body as UploadSession;
  const sessionPath = `${appPath}/uploads/${encodeURIComponent(session.id)}`;
  const handle = await fs.promises.open(file, 'r');
  try {
    let offset = session.offset;
    let failures = 0;
    // After an interruption: ask where the server stands first, within the same retries (it may still be away).
    let interrupted = false;
    const buffer = Buffer.allocUnsafe(Math.min(chunkBytes, size));
    opts.onProgress?.(offset, size);
    while (offset < size) {
      try {
        if (interrupted) {
          // A chunk may have been stored although its answer was lost.
          offset = ((await api.request('GET', sessionPath)).body as UploadSession).offset;
          interrupted = false;
        } else {
          const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, size - offset), offset);
          const res = await api.putBytes(`${sessionPath}?offset=${offset}`, buffer.subarray(0, bytesRead));
          offset = (res.body as UploadSession).offset;
          failures = 0;
        }
      } catch (err) {
        if (!retryable(err) || ++failures > MAX_RETRIES) throw err;
        opts.onRetry?.((err as Error).message);
        await new Promise((resolve) => setTimeout(resolve, Math.min(30_000, 500 * 2 ** failures)));
        interrupted = true;
      }
      opts.onProgress?.(offset, size);
    }
  } finally {
    await handle.close();
  }
  return (await api.request('POST', `${sessionPath}/complete`)).body;
}
