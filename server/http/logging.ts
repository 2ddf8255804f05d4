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

/** A request's id: the caller's `X-Request-Id` when well-formed (a proxy's), else a new one. */
export function requestIdOf(incoming: string | string[] | undefined): string {
  return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/** The access-log line of an answered request; `startedAt` is its `performance.now()` at arrival, `client` its resolved address. */
export function logAnswered(log: Logger, state: RequestState, answered: { method: string; url: string; status: number; client: string; startedAt: number }): void {
  // Only built when it will be written: below `info` (load tests, quiet deployments) it costs nothing.
  if (!log.isLevelEnabled('info')) return;
  const ms = Math.round((performance.now() - answered.startedAt) * 10) / 10;
  state.log.info({ method: answered.method, url: redactUrl(answered.url), status: answered.status, client: answered.client, ms }, 'request');
}

/** Gives each request an id (`requestIdOf`), a child logger and one access-log line. */
export function requestLogging(log: Logger): Koa.Middleware {
  return async (ctx, next) => {
    const state = new RequestState(log, requestIdOf(ctx.req.headers['x-request-id']));
    ctx.set('X-Request-Id', state.requestId);
    ctx.state = state;
    const startedAt = performance.now();
    try {
      await next();
    } finally {
      // `ctx.ip`: the client as resolveClientAddress found it (X-Forwarded-For only from trusted proxies).
      logAnswered(log, state, { method: ctx.method, url: ctx.originalUrl, status: ctx.status, client: ctx.ip, startedAt });
    }
  };
}
