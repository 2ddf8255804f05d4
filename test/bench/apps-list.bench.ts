import { defineBench } from './lib.js';
import { seedApp, seedDeveloper } from './seed.js';

const APPS = 5;

/**
 * Issue 2: listing apps with an API key costs the list query plus the framework; the API key and
 * the rate-limit lease are in memory, their statements rare (a key is looked up again every minute,
 * a lease taken every few dozen requests). The baseline only runs the list query.
 */
export default defineBench({
  title: 'GET /v1/apps with an API key, against node:http running the same query with pg',
  async run(ctx) {
    const latchkey = await ctx.startLatchkey();
    const dev = await seedDeveloper(latchkey.call);
    for (let i = 1; i <= APPS; i++) await seedApp(latchkey.call, dev, `Bench App ${i}`);
    const baseline = await ctx.startBaseline('apps-list', { BENCH_DEVELOPER_ID: dev.id });

    const request = { path: '/v1/apps', headers: { 'x-api-key': dev.apiKey } };
    await ctx.measureHotPath('GET /v1/apps', [latchkey, baseline], request, 'runtime');
  },
});
