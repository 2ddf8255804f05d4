import type http from 'node:http';
import type { Logger } from 'pino';
import { RequestError } from '../errors.js';
import { readJsonBody } from './body.js';
import { resolveClientOf, type TrustedProxies } from './client-address.js';
import { errorBodyOf, toRequestError } from './error-handler.js';
import { logAnswered, RequestState, requestIdOf } from './logging.js';
import type { Metrics } from './metrics.js';
import { rateSubject } from './rate-limit.js';
import type { ResponseHeaders } from './rate-window.js';
import { answerOf, runHandler, type RouteDef, type RouteDeps } from './route.js';

/**
 * The operations installed apps call, some at every start and every few minutes (activation,
 * refresh, check-in, consumption, update check and report, deactivation, tamper and offline
 * activation reports): the runtime class, no credential, a JSON body and answer, nothing in the
 * path or the query string.
 */
export function inRuntimeLane(route: RouteDef): boolean {
  const json = !route.multipart && !route.streamBody && !route.formBody && !route.rawBody && !route.fileResponse && !route.alternative;
  const plain = !route.path.includes('{') && !route.params && !route.query && !route.precheck;
  return route.rateLimit === 'runtime' && route.auth === 'none' && plain && json;
}

const keyOf = (method: string, path: string) => `${method.toUpperCase()} ${path}`;

/** The request target's path, as sent: the lane matches it exactly, query string aside. */
function pathOf(url: string): string {
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}

/** An answer's headers, set as a Koa context sets them: by name in any case, the last value kept. */
class AnswerHeaders implements ResponseHeaders {
  readonly #byName = new Map<string, [string, string]>();
  set(name: string, value: string): void {
    this.#byName.set(name.toLowerCase(), [name, value]);
  }
  toObject(): Record<string, string> {
    return Object.fromEntries(this.#byName.values());
  }
}

/**
 * The answer as Koa writes an object body (or none: 204). Lane operations answer objects (their
 * response schemas are objects); Koa would infer another type for a string or a buffer.
 */
function writeAnswer(res: http.ServerResponse, status: number, headers: AnswerHeaders, body: unknown): void {
  if (res.writableEnded || res.destroyed) return;
  if (body === undefined) {
    res.writeHead(status, headers.toObject()).end();
    return;
  }
  const json = JSON.stringify(body);
  res.writeHead(status, { ...headers.toObject(), 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(Buffer.byteLength(json)) });
  res.end(json);
}

/**
 * Answers the runtime operations on `node:http` itself, before the Koa application: the same steps
 * every request takes there, as the same functions (client address and the portal's forwarding,
 * request id, the runtime guard's rate limit, the JSON body, the operation's schemas and handler,
 * the error body, metrics and the access log), without what a framework adds per request (its
 * context objects, middleware chain, header delegates and response inference) and without the
 * routers' path matching. Measured on the refresh path against the Koa lane it replaces: see
 * docs/architecture.md.
 *
 * Only an exact method and path goes this way; anything else (HEAD, a trailing slash, another
 * case) goes to the main application, which mounts the same operations too and answers as always.
 */
export function createRuntimeLane(options: {
  routes: RouteDef[];
  deps: RouteDeps;
  log: Logger;
  metrics: Metrics;
  proxies: TrustedProxies;
  /** The browser address a request the portal forwarded names (portal/upstream.ts). */
  forwardedClient(req: http.IncomingMessage): string | undefined;
  /** A failure of the lane itself, after which the client got a bare 500. */
  onError(err: Error): void;
}): (fallback: http.RequestListener) => http.RequestListener {
  const { deps, log, metrics } = options;
  const operations = new Map<string, RouteDef>();
  for (const route of options.routes) if (inRuntimeLane(route)) operations.set(keyOf(route.method, route.path), route);

  async function answer(req: http.IncomingMessage, res: http.ServerResponse, route: RouteDef): Promise<void> {
    const startedAt = performance.now();
    // Both run on every request: each removes headers a client must not choose.
    const peer = resolveClientOf(req, options.proxies);
    const client = options.forwardedClient(req) ?? peer;
    const state = new RequestState(log, requestIdOf(req.headers['x-request-id']));
    const headers = new AnswerHeaders();
    headers.set('X-Request-Id', state.requestId);
    let status: number;
    let body: unknown;
    try {
      await deps.rateLimiter.admit(headers, route.rateLimit, rateSubject.address(client));
      const raw = route.body ? await readJsonBody(req, deps.maxJsonBytes) : undefined;
      const result = await runHandler(route, deps, raw, {
        params: {},
        query: {},
        actor: null,
        response: headers,
        // Runtime operations take no Koa context: their handlers set headers through `response`.
        get ctx(): never {
          throw new Error('an operation in the runtime lane has no Koa context: set headers through `response`');
        },
      });
      ({ status, body } = answerOf(route, result));
    } catch (err) {
      const error = toRequestError(err, state.log);
      for (const [name, value] of Object.entries(error.extra.headers ?? {})) headers.set(name, value);
      status = error.status;
      body = errorBodyOf(error, state);
    }
    // The body deadline may have answered 408 already (http-server.ts): that is what the client got.
    if (res.headersSent) status = res.statusCode;
    else writeAnswer(res, status, headers, body);
    metrics.record(req.method!, route.path, status, startedAt);
    logAnswered(log, state, { method: req.method!, url: req.url!, status, client, startedAt });
  }

  return (fallback) => (req, res) => {
    const route = operations.get(keyOf(req.method ?? '', pathOf(req.url ?? '')));
    if (!route) return fallback(req, res);
    answer(req, res, route).catch((err: Error) => {
      options.onError(err);
      if (res.headersSent) return;
      const body = JSON.stringify(new RequestError('INTERNAL_ERROR', 'Internal server error').toBody());
      res.writeHead(500, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(Buffer.byteLength(body)) }).end(body);
    });
  };
}
