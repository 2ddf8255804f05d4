import type Koa from 'koa';
import { z } from 'zod';

export const MAX_PAGE_LIMIT = 100;

/** `limit` (default 20, at most 100) and `offset` (default 0), shared by every list. */
export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_PAGE_LIMIT).default(20),
  offset: z.coerce.number().int().min(0).max(1_000_000_000).default(0),
});
export type Page = z.infer<typeof PageQuery>;

/**
 * The body of a list stays the bare JSON array; the total goes in `X-Total-Count` and the
 * neighbouring pages in an RFC 8288 `Link` header.
 */
export function setPageHeaders(ctx: Koa.Context, page: Page, total: number): void {
  ctx.set('X-Total-Count', String(total));
  const links: string[] = [];
  // Only the query string is parsed, once per list (no URL object): lists are the hottest reads.
  const params = new URLSearchParams(ctx.querystring);
  params.set('limit', String(page.limit));
  const link = (offset: number, rel: string) => {
    params.set('offset', String(offset));
    links.push(`<${ctx.path}?${params}>; rel="${rel}"`);
  };
  link(0, 'first');
  if (page.offset > 0) link(Math.max(0, page.offset - page.limit), 'prev');
  if (page.offset + page.limit < total) link(page.offset + page.limit, 'next');
  if (total > 0) link(Math.floor((total - 1) / page.limit) * page.limit, 'last');
  ctx.set('Link', links.join(', '));
}
