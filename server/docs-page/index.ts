/**
 * The API reference at GET /docs: Swagger UI (the `swagger-ui-dist` package, served from its own
 * directory by this process, no CDN) rendering GET /v1/openapi.json. Public, like the document.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import Router from '@koa/router';
import type Koa from 'koa';
import { RequestError } from '../errors.js';
import { sendStaticAsset, staticAsset, type StaticAsset } from '../http/static-asset.js';

const SWAGGER_UI_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/**
 * The initializer, a file of its own so that no inline script needs allowing. `validatorUrl: null`:
 * no validity badge fetched from swagger.io.
 */
const INITIALIZER = `window.ui = SwaggerUIBundle({ url: '/v1/openapi.json', dom_id: '#swagger-ui', deepLinking: true, validatorUrl: null });\n`;

const packageFile = (name: string, type: string) => ({ type, read: () => fs.readFileSync(path.join(SWAGGER_UI_DIR, name)) });

/** The files the page loads; nothing else of the package is reachable. */
const ASSETS: Record<string, { type: string; read(): Buffer }> = {
  'swagger-ui.css': packageFile('swagger-ui.css', 'text/css; charset=utf-8'),
  'swagger-ui-bundle.js': packageFile('swagger-ui-bundle.js', 'text/javascript; charset=utf-8'),
  'favicon-32x32.png': packageFile('favicon-32x32.png', 'image/png'),
  'initializer.js': { type: 'text/javascript; charset=utf-8', read: () => Buffer.from(INITIALIZER) },
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Latchkey API reference</title>
<link rel="icon" href="/docs/assets/favicon-32x32.png" type="image/png">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<noscript><p>The reference needs JavaScript; the document itself is at <a href="/v1/openapi.json">/v1/openapi.json</a>.</p></noscript>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/initializer.js"></script>
</body>
</html>
`;

/**
 * Scripts and styles from this origin only: nothing inline, no eval, no frames, no forms. Beyond
 * that, what Swagger UI needs: `img-src data:` for the icons its stylesheet draws as data: images;
 * `connect-src` for the document and for "Try it out", which calls the document's server (this
 * origin, or PUBLIC_BASE_URL's when the page is reached by another name). No Trusted Types: it
 * renders Markdown descriptions through innerHTML (sanitised by its DOMPurify).
 */
const contentSecurityPolicy = (publicOrigin: string) =>
  [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self' ${publicOrigin}`,
    "form-action 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');

export function docsPageRouter(publicBaseUrl: string): Router {
  const csp = contentSecurityPolicy(new URL(publicBaseUrl).origin);
  // Read on first request: most processes never serve the reference, and the bundle is large.
  const loaded = new Map<string, StaticAsset>();
  const load = (name: string): StaticAsset | undefined => {
    if (!Object.hasOwn(ASSETS, name)) return undefined;
    let asset = loaded.get(name);
    if (!asset) {
      const { type, read } = ASSETS[name]!;
      asset = staticAsset(read(), type);
      loaded.set(name, asset);
    }
    return asset;
  };

  const router = new Router();
  // A route template of its own: the metrics label it, and the unhandled-request limit leaves it alone.
  const named =
    (routePath: string): Koa.Middleware =>
    (ctx, next) => {
      ctx.state.routePath = routePath;
      return next();
    };
  router.get('/docs', named('/docs'), (ctx) => {
    ctx.set('Content-Security-Policy', csp);
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Cache-Control', 'no-cache');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = PAGE;
  });
  router.get('/docs/assets/:name', named('/docs/assets/{name}'), (ctx) => {
    const asset = load(ctx.params.name!);
    if (!asset) throw new RequestError('NOT_FOUND', `No reference asset ${ctx.params.name}`);
    sendStaticAsset(ctx, asset);
  });
  return router;
}
