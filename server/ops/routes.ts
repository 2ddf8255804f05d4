import Router from '@koa/router';
import type { Db } from '../db/knex.js';
import { RequestError } from '../errors.js';
import type { Authenticator } from '../http/auth.js';
import type { Metrics } from '../http/metrics.js';

/**
 * Liveness, readiness and Prometheus metrics. Outside the rate limits: load balancers and
 * scrapers poll them. Metrics tell about traffic, routes and the process, so they take the
 * operator's token (`LATCHKEY_ADMIN_TOKEN`, as the /v1/admin operations do; see docs/operations.md).
 */
export function opsRouter(db: Db, metrics: Metrics, openApi: () => unknown, authenticator: Authenticator): Router {
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    try {
      await db.raw('select 1');
    } catch {
      throw new RequestError('SERVICE_UNAVAILABLE', 'The database is not reachable', { headers: { 'Retry-After': '1' } });
    }
    ctx.body = { status: 'ready' };
  });
  router.get('/metrics', async (ctx) => {
    // The admin mode resolves no actor; `reject` throws 404 with no token configured, 401 for a missing or wrong one, and passes the right one.
    await authenticator.resolve(ctx, 'admin');
    await authenticator.reject(ctx, 'admin');
    ctx.type = metrics.registry.contentType;
    ctx.body = await metrics.registry.metrics();
  });
  router.get('/v1/openapi.json', (ctx) => {
    ctx.body = openApi();
  });
  return router;
}
