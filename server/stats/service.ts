import type { Clock } from '../clock.js';
import { assertThat } from '../errors.js';
import type { StatsStore } from './store.js';

const DAY_MS = 86_400_000;
const isoDay = (d: Date) => d.toISOString().slice(0, 10);

/** Every day of the window, zero where nothing happened. */
function fill(days: string[], rows: { day: string; count: string }[]) {
  const counts = new Map(rows.map((r) => [r.day, Number(r.count)]));
  return days.map((date) => ({ date, count: counts.get(date) ?? 0 }));
}

/** The portal dashboard's aggregates: activations and licenses per UTC day over the last `days` days, today included, and fees. */
export function createStatsService(deps: { store: StatsStore; clock: Clock }) {
  const { store, clock } = deps;
  return {
    async forDeveloper(developerId: string, query: { days: number; app_id?: string | undefined }) {
      if (query.app_id) assertThat(await store.appExists(developerId, query.app_id), 'APP_NOT_FOUND', 'No such app');
      const today = new Date(`${isoDay(clock.now())}T00:00:00Z`);
      const since = new Date(today.getTime() - (query.days - 1) * DAY_MS);
      const days = Array.from({ length: query.days }, (_, i) => isoDay(new Date(since.getTime() + i * DAY_MS)));
      const [activations, created, sold, fees] = await Promise.all([
        store.activations(developerId, query.app_id, since),
        store.licensesCreated(developerId, query.app_id, since),
        store.licensesSold(developerId, query.app_id, since),
        store.fees(developerId, query.app_id, since),
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
  };
}

export type StatsService = ReturnType<typeof createStatsService>;
