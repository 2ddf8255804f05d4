import type Koa from 'koa';
import { RequestError } from '../errors.js';
import type { BlobStorage, ByteRange } from '../storage/blob-storage.js';

/**
 * A single `Range: bytes=...` against a file of `size` bytes: the inclusive range, `unsatisfiable`,
 * or null to send the whole file (no header, several ranges, or a form we do not parse: RFC 9110
 * lets a server ignore a Range).
 */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | null {
  const match = /^bytes=(\d*)-(\d*)$/.exec(header?.trim() ?? '');
  if (!match || (match[1] === '' && match[2] === '')) return null;
  const [first, last] = [match[1]!, match[2]!];
  if (first === '') {
    const suffix = Number(last);
    return suffix === 0 || size === 0 ? 'unsatisfiable' : { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (last !== '' && Number(last) < start) return null;
  return start >= size ? 'unsatisfiable' : { start, end };
}

export interface StoredFile {
  key: string;
  size: number;
  sha256: string;
  name: string;
}

/** Sends a stored file with its length, its SHA-256 as a strong ETag, and Range and conditional request support. */
export async function sendStoredFile(ctx: Koa.Context, storage: BlobStorage, file: StoredFile): Promise<void> {
  const etag = `"${file.sha256}"`;
  ctx.set('ETag', etag);
  ctx.set('Accept-Ranges', 'bytes');
  ctx.set('Cache-Control', 'private, no-cache');
  const ifNoneMatch = ctx.get('if-none-match');
  if (ifNoneMatch && (ifNoneMatch.trim() === '*' || ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag))) {
    ctx.status = 304;
    return;
  }
  // If-Range: the range applies only to the copy the client already has part of.
  const ifRange = ctx.get('if-range');
  const range = ifRange && ifRange !== etag ? null : parseRange(ctx.get('range'), file.size);
  if (range === 'unsatisfiable') {
    throw new RequestError('RANGE_NOT_SATISFIABLE', `The range is outside the file's ${file.size} bytes`, {
      headers: { 'Content-Range': `bytes */${file.size}` },
    });
  }
  ctx.status = range ? 206 : 200;
  ctx.type = 'application/octet-stream';
  ctx.set('Content-Disposition', `attachment; filename="${file.name}"`);
  if (range) ctx.set('Content-Range', `bytes ${range.start}-${range.end}/${file.size}`);
  const length = range ? range.end - range.start + 1 : file.size;
  // HEAD answers the headers only; no file is opened.
  if (ctx.method !== 'HEAD') ctx.body = await storage.read(file.key, range ?? undefined);
  ctx.length = length;
}
