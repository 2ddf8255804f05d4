import type Koa from 'koa';
import { RequestError } from '../errors.js';

/** Reads the raw request body up to `limit` bytes; 413 past it, without buffering the excess. */
export async function readRawBody(ctx: Koa.Context, limit: number): Promise<Buffer> {
  const declared = Number(ctx.get('content-length') || 0);
  if (declared > limit) throw tooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      ctx.req.unpipe();
      ctx.req.resume(); // drain the rest so the client sees the 413 instead of a reset
      throw tooLarge(limit);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

function tooLarge(limit: number): RequestError {
  return new RequestError('PAYLOAD_TOO_LARGE', `Request body exceeds ${limit} bytes`);
}

/** JSON body of a request; an empty body is `undefined` so the schema can say whether one is required. */
export async function readJsonBody(ctx: Koa.Context, limit: number): Promise<unknown> {
  const raw = await readRawBody(ctx, limit);
  ctx.state.rawBody = raw;
  if (raw.length === 0) return undefined;
  if (!ctx.is('application/json', '+json')) {
    throw new RequestError('UNSUPPORTED_MEDIA_TYPE', 'Request body must be application/json');
  }
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw new RequestError('INVALID_JSON', 'Request body is not valid JSON');
  }
}
