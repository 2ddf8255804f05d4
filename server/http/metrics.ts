import type Koa from 'koa';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  middleware: Koa.Middleware;
}

/** Prometheus counters per route template (never the raw path: ids would explode the label set). */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'latchkey_http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'latchkey_http_request_duration_seconds',
    help: 'HTTP request duration by route',
    labelNames: ['method', 'route'],
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  return {
    registry,
    middleware: async (ctx, next) => {
      const end = duration.startTimer();
      try {
        await next();
      } finally {
        const route = (ctx.state.routePath as string | undefined) ?? 'unmatched';
        end({ method: ctx.method, route });
        requests.inc({ method: ctx.method, route, status: String(ctx.status) });
      }
    },
  };
}
