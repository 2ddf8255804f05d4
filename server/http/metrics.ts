import type Koa from 'koa';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  middleware: Koa.Middleware;
  /** Counts one answered request; `startedAt` is its `performance.now()` at arrival. */
  record(method: string, route: string, status: number, startedAt: number): void;
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
  const record: Metrics['record'] = (method, route, status, startedAt) => {
    duration.observe({ method, route }, (performance.now() - startedAt) / 1000);
    requests.inc({ method, route, status: String(status) });
  };
  return {
    registry,
    record,
    middleware: async (ctx, next) => {
      const startedAt = performance.now();
      try {
        await next();
      } finally {
        record(ctx.method, (ctx.state.routePath as string | undefined) ?? 'unmatched', ctx.status, startedAt);
      }
    },
  };
}
