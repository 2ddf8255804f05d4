import Router from '@koa/router';
import type { Authenticator } from '../http/auth.js';
import type { Metrics } from '../http/metrics.js';

/**
 * Prometheus metrics and the OpenAPI document (liveness and readiness are operations:
 * health-routes.ts). Metrics are outside the rate limits: scrapers poll them. Metrics tell about traffic, routes and the process, so they take the
 * operator's token (`LATCHKEY_ADMIN_TOKEN`, as the /v1/admin operations do; see docs/operations.md).
 */
export function opsRouter(metrics: Metrics, openApi: () => unknown, authenticator: Authenticator): Router {
  const router = new Router();
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
