import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import pino, { type Logger } from 'pino';

/**
 * Query parameters whose values are secrets never reach a log line: signed download links'
 * signatures, OAuth codes and state, checkout sessions, email addresses, and anything named like a
 * token, key, secret or password, in any case.
 */
const SECRET_QUERY_PARAM = /token|key|secret|password|signature|^sig$|^code$|^state$|^session_id$|^email$/i;

export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-api-key"]',
        'req.headers["x-merchantops-secret"]',
        'req.headers.cookie',
        // Errors of HTTP clients (the payment processor's) carry the headers they sent or received.
        '*.headers.authorization',
        '*.headers["x-api-key"]',
        '*.headers.cookie',
        '*.headers["set-cookie"]',
        '*.password',
        '*.license_key',
        '*.refresh_token',
        '*.access_token',
      ],
      censor: '[redacted]',
    },
  });
}

/**
 * Path segments that are secrets: the checkout session id of the public entitlement endpoint, the
 * token of a permanent delivery page (`/d/<token>`), an entitlement webhook's URL token, and a
 * redemption code (directly or through the portal's proxy).
 */
const SECRET_PATH_SEGMENTS = [/^(\/d\/)[^/]*/i, /(\/(?:checkout-session|entitlement-webhooks|redemption-codes)\/)[^/]*/gi];

export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const path = SECRET_PATH_SEGMENTS.reduce((p, segment) => p.replace(segment, '$1[redacted]'), q < 0 ? url : url.slice(0, q));
  if (q < 0) return path;
  const params = new URLSearchParams(url.slice(q + 1));
  for (const name of new Set(params.keys())) if (SECRET_QUERY_PARAM.test(name)) params.set(name, '[redacted]');
  return `${path}?${params.toString()}`;
}

const REQUEST_ID = /^[\w.-]{1,128}$/;

/** `ctx.state` of a request: its child logger (carrying the request id) is built only if something logs. */
export class RequestState {
  #log: Logger | undefined;
  constructor(
    private readonly root: Logger,
    readonly requestId: string,
  ) {}

  get log(): Logger {
    return (this.#log ??= this.root.child({ req_id: this.requestId }));
  }
}

/** Gives each request an id (the caller's `X-Request-Id` when well-formed), a child logger and one access-log line. */
export function requestLogging(log: Logger): Koa.Middleware {
  return async (ctx, next) => {
    const incoming = ctx.get('x-request-id');
    const id = REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.set('X-Request-Id', id);
    ctx.state = new RequestState(log, id);
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      // Only built when it will be written: below `info` (load tests, quiet deployments) it costs nothing.
      if (log.isLevelEnabled('info')) {
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        // `ctx.ip`: the client as resolveClientAddress found it (X-Forwarded-For only from trusted proxies).
        ctx.state.log.info({ method: ctx.method, url: redactUrl(ctx.originalUrl), status: ctx.status, client: ctx.ip, ms: Math.round(ms * 10) / 10 }, 'request');
      }
    }
  };
}
