import Router from '@koa/router';
import type Koa from 'koa';
import { z } from 'zod';
import { RequestError } from '../errors.js';
import type { Actor, Authenticator, AuthMode } from './auth.js';
import { readJsonBody } from './body.js';
import type { RateLimitClass, RateLimiter } from './rate-limit.js';

export type HttpMethod = 'get' | 'post' | 'put' | 'delete';

type ActorFor<A extends AuthMode> = A extends 'developer' ? Actor : null;

export interface RouteInput<P, Q, B, A extends AuthMode> {
  params: P;
  query: Q;
  body: B;
  actor: ActorFor<A>;
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
  rateLimit: RateLimitClass;
  params?: P;
  query?: Q;
  body?: B;
  /** Absent: the operation answers 204 with no body. */
  response?: R;
  status?: number;
  /** Lists: the body is a bare array; `X-Total-Count` and `Link` carry the rest. */
  paginated?: boolean;
  /** Error codes this operation may answer with, for the OpenAPI document. */
  errors?: number[];
  handler(input: RouteInput<z.infer<P>, z.infer<Q>, z.infer<B>, A>): Promise<z.input<R> | void>;
}

export function defineRoute<
  A extends AuthMode,
  P extends z.ZodType = z.ZodObject<Record<string, never>>,
  Q extends z.ZodType = z.ZodObject<Record<string, never>>,
  B extends z.ZodType = z.ZodUndefined,
  R extends z.ZodType = z.ZodVoid,
>(def: RouteDef<A, P, Q, B, R>): RouteDef {
  return def as unknown as RouteDef;
}

export interface RouteDeps {
  authenticator: Authenticator;
  rateLimiter: RateLimiter;
  maxJsonBytes: number;
}

function parseOrThrow<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string): T {
  if (!schema) return undefined as T;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = [where, ...issue.path.map(String)].join('.');
  throw new RequestError('VALIDATION_FAILED', `${field}: ${issue.message}`);
}

export function toKoaPath(openApiPath: string): string {
  return openApiPath.replace(/\{(\w+)\}/g, ':$1');
}

/** Mounts route definitions on a Koa router with the guard every operation shares. */
export function mountRoutes(router: Router, routes: RouteDef[], deps: RouteDeps): void {
  for (const route of routes) {
    router[route.method](route.operationId, toKoaPath(route.path), async (ctx) => {
      ctx.state.routePath = route.path;
      const actor = await deps.authenticator.resolve(ctx, route.auth);
      await deps.rateLimiter.hit(ctx, route.rateLimit, actor ? `dev:${actor.developerId}` : `ip:${ctx.ip}`);
      if (route.auth !== 'none' && !actor) await deps.authenticator.reject(ctx, route.auth);

      const params = parseOrThrow(route.params, ctx.params, 'path');
      const query = parseOrThrow(route.query, ctx.query, 'query');
      const raw = route.body ? await readJsonBody(ctx, deps.maxJsonBytes) : undefined;
      const body = parseOrThrow(route.body, raw, 'body');

      const result = await route.handler({ params, query, body, actor: actor as never, ctx });
      if (!route.response) {
        ctx.status = 204;
        return;
      }
      ctx.status = route.status ?? 200;
      // Parsing the output strips anything the schema does not name: no internal column leaks.
      ctx.body = route.response.parse(result);
    });
  }
}
