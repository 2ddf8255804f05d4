import { defineRoute } from '../http/route.js';
import * as s from './schemas.js';
import type { StatsService } from './service.js';

/** The portal dashboard's aggregates: activations and licenses over time, fees owed. Read-only, the caller's data only. */
export function statsRoutes(stats: StatsService) {
  return [
    defineRoute({
      method: 'get',
      path: '/v1/stats',
      operationId: 'getStats',
      scope: 'read',
      tag: 'Stats',
      auth: 'developer',
      rateLimit: 'general',
      summary: 'Your activations, licenses created and sold per day (UTC), and platform fees owed',
      description:
        'Counts of the last `days` days, today included, one entry per day. Activations count devices activated now by the day they were first seen ' +
        '(reset devices are no longer counted). With `app_id`, one app only (404 APP_NOT_FOUND when it is not yours).',
      query: s.StatsQuery,
      response: s.Stats,
      errors: [404],
      handler: ({ actor, query }) => stats.forDeveloper(actor.developerId, query),
    }),
  ];
}
