import { createHash } from 'node:crypto';
import type Koa from 'koa';

export { escapeHtml } from '../email/html.js';

const STYLE = `body{font-family:system-ui,sans-serif;line-height:1.5;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#1d1d1f}
.key{font-family:ui-monospace,monospace;font-size:1.25rem;padding:.5rem .75rem;background:#f2f2f4;border-radius:6px;display:inline-block;user-select:all}
.button{display:inline-block;padding:.6rem 1.2rem;border-radius:6px;background:#0b5fff;color:#fff;text-decoration:none;border:0;font-size:1rem;cursor:pointer}
.muted{color:#6e6e73;font-size:.9rem}`;

/** The copy button: the only script on any page, allowed by its hash (no inline script otherwise). */
const COPY_SCRIPT = `document.getElementById('copy-key').addEventListener('click',function(){
var key=document.getElementById('license-key').textContent;var status=document.getElementById('copy-status');
navigator.clipboard.writeText(key).then(function(){status.textContent='Copied.';},function(){status.textContent='Select the key and copy it.';});});`;

const cspHash = (source: string) => `'sha256-${createHash('sha256').update(source).digest('base64')}'`;

/**
 * Nothing but this page's own style and the copy script runs; no frames, no base rewriting, and no
 * forms except one posting back to this origin (the redemption page's). The download link is a
 * plain navigation, which CSP does not restrict.
 */
const contentSecurityPolicy = (formAction: string) =>
  ["default-src 'none'", `style-src ${cspHash(STYLE)}`, `script-src ${cspHash(COPY_SCRIPT)}`, "base-uri 'none'", `form-action ${formAction}`, "frame-ancestors 'none'"].join('; ');
const CONTENT_SECURITY_POLICY = contentSecurityPolicy("'none'");
const CONTENT_SECURITY_POLICY_WITH_FORM = contentSecurityPolicy("'self'");

export interface PageOptions {
  /** Already escaped HTML. */
  body: string;
  title: string;
  withCopyScript?: boolean;
  /** Seconds after which the browser loads the page again (a pending delivery). */
  refreshSeconds?: number;
  /** The page has a form that posts to this origin. */
  withForm?: boolean;
}

/**
 * Answers a hosted page. The URL may hold a checkout session id (a secret): no referrer leaves the
 * page, and nothing caches it.
 */
export function sendPage(ctx: Koa.Context, status: number, page: PageOptions): void {
  ctx.status = status;
  ctx.set('Content-Security-Policy', page.withForm ? CONTENT_SECURITY_POLICY_WITH_FORM : CONTENT_SECURITY_POLICY);
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('Cache-Control', 'no-store');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
${page.refreshSeconds ? `<meta http-equiv="refresh" content="${page.refreshSeconds}">\n` : ''}<title>${page.title}</title>
<style>${STYLE}</style>
</head><body>
${page.body}
${page.withCopyScript ? `<script>${COPY_SCRIPT}</script>\n` : ''}</body></html>
`;
}
