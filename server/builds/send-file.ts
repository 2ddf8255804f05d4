import type { FileHandle } from 'node:fs/promises';
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
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

/** What a file request is answered with: nothing (the client's copy is current), or these bytes. */
export type FileAnswer = { status: 304 } | { status: 200 | 206; range: ByteRange | null; length: number };

/**
 * Decides, from the request's headers, what `sendStoredFile` answers: 304 for `If-None-Match`
 * naming the file's ETag; 206 with the range of a single `Range` (which `If-Range` lets apply
 * only when it names the ETag); otherwise the whole file. 416 for a range outside the file.
 */
export function planFileAnswer(ctx: Koa.Context, file: Pick<StoredFile, 'size' | 'sha256'>): FileAnswer {
  const etag = `"${file.sha256}"`;
  const ifNoneMatch = ctx.get('if-none-match');
  if (ifNoneMatch && (ifNoneMatch.trim() === '*' || ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag))) {
    return { status: 304 };
  }
  // If-Range: the range applies only to the copy the client already has part of.
  const ifRange = ctx.get('if-range');
  const range = ifRange && ifRange !== etag ? null : parseRange(ctx.get('range'), file.size);
  if (range === 'unsatisfiable') {
    throw new RequestError('RANGE_NOT_SATISFIABLE', `The range is outside the file's ${file.size} bytes`, {
      headers: { 'Content-Range': `bytes */${file.size}` },
    });
  }
  return { status: range ? 206 : 200, range, length: range ? range.end - range.start + 1 : file.size };
}

/** The file's bytes an answer carries: none for HEAD and 304. What a download allowance counts. */
export const bytesOf = (ctx: Koa.Context, answer: FileAnswer): number => (answer.status === 304 || ctx.method === 'HEAD' ? 0 : answer.length);

function setFileHeaders(ctx: Koa.Context, file: StoredFile): void {
  ctx.set('ETag', `"${file.sha256}"`);
  ctx.set('Accept-Ranges', 'bytes');
  ctx.set('Cache-Control', 'private, no-cache');
}

/**
 * Sends a file no allowance meters (a signed link's, checked by the caller): on an object store that
 * presigns, a GET answers 302 to a short-lived presigned URL of the object, whose bytes then come from
 * the store (which applies the Range the client sends along); otherwise as `sendStoredFile`.
 */
export async function sendUnmeteredFile(ctx: Koa.Context, storage: BlobStorage, file: StoredFile): Promise<void> {
  const answer = planFileAnswer(ctx, file);
  if (!storage.presign || ctx.method === 'HEAD' || answer.status === 304) {
    await sendStoredFile(ctx, storage, file, answer);
    return;
  }
  setFileHeaders(ctx, file);
  ctx.redirect(await storage.presign(file.key, file.name));
}

/**
 * Sends a stored file through the server, never by redirect, with its length, its SHA-256 as a strong
 * ETag, and Range and conditional request support: `answer` as `planFileAnswer` decided it (planned
 * here when not given). Answers the file's bytes that left the server: fewer than the answer carries
 * when the client left early. What an allowance meters goes through here only: a presigned URL serves
 * the whole object, any range, as often as asked while it lives, so what it handed out cannot be counted.
 */
export async function sendStoredFile(ctx: Koa.Context, storage: BlobStorage, file: StoredFile, answer = planFileAnswer(ctx, file)): Promise<number> {
  setFileHeaders(ctx, file);
  if (answer.status === 304) {
    ctx.status = 304;
    return 0;
  }
  const { range, length } = answer;
  ctx.status = answer.status;
  ctx.type = 'application/octet-stream';
  ctx.set('Content-Disposition', `attachment; filename="${file.name}"`);
  if (range) ctx.set('Content-Range', `bytes ${range.start}-${range.end}/${file.size}`);
  // HEAD answers the headers only; no file is opened.
  if (ctx.method === 'HEAD') {
    ctx.length = length;
    return 0;
  }
  // Local files are read into the sender's own buffers; an object store's stream is written as it comes.
  const handle = storage.open ? await storage.open(file.key) : undefined;
  const stream = handle ? undefined : await storage.read(file.key, range ?? undefined);
  ctx.length = length;
  // The bytes go out here, not through Koa's stream piping (headers are on ctx.res already).
  ctx.respond = false;
  try {
    return handle ? await sendFileBytes(ctx.res, handle, range?.start ?? 0, length) : await sendStreamBytes(ctx.res, stream!, length);
  } catch (err) {
    // Nothing sent yet: the error handler answers as for any failure.
    if (!ctx.res.headersSent) ctx.respond = true;
    throw err;
  }
}

/**
 * Writes a stored object's stream (an object store's) to the response and ends it; answers the bytes
 * the socket took, as `sendFileBytes` does, so that an allowance gets back what never left. A client
 * that leaves ends it quietly; a read error cuts the connection (the length was promised) and is thrown.
 */
async function sendStreamBytes(res: ServerResponse, body: Readable, length: number): Promise<number> {
  // Bytes the socket took (handed to the kernel): what left the server.
  let handed = 0;
  let written = 0;
  let gone = false;
  const closed = new Promise<void>((resolve) => res.once('close', resolve));
  res.once('close', () => (gone = true));
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      if (gone) break;
      written += chunk.length;
      const more = res.write(chunk, (err) => void (err || (handed += chunk.length)));
      if (!more) await Promise.race([once(res, 'drain'), closed]);
    }
    if (!gone) {
      if (written < length) throw new Error(`the stored object ended ${length - written} bytes short of its recorded size`);
      res.end();
    }
    await closed;
    return handed;
  } catch (err) {
    if (res.headersSent) res.destroy();
    throw err;
  } finally {
    body.destroy();
  }
}

/** Per download: two buffers in flight, about what a 1 MiB stream held. */
const SEND_CHUNK_BYTES = 1024 * 1024;

/**
 * Writes `length` bytes of `handle` from `start` to the response, then ends it, and closes the handle.
 *
 * A file stream allocates a new buffer for every chunk: a gigabyte download is a thousand 1 MiB
 * buffers that the socket holds (a slow client, a busy machine) long enough for V8 to promote them,
 * and the server then runs major GCs of its whole heap while it sends (profiled under load: V8
 * concurrent marking and sweeping took about a third of the server's CPU samples, and the server
 * used 2.2 to 2.6 CPU ms/MB against 0.5 to 0.7 for node:http streaming the same file). Here two
 * buffers take turns instead (and the server uses what node:http does): one is refilled from the file
 * while the socket sends the other, and a buffer is reused only once the socket has handed its bytes
 * to the kernel (the write callback). A client that leaves ends it quietly; a read error cuts the
 * connection once bytes went out (the length was promised) and is thrown to be logged.
 */
async function sendFileBytes(res: ServerResponse, handle: FileHandle, start: number, length: number): Promise<number> {
  const size = Math.min(SEND_CHUNK_BYTES, length);
  const buffers = [Buffer.allocUnsafeSlow(size), Buffer.allocUnsafeSlow(size)];
  const sent: Promise<void>[] = [Promise.resolve(), Promise.resolve()];
  let clientLeft = false;
  // Bytes the socket took (handed to the kernel): what left the server.
  let handed = 0;
  try {
    for (let offset = 0, turn = 0; offset < length; turn ^= 1) {
      await sent[turn];
      if (clientLeft || res.destroyed) {
        await Promise.all(sent);
        return handed;
      }
      const buffer = buffers[turn]!;
      const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, length - offset), start + offset);
      if (bytesRead === 0) throw new Error(`the stored file ended ${length - offset} bytes short of its recorded size`);
      offset += bytesRead;
      sent[turn] = taken(res, buffer.subarray(0, bytesRead), () => (clientLeft = true)).then((ok) => void (ok && (handed += bytesRead)));
    }
    await Promise.all(sent);
    res.end();
    return handed;
  } catch (err) {
    if (res.headersSent) res.destroy();
    throw err;
  } finally {
    await handle.close();
  }
}

/** Resolves (true) once the socket has taken `chunk`, or (false) when the response is gone (its pending callbacks may never come). */
function taken(res: ServerResponse, chunk: Buffer, onFailure: () => void): Promise<boolean> {
  return new Promise((resolve) => {
    const gone = () => {
      onFailure();
      resolve(false);
    };
    res.once('close', gone);
    res.write(chunk, (err) => {
      res.off('close', gone);
      if (err) onFailure();
      resolve(!err);
    });
  });
}
