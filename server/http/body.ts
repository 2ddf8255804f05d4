import type http from 'node:http';
import { RequestError } from '../errors.js';

/**
 * Reads the raw request body up to `limit` bytes; 413 past it, without buffering the excess. The
 * excess is drained, not the connection destroyed (the client may still be sending): it sees the
 * 413 instead of a reset, and the connection stays usable.
 */
export function readRawBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] || 0);
  if (declared > limit) return Promise.reject(tooLarge(limit));
  // The client left before anything read the body (during authentication, say): its events are past.
  if (req.destroyed) return Promise.reject(bodyCutOff());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // Methods, not named functions: tsx wraps each named function it creates in a naming call.
    const on = {
      data(chunk: Buffer) {
        size += chunk.length;
        if (size <= limit) {
          chunks.push(chunk);
          return;
        }
        on.stop();
        req.unpipe();
        req.resume();
        reject(tooLarge(limit));
      },
      end() {
        on.stop();
        resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
      },
      error() {
        on.stop();
        reject(bodyCutOff());
      },
      stop() {
        req.off('data', on.data);
        req.off('end', on.end);
        req.off('error', on.error);
      },
    };
    req.on('data', on.data);
    req.on('end', on.end);
    req.on('error', on.error);
  });
}

/**
 * Whether the request's body was read in part and then left unread (an upload whose storage failed
 * midway): its answer must close the connection. Node drains a body nobody read, but not one read
 * in part, so the rest would stay unread and the client's next request on that connection would
 * wait behind it until the idle timeout closed it. A body being drained on purpose (flowing: a 413
 * past the limit, a refused multipart) is not left: closing under a client still sending it could
 * reset the connection before the answer arrives.
 */
export function bodyLeftHalfRead(req: http.IncomingMessage): boolean {
  return req.readableDidRead && !req.complete && !req.readableFlowing;
}

/**
 * The body stopped before its end: the client went away, or the body deadline (http-server.ts)
 * answered 408 and closed the connection. The client's doing, not an outage: without this its
 * ECONNRESET would read as the database's, and an abort as a server error. Every reader of a
 * request body (JSON, multipart, upload chunks) fails with it.
 */
export function bodyCutOff(): RequestError {
  return new RequestError('REQUEST_TIMEOUT', 'The request body did not arrive whole');
}

function tooLarge(limit: number): RequestError {
  return new RequestError('PAYLOAD_TOO_LARGE', `Request body exceeds ${limit} bytes`);
}

/** The request's media type, lower case, without parameters: `application/json` of `application/json; charset=utf-8`. */
function mediaTypeOf(req: http.IncomingMessage): string {
  const header = req.headers['content-type'] ?? '';
  const semicolon = header.indexOf(';');
  return (semicolon < 0 ? header : header.slice(0, semicolon)).trim().toLowerCase();
}

/** `application/json` or any `type/subtype+json` (`application/merge-patch+json`). */
const JSON_MEDIA_TYPE = /^(?:application\/json|[\w.+-]+\/[\w.+-]+\+json)$/;

/** JSON body of a request; an empty body is `undefined` so the schema can say whether one is required. */
export async function readJsonBody(req: http.IncomingMessage, limit: number): Promise<unknown> {
  const raw = await readRawBody(req, limit);
  if (raw.length === 0) return undefined;
  if (!JSON_MEDIA_TYPE.test(mediaTypeOf(req))) {
    throw new RequestError('UNSUPPORTED_MEDIA_TYPE', 'Request body must be application/json');
  }
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new RequestError('INVALID_JSON', 'Request body is not valid JSON');
  }
  if (nestsDeeperThan(body, MAX_JSON_DEPTH)) {
    throw new RequestError('VALIDATION_FAILED', `body: must not nest deeper than ${MAX_JSON_DEPTH} levels`);
  }
  const illFormed = findLoneSurrogate(body);
  if (illFormed) throw new RequestError('VALIDATION_FAILED', `${illFormed}: must be well-formed Unicode (it has a lone surrogate such as \\ud800)`);
  return body;
}

/**
 * An HTML form's body (`application/x-www-form-urlencoded`, what a page without JavaScript posts)
 * as an object of strings; an empty body is an empty object, so the schema's defaults apply.
 */
export async function readFormBody(req: http.IncomingMessage, limit: number): Promise<Record<string, string>> {
  const raw = await readRawBody(req, limit);
  if (raw.length === 0) return {};
  if (mediaTypeOf(req) !== 'application/x-www-form-urlencoded') {
    throw new RequestError('UNSUPPORTED_MEDIA_TYPE', 'Request body must be application/x-www-form-urlencoded');
  }
  return Object.fromEntries(new URLSearchParams(raw.toString('utf8')));
}

/**
 * Far deeper than any body the API defines. A 1 MB body can nest some 500,000 levels, which would
 * overflow the stack of recursive validators (zod's `z.json()`) and answer 500 instead of 400.
 */
export const MAX_JSON_DEPTH = 32;

function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  const pending: [unknown, number][] = [[value, 1]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [item, depth] = next;
    if (item === null || typeof item !== 'object') continue;
    if (depth > maxDepth) return true;
    for (const child of Object.values(item)) pending.push([child, depth + 1]);
  }
  return false;
}

/**
 * Half of a UTF-16 surrogate pair without the other half. JSON's `\ud800` escape makes one; no
 * UTF-8 text can hold it, so PostgreSQL refuses it in jsonb and it would turn into U+FFFD in text.
 */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Where the first string holding a lone surrogate is (`body.a.0`; for a key, its object's path), or null. */
function findLoneSurrogate(value: unknown): string | null {
  const pending: [unknown, string][] = [[value, 'body']];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [item, where] = next;
    if (typeof item === 'string' && LONE_SURROGATE.test(item)) return where;
    if (item === null || typeof item !== 'object') continue;
    for (const [key, child] of Object.entries(item)) {
      if (LONE_SURROGATE.test(key)) return where;
      pending.push([child, `${where}.${key}`]);
    }
  }
  return null;
}
