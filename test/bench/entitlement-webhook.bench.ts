import { randomBytes } from 'node:crypto';
import { defineBench, expectStatus, type RequestSpec, type Service } from './lib.js';
import { seedDeveloper, seedProPlan, seedReadyBuild } from './seed.js';

const PRODUCT_KEY = 'bench-notes';

/**
 * Issue 9: entitlement webhook events end to end: the URL token and secret check, validation, and
 * in one transaction the shop's row lock, deduplication, ordering, the license with its fee and
 * report job, the delivery page's offered builds and the event record. The baseline finds the
 * webhook, compares the secret and runs one upsert statement (shop row, event, license, fee, job).
 * Two cases: every event for a new shop (grants), and every event for one hot shop (serialised on
 * its row; after the first, noops).
 *
 * What the comparison is, so its figures are read honestly:
 * - Same database work per event on both sides: the shop row upserted, the event recorded once per
 *   event id and, for a new shop, the license minted with its fee and the fee's report job.
 * - The baseline does less for it, by design ("a bare handler doing the same upsert"): no
 *   validation, no ordering or duplicate answers, no delivery page, and no lock held across
 *   statements (its one autocommit statement cannot read, decide and write). Latchkey holds the
 *   shop's row lock from its first statement to the commit: 4 round trips for a new shop (BEGIN,
 *   lock + reads, writes, COMMIT), 5 for an existing one (a read after the lock), against 2.
 * - The baseline looks the webhook up on every request; Latchkey remembers verified webhooks per
 *   process and confirms them in the event's first statement, so its credential check costs no
 *   round trip of its own.
 * - Latchkey's job runner reports the grants' fees during the run, in batches (a fee's job is due a
 *   second after the sale; the first to run reports the developer's pending fees: claim, read,
 *   settle with the batch's other jobs removed, delete), database work in the same process and
 *   database; the baseline only queues the job, never due, and never runs it. That work is counted
 *   against Latchkey, as it would be in production.
 */
export default defineBench({
  title: 'Entitlement webhook events, against node:http doing the token and secret check and the same upsert with pg',
  async run(ctx) {
    const services: Service[] = [];
    try {
      // A store selling at this rate mints more licenses in a minute than the default quota allows a
      // seller in an hour; its operator raises the quota (LATCHKEY_QUOTA_*), whose count the database
      // still keeps on every insert, for both sides.
      const latchkey = await ctx.startLatchkey({ LATCHKEY_QUOTA_LICENSES_PER_HOUR: '1000000' });
      services.push(latchkey);
      const { call } = latchkey;
      /**
       * A seller with its store app, a READY build and the webhook: its URL path and secret header.
       * Each case has its own: the licenses a seller may mint an hour (a tenant quota the database
       * counts for both sides) go to the distinct shops' grants, and the hot shop needs one more.
       */
      const seedStore = async () => {
        const dev = await seedDeveloper(call);
        await seedProPlan(call, latchkey.adminToken, dev);
        const appBody = { name: 'Bench Store App', platforms: ['linux-x64', 'win-x64'], product_key: PRODUCT_KEY };
        const app = expectStatus(await call('POST', '/v1/apps', { apiKey: dev.apiKey, body: appBody }), 201, 'create app').body as { id: string };
        await seedReadyBuild(call, dev, app.id, '1.0.0');
        const hook = expectStatus(await call('POST', `/v1/apps/${app.id}/entitlement-webhook`, { apiKey: dev.apiKey }), 201, 'enable webhook').body as {
          webhook_url: string;
          secret: string;
        };
        return { path: new URL(hook.webhook_url).pathname, headers: { 'x-merchantops-secret': hook.secret } };
      };
      const [distinctStore, hotStore] = [await seedStore(), await seedStore()];
      const baseline = await ctx.startBaseline('entitlement-webhook');
      services.push(baseline);

      let clock = Date.parse('2026-01-01T00:00:00Z');
      const event = (shop: string) => ({
        app: PRODUCT_KEY,
        shop,
        entitled: true,
        event_id: `evt_${randomBytes(10).toString('hex')}`,
        occurred_at: new Date((clock += 1)).toISOString(),
        topic: 'app_subscriptions/update',
        subscription_gid: 'gid://shopify/AppSubscription/1',
      });

      const distinct: RequestSpec = { method: 'POST', ...distinctStore, bodyPerRequest: () => event(`shop-${randomBytes(6).toString('hex')}.myshopify.com`) };
      await ctx.measureHotPath('event for a new shop (granted)', [latchkey, baseline], distinct, 'sale');

      const hotShop = `hot-${randomBytes(4).toString('hex')}.myshopify.com`;
      const hot: RequestSpec = { method: 'POST', ...hotStore, bodyPerRequest: () => event(hotShop) };
      const [oursHot, baseHot] = await ctx.measure('event for one hot shop (noop)', [latchkey, baseline], hot);
      const ratio = oursHot!.requestsPerSecond / baseHot!.requestsPerSecond;
      ctx.expect({ name: 'webhook throughput vs baseline, one hot shop', wanted: 'reported (no goal)', measured: ratio.toFixed(2), met: true });
    } finally {
      for (const service of services) await service.stop();
    }
  },
});
