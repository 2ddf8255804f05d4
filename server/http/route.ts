import Router from '@koa/router';
import type Koa from 'koa';
import { z } from 'zod';
import { RequestError } from '../errors.js';
import { assertScope, type Actor, type Authenticator, type AuthMode, type RouteScope, type WebhookActor } from './auth.js';
import { readFormBody, readJsonBody, readRawBody } from './body.js';
import { allowLongBody } from './http-server.js';
import { fileOf, readMultipart, type MultipartSpec } from './multipart.js';
import { rateSubject, type RateLimitClass, type RateLimiter } from './rate-limit.js';
import type { ResponseHeaders } from './rate-window.js';

export type HttpMethod = 'get' | 'post' | 'put' | 'delete';

type ActorFor<A extends AuthMode> = A extends 'developer' ? Actor : A extends 'entitlement_webhook' ? WebhookActor : null;

export interface RouteInput<P, Q, B, A extends AuthMode> {
  params: P;
  query: Q;
  body: B;
  actor: ActorFor<A>;
  /** Headers of the answer (RateLimit headers of a limit the operation counted). */
  response: ResponseHeaders;
  /** The Koa context; operations in the runtime lane (runtime-lane.ts) have none and use `response`. */
  ctx: Koa.Context;
}

/**
 * One API operation: the schemas here validate the request, shape the response and generate the
 * OpenAPI document, so the three never drift apart.
 */
export interface RouteDef<
  A extends AuthMode = AuthMode,
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
> {
  method: HttpMethod;
  /** OpenAPI-style path: `/v1/apps/{app_id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  auth: A;
  /** Developer operations: the API key scope they need, or `session` (no API key); checked in `mountRoutes`. */
  scope?: RouteScope;
  /**
   * A developer operation that secures the account or reduces what it exposes (changing the
   * password or 2FA, revoking or rotating API keys; rotating or disabling the entitlement webhook's
   * secret, disconnecting the payment account, deleting a payment link, revoking a license or
   * redemption codes): a deactivated account may still do it, as a leaked credential or a live
   * sales channel must be stoppable whatever the subscription. Every other developer change is
   * refused while deactivated.
   */
  securesAccount?: true;
  rateLimit: RateLimitClass;
  params?: P;
  query?: Q;
  body?: B;
  /** Absent: the operation answers 204 with no body. */
  response?: R;
  /** The operation may also answer 204 with no body, when the handler returns nothing; says when, for the OpenAPI document. */
  noContent?: string;
  status?: number;
  /** Lists: the body is a bare array; `X-Total-Count` and `Link` carry the rest. */
  paginated?: boolean;
  /** Error codes this operation may answer with, for the OpenAPI document. */
  errors?: number[];
  /** The body is multipart/form-data: `body` validates its text fields and the file part (an `UploadedFile`). */
  multipart?: MultipartSpec;
  /**
   * The body is read as bytes, unparsed, into `ctx.state.rawBody` (a Buffer; `body` stays
   * undefined): for a signature over the exact bytes sent (payment processor notifications). The
   * handler validates what it parses; `description` documents the body in the OpenAPI document.
   */
  rawBody?: { description: string };
  /**
   * The body is a stream of bytes of any length that the handler reads itself (`ctx.req`): an
   * upload chunk. Like a multipart upload, it has no total read deadline once the caller is
   * authenticated, only the idle one; `description` documents the body in the OpenAPI document.
   */
  streamBody?: { description: string; contentType: string };
  /** The body is an HTML form (`application/x-www-form-urlencoded`) that `body` validates, not JSON: a hosted page's form posts it. */
  formBody?: true;
  /**
   * Another representation of the success response, answered instead of JSON when the request's
   * `Accept` prefers its content type (`Accept: text/csv` for an export); built from the parsed response.
   */
  alternative?: { contentType: string; description: string; render(response: z.output<R>, ctx: Koa.Context): string };
  /** Runs once the caller and path are known, before the body is read: refuses before a large upload is stored. */
  precheck?(input: { params: z.infer<P>; actor: ActorFor<A> }): Promise<void>;
  /** The handler writes a file (status, headers, stream) itself instead of returning JSON; a `contentType` (an HTML page) is answered whole. */
  fileResponse?: { description: string; contentType?: string };
  handler(input: RouteInput<z.infer<P>, z.infer<Q>, z.infer<B>, A>): Promise<z.input<R> | void>;
}

export function defineRoute<
  A extends AuthMode,
  P extends z.ZodType = z.ZodObject<Record<string, never>>,
  Q extends z.ZodType = z.ZodObject<Record<string, never>>,
  B extends z.ZodType = z.ZodUndefined,
  R extends z.ZodType = z.ZodVoid,
>(def: RouteDef<A, P, Q, B, R> & (A extends 'developer' ? { scope: RouteScope } : { scope?: never })): RouteDef {
  return def as unknown as RouteDef;
}

export interface RouteDeps {
  authenticator: Authenticator;
  /**
   * A handler threw a closed error its route does not declare: the OpenAPI document does not tell
   * clients about it. Logged by the server; with LATCHKEY_STRICT_ERRORS (the test suite) it throws
   * instead, so every black-box test checks its routes' declarations against what their services throw.
   */
  onUndeclaredError(route: RouteDef, error: RequestError): void;
  /** Throws 403 ACCOUNT_DEACTIVATED for a developer whose account is deactivated (accounts/deactivation.ts). */
  refuseChangesIfDeactivated(developerId: string): Promise<void>;
  rateLimiter: RateLimiter;
  maxJsonBytes: number;
}

interface Visit {
  key: string;
  value: unknown;
  parent: Visit | null;
}

/**
 * The first string (value or key) holding U+0000, which PostgreSQL text and jsonb cannot store, or
 * key `__proto__`, which JSON.parse keeps as a plain key but every object spread and schema drops
 * silently (a meters object of one such key would clear the meters): its path and why. Iterative,
 * because a 1 MB body can nest deeper than the call stack.
 */
function findUnstorable(value: unknown, where: string): { at: string; why: string } | null {
  const pending: Visit[] = [{ key: where, value, parent: null }];
  for (let visit = pending.pop(); visit; visit = pending.pop()) {
    const nul = visit.key.includes('\0') || (typeof visit.value === 'string' && visit.value.includes('\0'));
    if (nul || (visit.parent && visit.key === '__proto__')) {
      const path: string[] = [];
      for (let v: Visit | null = visit; v; v = v.parent) path.unshift(v.key);
      return { at: path.join('.'), why: nul ? 'must not contain NUL characters' : 'is not an allowed name' };
    }
    if (visit.value !== null && typeof visit.value === 'object') {
      for (const [key, child] of Object.entries(visit.value)) pending.push({ key, value: child, parent: visit });
    }
  }
  return null;
}

function parseOrThrow<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string): T {
  if (!schema) return undefined as T;
  // Refused here as bad input, for every field at once, rather than failing later in the database.
  const unstorable = findUnstorable(value, where);
  if (unstorable) throw new RequestError('VALIDATION_FAILED', `${unstorable.at}: ${unstorable.why}`);
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = [where, ...issue.path.map(String)].join('.');
  throw new RequestError('VALIDATION_FAILED', `${field}: ${issue.message}`);
}

/**
 * Whether a deactivated developer is refused this operation: every change a developer makes (any
 * method but GET) except securing the account or reducing its exposure. Asked by `mountRoutes` and the OpenAPI document.
 */
export const refusedWhileDeactivated = (route: RouteDef): boolean => route.auth === 'developer' && route.method !== 'get' && !route.securesAccount;

/** Any operation may fail on bad input, past its rate limit, on a bug, while the database is unreachable, or on a full disk. */
const COMMON_ERROR_STATUSES = [400, 429, 500, 503, 507];

/** Every error status an operation may answer: what the OpenAPI document declares and what `mountRoutes` holds its handler to. */
export function declaredErrorStatuses(route: RouteDef): Set<number> {
  return new Set([...COMMON_ERROR_STATUSES, ...(route.errors ?? []), ...(route.auth === 'none' ? [] : [401]), ...(refusedWhileDeactivated(route) ? [403] : [])]);
}

export function toKoaPath(openApiPath: string): string {
  return openApiPath.replace(/\{(\w+)\}/g, ':$1');
}

/**
 * Validates the body read (`raw`) and runs the handler: what every operation does once admitted,
 * on the router and in the runtime lane. A closed error the route does not declare is reported.
 */
export async function runHandler(route: RouteDef, deps: RouteDeps, raw: unknown, input: Omit<RouteInput<unknown, unknown, unknown, AuthMode>, 'body'>): Promise<unknown> {
  try {
    const body = parseOrThrow(route.body, raw, 'body');
    // Assigned, not spread: the runtime lane's `ctx` is a getter that throws when read.
    return await route.handler(Object.assign(input, { body }) as RouteInput<never, never, never, AuthMode>);
  } catch (err) {
    if (err instanceof RequestError && !declaredErrorStatuses(route).has(err.status)) deps.onUndeclaredError(route, err);
    throw err;
  }
}

/** The status and JSON body of a handler's result; no body: 204. */
export function answerOf(route: RouteDef, result: unknown): { status: number; body?: unknown } {
  if (!route.response || (route.noContent && result === undefined)) return { status: 204 };
  // Parsing the output strips anything the schema does not name: no internal column leaks.
  return { status: route.status ?? 200, body: route.response.parse(result) };
}

/** Mounts route definitions on a Koa router with the guard every operation shares. */
export function mountRoutes(router: Router, routes: RouteDef[], deps: RouteDeps): void {
  for (const route of routes) router[route.method](route.operationId, toKoaPath(route.path), serveOperation(route, deps));
}

/** One operation behind the guard every operation shares, as the router mounts it (the runtime lane has its own: runtime-lane.ts). */
export function serveOperation(route: RouteDef, deps: RouteDeps): Koa.Middleware {
  return async (ctx) => {
    ctx.state.routePath = route.path;
    const actor = await deps.authenticator.resolve(ctx, route.auth);
    await deps.rateLimiter.admit(ctx, route.rateLimit, actor ? rateSubject.developer(actor.developerId) : rateSubject.address(ctx.ip));
    if (route.auth !== 'none' && !actor) await deps.authenticator.reject(ctx, route.auth);
    // The one place API key scopes are enforced; a developer route without one (the type requires it) takes no API key.
    if (actor?.via === 'api_key') assertScope(actor, route.scope ?? 'session');
    // The one place account deactivation is enforced, before the body is read: nothing of the request is kept.
    if (actor && refusedWhileDeactivated(route)) await deps.refuseChangesIfDeactivated(actor.developerId);

    const params = parseOrThrow(route.params, ctx.params, 'path');
    const query = parseOrThrow(route.query, ctx.query, 'query');
    if (route.precheck) await route.precheck({ params, actor: actor as never });
    const { multipart } = route;
    // Authenticated and accepted: an upload's body may take as long as its bytes keep coming.
    const serve = async (): Promise<void> => {
      if (route.rawBody) ctx.state.rawBody = await readRawBody(ctx.req, deps.maxJsonBytes);
      const raw = multipart
        ? await readMultipart(ctx, multipart, params as Record<string, string>)
        : route.formBody
          ? await readFormBody(ctx.req, deps.maxJsonBytes)
          : route.body
            ? await readJsonBody(ctx.req, deps.maxJsonBytes)
            : undefined;

      let result;
      try {
        result = await runHandler(route, deps, raw, { params, query, actor: actor as never, response: ctx, ctx });
      } catch (err) {
        // An uploaded file the request did not keep (bad fields, a refused operation) is removed.
        const file = multipart && fileOf(raw as Record<string, unknown>, multipart);
        if (file) await multipart.receiver.discard(file.stored);
        throw err;
      }
      if (route.fileResponse) return;
      const answer = answerOf(route, result);
      ctx.status = answer.status;
      if (!('body' in answer)) return;
      const response = answer.body;
      const alternative = route.alternative;
      if (alternative && ctx.accepts('application/json', alternative.contentType) === alternative.contentType) {
        ctx.type = alternative.contentType;
        ctx.body = alternative.render(response, ctx);
        return;
      }
      ctx.body = response;
    };
    if (!multipart && !route.streamBody) return serve();
    allowLongBody(ctx.req);
    try {
      await serve();
    } finally {
      // A connection that carried a whole upload is not reused: Node's header-time check would count
      // the next request's headers from this upload's start and reset it. One whose body was refused
      // before its end stays open, so Node reads the rest and the client, still sending, gets the
      // answer rather than a reset.
      if (ctx.req.complete) ctx.set('Connection', 'close');
    }
  };
}
