import { createHmac, randomBytes } from 'node:crypto';
import { FAKE_STRIPE_SECRET_KEY, FAKE_STRIPE_WEBHOOK_SECRET, newEventId, newSessionId, startFakeStripe, type FakeStripe } from '../support/fake-stripe.js';
import { defineBench, expectStatus, type LatchkeyService, type RequestSpec, type Service } from './lib.js';
import { seedDeveloper, seedMany, seedProPlan, seedReadyBuild, serverQuotas } from './seed.js';
import { connectAccount } from '../support/connect-account.js';

/**
 * Every sale mints a license and queues a delivery email for its seller, and a tenant may mint and
 * queue only so many an hour: each seller makes at most this many sales, then the next one sells.
 */
const quotas = serverQuotas();
const SALES_PER_SELLER = Math.min(quotas.emailsPerHour, quotas.licensesPerHour);
/** Sellers made before the load; past them, sales fail on the last one's quota: raise it if the table shows failures. */
const SELLERS = 24;

/** Stripe's signature scheme (`t=<unix time>,v1=<HMAC-SHA256 of "t.body">`), computed per request over the exact body sent. */
function stripeSignature(body: string): string {
  const t = Math.floor(Date.now() / 1000);
  return `t=${t},v1=${createHmac('sha256', FAKE_STRIPE_WEBHOOK_SECRET).update(`${t}.${body}`).digest('hex')}`;
}

/** A Pro developer with a connected account and an app selling one Price, with a READY build. */
async function seedSeller(latchkey: LatchkeyService, stripe: FakeStripe): Promise<{ account: string; priceId: string }> {
  const { call } = latchkey;
  const dev = await seedDeveloper(call);
  await seedProPlan(call, latchkey.adminToken, dev);
  // Connect OAuth through the fake's authorize step: connecting takes a signed-in session, not an API key.
  const account = await connectAccount(latchkey.url, stripe, dev.accessToken);
  const priceId = `price_bench${randomBytes(6).toString('hex')}`;
  stripe.addPrice(account, { id: priceId });
  const appBody = { name: 'Bench Store App', platforms: ['linux-x64'], price_id: priceId };
  const app = expectStatus(await call('POST', '/v1/apps', { apiKey: dev.apiKey, body: appBody }), 201, 'create app').body as { id: string };
  await seedReadyBuild(call, dev, app.id, '1.0.0');
  return { account, priceId };
}

/**
 * Issue 7: `checkout.session.completed` notifications, each for a new session, end to end: the
 * signature check, the session read back from Stripe (a fake in this process, which both services
 * call), and in one transaction the license, its fee row and report job, and the delivery email
 * (the app has a READY build). The baseline does the same check, read and inserts. Latchkey's job
 * runner stays on (builds become READY through it), so its process also writes the queued emails
 * and settles the fee reports during the run: work the baseline leaves undone, charged to Latchkey.
 * The sales go to one seller at a time, SALES_PER_SELLER each, so every tenant stays within its
 * quotas, as with a single seller before the quotas.
 */
export default defineBench({
  title: 'Checkout fulfilment notifications, against node:http doing the same signature check, session read and inserts with pg',
  async run(ctx) {
    const stripe = await startFakeStripe();
    const services: Service[] = [];
    try {
      const latchkey = await ctx.startLatchkey(stripe.env);
      services.push(latchkey);
      const sellers = await seedMany(SELLERS, () => seedSeller(latchkey, stripe), 4);
      const baseline = await ctx.startBaseline('fulfilment', {
        STRIPE_API_BASE: stripe.url,
        STRIPE_SECRET_KEY: FAKE_STRIPE_SECRET_KEY,
        STRIPE_WEBHOOK_SECRET: FAKE_STRIPE_WEBHOOK_SECRET,
      });
      services.push(baseline);

      let sales = 0;
      const request: RequestSpec = {
        method: 'POST',
        path: '/v1/webhooks/payments',
        bodyPerRequest: () => {
          const { account, priceId } = sellers[Math.min(Math.floor(sales++ / SALES_PER_SELLER), SELLERS - 1)]!;
          const sessionId = newSessionId();
          stripe.addSession(account, { id: sessionId, price_id: priceId, email: `buyer-${randomBytes(4).toString('hex')}@example.com` });
          return {
            id: newEventId(),
            object: 'event',
            type: 'checkout.session.completed',
            account,
            livemode: true,
            created: Math.floor(Date.now() / 1000),
            data: { object: { id: sessionId, object: 'checkout.session' } },
          };
        },
        headersPerRequest: (body) => ({ 'stripe-signature': stripeSignature(body) }),
      };
      await ctx.measureHotPath('checkout.session.completed (new session)', [latchkey, baseline], request, 'sale');
      process.stderr.write(`  fulfilment: ${sales} sales by ${Math.min(Math.ceil(sales / SALES_PER_SELLER), SELLERS)} of ${SELLERS} sellers, at most ${SALES_PER_SELLER} each\n`);
    } finally {
      // The services first: requests still in flight when the load stops must not find the fake gone.
      for (const service of services) await service.stop();
      await stripe.close();
    }
  },
});
