import type { Clock } from '../clock.js';
import type { Db } from '../db/knex.js';
import { assertThat } from '../errors.js';
import { defineRoute } from '../http/route.js';
import * as s from './schemas.js';
import { createStatsStore } from './store.js';

const DAY_MS = 86_400_000;
const isoDay = (d: Date) => d.toISOString().slice(0, 10);

/** Every day of the window, zero where nothing happened. */
function fill(days: string[], rows: { day: string; count: string }[]) {
  const counts = new Map(rows.map((r) => [r.day, Number(r.count)]));
  return days.map((date) => ({ date, count: counts.get(date) ?? 0 }));
}

/** The portal dashboard's aggregates: activations and licenses over time, fees owed. Read-only, the caller's data only. */
export function statsRoutes(deps: { db: Db; clock: Clock }) {
  const store = createStatsStore(deps.db);
  return [
    defineRoute({
      method: 'get', path: '/v1/stats', operationId: 'getStats', tag: 'Stats', auth: 'developer', rateLimit: 'general',
      summary: 'Your activations, licenses created and sold per day (UTC), and platform fees owed',
      description:
        'Counts of the last `days` days, today included, one entry per day. Activations count devices activated now by the day they were first seen ' +
        '(reset devices are no longer counted). With `app_id`, one app only (404 APP_NOT_FOUND when it is not yours).',
      query: s.StatsQuery, response: s.Stats, errors: [404],
      handler: async ({ actor, query }) => {
        if (query.app_id) assertThat(await store.appExists(actor.developerId, query.app_id), 'APP_NOT_FOUND', 'No such app');
        const today = new Date(isoDay(deps.clock.now()) + 'T00:00:00Z');
        const since = new Date(today.getTime() - (query.days - 1) * DAY_MS);
        const days = Array.from({ length: query.days }, (_, i) => isoDay(new Date(since.getTime() + i * DAY_MS)));
        const [activations, created, sold, fees] = await Promise.all([
          store.activations(actor.developerId, query.app_id, since),
          store.licensesCreated(actor.developerId, query.app_id, since),
          store.licensesSold(actor.developerId, query.app_id, since),
          store.fees(actor.developerId, query.app_id, since),
        ]);
        return {
          from: days[0]!,
          to: days[days.length - 1]!,
          activations: fill(days, activations),
          licenses_created: fill(days, created),
          licenses_sold: fill(days, sold),
          fees,
        };
      },
    }),
  ];
}
