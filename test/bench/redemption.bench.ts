import { defineBench, expectStatus, type RequestSpec, type Service } from './lib.js';
import { seedApp, seedDeveloper, seedProPlan, seedReadyBuild, serverQuotas } from './seed.js';

/** Codes made before the load: every request redeems a code never redeemed before, on either service. */
const BATCHES = 18;
const quotas = serverQuotas();
/**
 * Each batch is one developer's, as the tenant quotas ask: a developer may create so many codes a
 * day and a batch so many, and each redemption mints a license, of which a developer may mint so
 * many an hour. One batch per developer keeps every tenant within all three.
 */
const CODES_PER_BATCH = Math.min(10_000, quotas.codesPerBatch, quotas.codesPerDay, quotas.licensesPerHour);

/**
 * Issue 8: redemptions of distinct codes end to end over HTTP (`POST /v1/public/redeem`): the
 * per-address attempt counted (limits raised by the harness's rate multiplier, still counted in
 * PostgreSQL), the code claimed by one conditional UPDATE, the license, its fee and the fee's
 * report job inserted, and a signed link to the READY build, in one statement. The baseline does
 * the same claim and inserts in one prepared statement too. Both share one pool of codes on one
 * database, and are loaded unpaced with the same connections, like the other throughput benches.
 * The seeding runs on a Latchkey process with its job runner (the build becomes READY through it);
 * the measured one runs none: a runner would settle the fee reports of both services (the baseline
 * queues them in the same jobs table), work neither request does, charged to whichever round it
 * falls in. Both leave their report jobs queued. The codes are used batch after batch, so the load
 * redeems one tenant's codes at a time, as with a single seller.
 */
export default defineBench({
  title: 'Code redemptions, against node:http doing the same claim-and-insert with pg',
  async run(ctx) {
    const services: Service[] = [];
    try {
      const seeder = await ctx.startLatchkey();
      services.push(seeder);
      const { call } = seeder;
      const codes: string[] = [];
      for (let i = 0; i < BATCHES; i++) {
        const dev = await seedDeveloper(call);
        await seedProPlan(call, seeder.adminToken, dev);
        const app = await seedApp(call, dev, 'Bench Redeem App');
        await seedReadyBuild(call, dev, app.id, '1.0.0');
        const body = { channel: 'appsumo', quantity: CODES_PER_BATCH, license_type: 'perpetual' };
        const res = await call('POST', `/v1/apps/${app.id}/redemption-batches`, { apiKey: dev.apiKey, body });
        codes.push(...(expectStatus(res, 201, 'create batch').body.codes as string[]));
      }
      await seeder.stop();
      const latchkey = await ctx.startLatchkey({ LATCHKEY_RUN_JOBS: 'false' });
      services.push(latchkey);
      const baseline = await ctx.startBaseline('redemption');
      services.push(baseline);

      let next = 0;
      const request: RequestSpec = {
        method: 'POST',
        path: '/v1/public/redeem',
        // Past the pool a request redeems nothing and counts as failed: raise BATCHES if the table shows failures.
        bodyPerRequest: () => ({ code: codes[next++] ?? 'LK-22222222-2222' }),
      };
      await ctx.measureHotPath('redeem a new code', [latchkey, baseline], request, 'sale');
      process.stderr.write(`  redemption: ${next} codes used of ${codes.length}\n`);
    } finally {
      for (const service of services) await service.stop();
    }
  },
});
