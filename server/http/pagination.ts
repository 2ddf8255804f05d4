import type Koa from 'koa';
import { z } from 'zod';

export const MAX_PAGE_LIMIT = 100;

/** `limit` (default 20, at most 100) and `offset` (default 0), shared by every list. */
export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_PAGE_LIMIT).default(20),
  offset: z.coerce.number().int().min(0).max(1_000_000_000).default(0),
});
export type Page = z.infer<typeof PageQuery>;

/** The query string without `limit` and `offset`, ending in `&` when anything (a filter) is left. */
function otherParams(querystring: string): string {
  if (querystring === '') return '';
  const params = new URLSearchParams(querystring);
  params.delete('limit');
  params.delete('offset');
  const rest = params.toString();
  return rest === '' ? '' : `${rest}&`;
}

/**
 * The body of a list stays the bare JSON array; the total goes in `X-Total-Count` and the
 * neighbouring pages in an RFC 8288 `Link` header. Built by plain concatenation (no URL object,
 * no closure): lists are the hottest reads.
 */
export function setPageHeaders(ctx: Koa.Context, page: Page, total: number): void {
  ctx.set('X-Total-Count', String(total));
  const base = `<${ctx.path}?${otherParams(ctx.querystring)}limit=${page.limit}&offset=`;
  let links = `${base}0>; rel="first"`;
  if (page.offset > 0) links += `, ${base}${Math.max(0, page.offset - page.limit)}>; rel="prev"`;
  if (page.offset + page.limit < total) links += `, ${base}${page.offset + page.limit}>; rel="next"`;
  if (total > 0) links += `, ${base}${Math.floor((total - 1) / page.limit) * page.limit}>; rel="last"`;
  ctx.set('Link', links);
}
