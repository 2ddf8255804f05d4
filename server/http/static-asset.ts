/**
 * Files the server hands out as they are (the portal's modules, the API reference's Swagger UI):
 * always revalidated, since their names carry no version, and answered 304 when unchanged.
 */
import { createHash } from 'node:crypto';
import type Koa from 'koa';

export interface StaticAsset {
  body: Buffer;
  type: string;
  etag: string;
}

export function staticAsset(body: Buffer, type: string): StaticAsset {
  return { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
}

export function sendStaticAsset(ctx: Koa.Context, asset: StaticAsset): void {
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Cache-Control', 'no-cache');
  ctx.set('ETag', asset.etag);
  ctx.type = asset.type;
  if (ctx.get('if-none-match') === asset.etag) {
    ctx.status = 304;
    return;
  }
  ctx.body = asset.body;
}
