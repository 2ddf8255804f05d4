import { z } from 'zod';
import type { Db } from '../db/knex.js';
import { RequestError } from '../errors.js';
import { defineRoute } from '../http/route.js';

const Liveness = z.object({ status: z.literal('ok') });
const Readiness = z.object({ status: z.literal('ready') });

/**
 * Liveness and readiness for load balancers. Operations like any other, so their answers carry
 * the RateLimit headers (docs/contract.md: every response does) of their own class, `health`:
 * counted per address in the process's memory, generous enough for any balancer, and without a
 * database round trip, so readiness still answers (503) while the database is away.
 */
export function healthRoutes(db: Db) {
  const common = { tag: 'Health', auth: 'none', rateLimit: 'health' } as const;
  return [
    defineRoute({
      ...common,
      method: 'get',
      path: '/healthz',
      operationId: 'liveness',
      summary: 'Liveness: the process answers',
      response: Liveness,
      handler: async () => ({ status: 'ok' as const }),
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/readyz',
      operationId: 'readiness',
      summary: 'Readiness: the database answers too',
      description: 'While the database is not reachable: 503 SERVICE_UNAVAILABLE with `Retry-After: 1`.',
      response: Readiness,
      handler: async () => {
        try {
          await db.raw('select 1');
        } catch {
          throw new RequestError('SERVICE_UNAVAILABLE', 'The database is not reachable', { headers: { 'Retry-After': '1' } });
        }
        return { status: 'ready' as const };
      },
    }),
  ];
}
