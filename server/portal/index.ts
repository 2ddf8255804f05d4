/**
 * The developer portal, served by the authority itself at /portal.
 *
 * Architecture: one HTML shell (strict CSP: scripts and styles from /portal/assets only, no inline
 * script, no innerHTML sink) loads portal.js, the TypeScript of server/portal/client bundled by
 * esbuild at `npm run build` (server/scripts/build.mjs) into server/portal/assets. The
 * browser never holds an API token: signing in creates a portal session (sessions.ts), and every
 * portal action is a same-origin call to /portal/api/v1/..., forwarded to the public /v1/... route
 * with the session's bearer token (upstream.ts), so it meets the API's own validation, rate limits
 * and error bodies. Every state change needs the session's CSRF token in X-CSRF-Token and a
 * same-origin Origin (or Referer). Portal routes are not API operations: they stay out of the
 * OpenAPI document.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type Router from '@koa/router';
import type Koa from 'koa';
import QRCode from 'qrcode';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { MasterKey } from '../crypto/master-key.js';
import type { Db } from '../db/knex.js';
import { RequestError } from '../errors.js';
import { readJsonBody } from '../http/body.js';
import { rateSubject, type RateLimiter } from '../http/rate-limit.js';
import type { RouteDef } from '../http/route.js';
import { sendStaticAsset, staticAsset, type StaticAsset } from '../http/static-asset.js';
import { CONNECT_COOKIE, setConnectCookie } from '../payments/connect.js';
import { forwardableOperations } from './forwardable.js';
import { createPortalSessions, signedOut, type PortalSession, type TokenPair } from './sessions.js';
import { createUpstream, type JsonAnswer } from './upstream.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ASSETS_DIR = path.join(HERE, 'assets');
const SHELL_FILE = path.join(HERE, 'shell.html');
/** The portal's browser code, bundled (server/scripts/build.mjs). */
const BUNDLE = 'portal.js';

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * Only this origin's files run; nothing inline, no eval, no plugins, no frames; and with Trusted
 * Types required, assigning a string to innerHTML (or any other HTML sink) throws in the browser.
 */
export const PORTAL_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

const PROXY_PATH = /^\/v1\/[A-Za-z0-9._~%-]+(\/[A-Za-z0-9._~%-]+)*\/?$/;
/** Response headers the browser may see; everything else (cookies of the API, auth challenges) stays behind. */
const RATE_HEADERS = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'retry-after'];
const PASSED_HEADERS = ['content-type', 'content-disposition', 'x-total-count', ...RATE_HEADERS, 'x-request-id'];
const MAX_FORM_BYTES = 64 * 1024;
const CONNECT_COOKIE_VALUE = new RegExp(`^${CONNECT_COOKIE}=([A-Za-z0-9_-]{43});`);

const LoginForm = z.object({ email: z.string().max(300), password: z.string().max(300) });
const VerifyForm = z.object({ code: z.string().max(64) });
const RegisterForm = z.object({ email: z.string().max(300), password: z.string().max(300), company_name: z.string().max(300) });
const QrForm = z.object({ text: z.string().min(1).max(2000) });

function loadAssets(): Map<string, StaticAsset> {
  const assets = new Map<string, StaticAsset>();
  for (const name of fs.readdirSync(ASSETS_DIR)) {
    const type = CONTENT_TYPES[path.extname(name)];
    if (!type) continue;
    assets.set(name, staticAsset(fs.readFileSync(path.join(ASSETS_DIR, name)), type));
  }
  // The page is nothing without its script: a server started from a tree never built says so at once.
  if (!assets.has(BUNDLE)) throw new Error(`${path.join(ASSETS_DIR, BUNDLE)} is missing: run npm run build`);
  return assets;
}

async function readForm<T>(ctx: Koa.Context, schema: z.ZodType<T>): Promise<T> {
  const parsed = schema.safeParse(await readJsonBody(ctx.req, MAX_FORM_BYTES));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new RequestError('VALIDATION_FAILED', `body.${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  return parsed.data;
}

export interface PortalDeps {
  config: Config;
  db: Db;
  clock: Clock;
  masterKey: MasterKey;
  /** The API's router and operations: the proxy forwards only to those a developer's token is for. */
  api: { router: Router; routes: RouteDef[] };
  /** Every portal answer carries the RateLimit headers (docs/contract.md): its own class `portal`, or the forwarded operation's. */
  rateLimiter: RateLimiter;
}

export function createPortal(deps: PortalDeps) {
  const upstream = createUpstream();
  const sessions = createPortalSessions({ db: deps.db, clock: deps.clock, masterKey: deps.masterKey, upstream });
  const assets = loadAssets();
  const forwardable = forwardableOperations(deps.api.router, deps.api.routes);
  const shell = fs.readFileSync(SHELL_FILE);
  const publicOrigin = deps.config.publicBaseUrl ? new URL(deps.config.publicBaseUrl).origin : null;

  /** The request comes from a page of this origin (Origin, else Referer); a cross-site form or fetch does not. */
  function sameOrigin(ctx: Koa.Context): boolean {
    let origin = ctx.get('origin');
    if (!origin) {
      try {
        origin = new URL(ctx.get('referer')).origin;
      } catch {
        return false;
      }
    }
    // Not `ctx.origin`: Koa's context answers the request's Origin header by that name.
    return origin === `${ctx.protocol}://${ctx.host}` || origin === publicOrigin;
  }

  /** Every state change: same origin, and the CSRF token of the session (or, signing in, of the pre-session). */
  function guardStateChange(ctx: Koa.Context, session: PortalSession | null): void {
    if (!sameOrigin(ctx)) throw new RequestError('FORBIDDEN', 'Cross-origin request refused: use the portal page itself');
    if (!sessions.csrfValid(ctx, session)) throw new RequestError('FORBIDDEN', 'Missing or wrong CSRF token: reload the page and try again');
  }

  /** The API's answer to a session call, with its wait and the state of the API limit that decided it. */
  function answer(ctx: Koa.Context, res: JsonAnswer): void {
    ctx.status = res.status;
    ctx.body = res.body ?? null;
    for (const name of RATE_HEADERS) {
      const value = res.headers[name];
      if (value) ctx.set(name, String(value));
    }
  }

  /** Completes a sign-in with the API's token pair: who it belongs to comes from GET /v1/auth/me. */
  async function signIn(ctx: Koa.Context, tokens: TokenPair): Promise<void> {
    const me = await upstream.json(ctx, 'GET', '/v1/auth/me', undefined, tokens.access_token);
    if (me.status !== 200) return answer(ctx, me);
    const developer = me.body as { id: string };
    const csrf = await sessions.create(ctx, developer.id, tokens);
    ctx.body = { signed_in: true, csrf_token: csrf, developer: me.body };
  }

  const handlers: Record<string, (ctx: Koa.Context, session: PortalSession | null) => Promise<void>> = {
    'GET /portal/session': async (ctx, session) => {
      if (session) {
        ctx.body = { signed_in: true, csrf_token: session.csrfToken, developer_id: session.developerId };
        return;
      }
      const nonce = sessions.preSession(ctx);
      ctx.body = { signed_in: false, csrf_token: sessions.csrfFor('pre', nonce), two_factor_pending: sessions.heldChallenge(ctx) !== null };
    },

    'POST /portal/session/login': async (ctx) => {
      const form = await readForm(ctx, LoginForm);
      const res = await upstream.json(ctx, 'POST', '/v1/auth/login', form);
      if (res.status !== 200) return answer(ctx, res);
      const body = res.body as TokenPair | { two_factor_required: true; challenge_token: string };
      if ('two_factor_required' in body) {
        sessions.holdChallenge(ctx, body.challenge_token);
        ctx.body = { signed_in: false, two_factor_required: true };
        return;
      }
      await signIn(ctx, body);
    },

    'POST /portal/session/verify-2fa': async (ctx) => {
      const form = await readForm(ctx, VerifyForm);
      const challenge = sessions.heldChallenge(ctx);
      if (!challenge) throw new RequestError('INVALID_CREDENTIALS', 'The sign-in took too long: enter your email and password again');
      const res = await upstream.json(ctx, 'POST', '/v1/auth/login/verify-2fa', { challenge_token: challenge, code: form.code });
      if (res.status === 200) return signIn(ctx, res.body as TokenPair);
      // A wrong code leaves the challenge usable; an expired or used one does not.
      if ((res.body as { error_code?: string } | undefined)?.error_code === 'INVALID_CREDENTIALS') sessions.dropChallenge(ctx);
      answer(ctx, res);
    },

    'POST /portal/session/register': async (ctx) => {
      const form = await readForm(ctx, RegisterForm);
      const res = await upstream.json(ctx, 'POST', '/v1/auth/register', form);
      if (res.status !== 201) return answer(ctx, res);
      const login = await upstream.json(ctx, 'POST', '/v1/auth/login', { email: form.email, password: form.password });
      if (login.status !== 200) return answer(ctx, login);
      await signIn(ctx, login.body as TokenPair);
    },

    'POST /portal/session/logout': async (ctx) => {
      await sessions.destroy(ctx);
      ctx.body = { signed_in: false, csrf_token: sessions.csrfFor('pre', sessions.preSession(ctx)) };
    },

    /** The 2FA provisioning URI as a QR matrix, which the page draws as SVG (no image data, no innerHTML). */
    'POST /portal/qr': async (ctx, session) => {
      if (!session) throw signedOut();
      const { text } = await readForm(ctx, QrForm);
      const qr = QRCode.create(text, { errorCorrectionLevel: 'M' });
      ctx.body = { size: qr.modules.size, modules: Array.from(qr.modules.data, (bit) => (bit ? '1' : '0')).join('') };
    },
  };

  /** /portal/api/v1/...: the public route, called with the session's bearer token; bodies stream both ways. */
  async function proxy(ctx: Koa.Context, session: PortalSession | null): Promise<void> {
    if (!session) throw new RequestError('UNAUTHORIZED', 'Sign in to the portal first');
    const target = ctx.url.slice('/portal/api'.length);
    const pathOnly = target.split('?', 1)[0]!;
    const segments = pathOnly.split('/');
    if (!PROXY_PATH.test(pathOnly) || segments.some((s) => s === '.' || s === '..' || /%2e|%2f|%5c/i.test(s)) || !forwardable.allows(ctx.method, pathOnly)) {
      throw new RequestError('NOT_FOUND', `The portal does not forward ${ctx.method} ${pathOnly}`);
    }
    if (!['GET', 'HEAD', 'POST', 'PUT', 'DELETE'].includes(ctx.method)) throw new RequestError('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed`);
    const token = await sessions.accessToken(ctx, session);
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: ctx.get('accept') || 'application/json' };
    for (const name of ['content-type', 'content-length']) if (ctx.get(name)) headers[name] = ctx.get(name);
    const withBody = ctx.method === 'POST' || ctx.method === 'PUT';
    const res = await upstream.send(ctx, { method: ctx.method, path: target, headers, body: withBody ? ctx.req : undefined });
    ctx.status = res.statusCode ?? 502;
    ctx.set('Cache-Control', 'no-store');
    if (ctx.status === 204 || ctx.method === 'HEAD') {
      res.resume();
      ctx.body = null;
    } else {
      ctx.body = res;
    }
    for (const name of PASSED_HEADERS) {
      const value = res.headers[name];
      if (value !== undefined) ctx.set(name, String(value));
    }
    // The one API cookie the browser needs: the binding of a processor connection it started,
    // which Stripe's redirect back to the callback must carry (payments/connect.ts). Set anew for
    // the browser's own request (its scheme decides Secure); every other cookie stays behind.
    const binding = res.headers['set-cookie']?.map((c) => CONNECT_COOKIE_VALUE.exec(c)?.[1]).find(Boolean);
    if (binding) setConnectCookie(ctx, binding);
  }

  function serveShell(ctx: Koa.Context): void {
    ctx.set('Content-Security-Policy', PORTAL_CSP);
    ctx.set('Referrer-Policy', 'same-origin');
    ctx.set('Cache-Control', 'no-store');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('X-Frame-Options', 'DENY');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = shell;
  }

  function serveAsset(ctx: Koa.Context, name: string): void {
    const asset = assets.get(name);
    if (!asset) throw new RequestError('NOT_FOUND', `No portal asset ${name}`);
    sendStaticAsset(ctx, asset);
  }

  const middleware: Koa.Middleware = async (ctx, next) => {
    if (ctx.path !== '/portal' && !ctx.path.startsWith('/portal/')) return next();
    // Not an API operation: counted in the portal's own class (the headers of a forwarded call are then the API operation's).
    ctx.state.routePath = ctx.path;
    await deps.rateLimiter.admit(ctx, 'portal', rateSubject.address(ctx.ip));
    const reading = ctx.method === 'GET' || ctx.method === 'HEAD';
    if (reading && (ctx.path === '/portal' || ctx.path === '/portal/')) return serveShell(ctx);
    if (reading && ctx.path.startsWith('/portal/assets/')) return serveAsset(ctx, ctx.path.slice('/portal/assets/'.length));
    const session = await sessions.current(ctx);
    if (ctx.path.startsWith('/portal/api/')) {
      // Reads need the token too: a cross-site navigation (which carries SameSite=Lax cookies) must
      // not reach a GET that does something once, such as a one-time CSV download.
      if (!reading && !sameOrigin(ctx)) throw new RequestError('FORBIDDEN', 'Cross-origin request refused: use the portal page itself');
      // A session that ended (signed out, or its API session ended by a password change elsewhere)
      // has nothing left to protect: the page is told it is signed out rather than that its token is wrong.
      if (!session) throw signedOut();
      if (!sessions.csrfValid(ctx, session)) throw new RequestError('FORBIDDEN', 'Missing or wrong CSRF token: reload the page and try again');
      return proxy(ctx, session);
    }
    if (!reading) guardStateChange(ctx, session);
    const handler = handlers[`${ctx.method} ${ctx.path}`];
    if (!handler) throw new RequestError('NOT_FOUND', `No portal route for ${ctx.method} ${ctx.path}`);
    ctx.set('Cache-Control', 'no-store');
    await handler(ctx, session);
  };

  return { acceptForwarded: upstream.acceptForwarded, forwardedClient: upstream.forwardedClient, middleware, close: upstream.close };
}
