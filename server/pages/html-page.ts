import { createHash } from 'node:crypto';
import type Koa from 'koa';
import { escapeHtml as e } from '../email/html.js';

export { escapeHtml } from '../email/html.js';

/**
 * One small stylesheet for every hosted page: readable on a 360 px phone and a wide screen, nothing
 * wider than the page (long keys and links wrap), large tap targets, a focus ring that shows.
 */
const STYLE = `*,*::before,*::after{box-sizing:border-box}
[hidden]{display:none!important}
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;font-size:1rem;line-height:1.5;color:#1d1d1f;background:#fff;margin:0}
main{max-width:40rem;margin:0 auto;padding:1.5rem 1rem 3rem;overflow-wrap:anywhere}
h1{font-size:1.6rem;line-height:1.25;margin:.5rem 0 1rem}
h2{font-size:1.15rem;margin:2rem 0 .5rem}
a{color:#0645c8}
.product{border-bottom:1px solid #d2d2d7;padding-bottom:.75rem;margin:0 0 1rem}
.product strong{font-size:1.05rem}
.seller{color:#4f4f54}
.key{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:1.15rem;padding:.5rem .75rem;background:#f2f2f4;border-radius:6px;display:inline-block;max-width:100%;user-select:all;overflow-wrap:anywhere}
.button{display:inline-block;min-height:2.75rem;padding:.6rem 1.2rem;border-radius:6px;background:#0b57d0;color:#fff;text-decoration:none;border:2px solid #0b57d0;font:inherit;font-weight:600;cursor:pointer;text-align:center}
.button.secondary{background:#fff;color:#0b57d0}
.downloads{list-style:none;padding:0;margin:0}
.downloads li{margin:.5rem 0}
input{font:inherit;width:100%;max-width:24rem;padding:.5rem;border:1px solid #6e6e73;border-radius:6px}
input[type=file]{border-style:dashed}
label{font-weight:600}
:focus-visible{outline:3px solid #e8710a;outline-offset:2px}
.alert{border-left:4px solid #c5221f;background:#fce8e6;padding:.5rem .75rem;border-radius:4px}
.alert p{margin:.25rem 0}
.muted{color:#545458;font-size:.9rem}`;

/**
 * The copy button: the only script on any page, allowed by its hash (no inline script otherwise).
 * The button is hidden until the script shows it, so a browser without JavaScript offers no dead
 * button (the key is selectable). Where the Clipboard API is missing (a page not served over HTTPS)
 * or refused, the key is selected and copied the older way, or left selected with the shortcut named.
 */
const COPY_SCRIPT = `(function(){var button=document.getElementById('copy-key'),key=document.getElementById('license-key'),status=document.getElementById('copy-status');
button.hidden=false;
function selectKey(){var range=document.createRange();range.selectNodeContents(key);var selection=window.getSelection();selection.removeAllRanges();selection.addRange(range);}
function copySelected(){selectKey();var copied=false;try{copied=document.execCommand('copy');}catch(err){}
status.textContent=copied?'Copied.':'The key is selected: press Ctrl+C (Command+C on a Mac) to copy it.';}
button.addEventListener('click',function(){if(!navigator.clipboard){copySelected();return;}
navigator.clipboard.writeText(key.textContent).then(function(){status.textContent='Copied.';},copySelected);});})();`;

/**
 * A page waiting for something (a payment notification) asks for itself again every `seconds` in
 * the background and reloads once the answer is no longer the waiting page: a reader, or a screen
 * reader, is not interrupted every few seconds as a `<meta http-equiv="refresh">` would. Without
 * JavaScript that meta refresh is the fallback (in `<noscript>`).
 */
const pendingScript = (seconds: number) => `(function(){var delay=${seconds * 1000};
function check(){fetch(location.href,{cache:'no-store',credentials:'same-origin'}).then(function(r){return r.text();}).then(function(html){
if(html.indexOf('id="pending"')<0){location.reload();}else{setTimeout(check,delay);}},function(){setTimeout(check,delay);});}
setTimeout(check,delay);})();`;

const cspHash = (source: string) => `'sha256-${createHash('sha256').update(source).digest('base64')}'`;

/**
 * Nothing but this page's own style and its script (allowed by hash) runs; no frames, no base
 * rewriting, no forms except one posting back to this origin, no requests from script except a
 * waiting page's to this origin. The download link is a plain navigation, which CSP does not restrict.
 */
function contentSecurityPolicy(page: PageOptions, script: string | undefined): string {
  return [
    "default-src 'none'",
    `style-src ${cspHash(STYLE)}`,
    `script-src ${script ? cspHash(script) : "'none'"}`,
    ...(page.refreshSeconds ? ["connect-src 'self'"] : []),
    "base-uri 'none'",
    `form-action ${page.withForm ? "'self'" : "'none'"}`,
    "frame-ancestors 'none'",
  ].join('; ');
}

/** What a buyer's page is about: the app, and who sells it (the developer's company name), both plain text. */
export interface PageProduct {
  appName: string;
  seller: string;
}

export interface PageOptions {
  /** Already escaped HTML. */
  body: string;
  title: string;
  /** Shown above the heading: the app and its seller. */
  product?: PageProduct;
  withCopyScript?: boolean;
  /** A waiting page (a pending delivery): seconds between its checks for the result. */
  refreshSeconds?: number;
  /** The page has a form that posts to this origin. */
  withForm?: boolean;
}

const productLine = (p: PageProduct) =>
  `<header class="product" id="product"><strong id="product-name">${e(p.appName)}</strong> <span class="seller">from <span id="seller-name">${e(p.seller)}</span></span></header>\n`;

/**
 * Answers a hosted page. The URL may hold a checkout session id (a secret): no referrer leaves the
 * page, and nothing caches it.
 */
export function sendPage(ctx: Koa.Context, status: number, page: PageOptions): void {
  const script = page.refreshSeconds ? pendingScript(page.refreshSeconds) : page.withCopyScript ? COPY_SCRIPT : undefined;
  ctx.status = status;
  ctx.set('Content-Security-Policy', contentSecurityPolicy(page, script));
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('Cache-Control', 'no-store');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
${page.refreshSeconds ? `<noscript><meta http-equiv="refresh" content="${page.refreshSeconds}"></noscript>\n` : ''}<title>${page.title}</title>
<style>${STYLE}</style>
</head><body>
<main>
${page.product ? productLine(page.product) : ''}${page.body}
</main>
${script ? `<script>${script}</script>\n` : ''}</body></html>
`;
}
