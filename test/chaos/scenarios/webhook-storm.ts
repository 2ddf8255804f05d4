import { randomBytes } from 'node:crypto';
import { createDb } from '../../../server/db/knex.js';
import { sessionHash } from '../../../server/payments/fulfilment.js';
import { seedApp, seedDeveloper, seedProPlan } from '../../bench/seed.js';
import { newEventId, newSessionId, signedEvent, type FakeStripe } from '../../support/fake-stripe.js';
import { client } from '../../support/http.js';
import { chaosClient, deliverThroughACrash, retryServerErrors } from '../client.js';
import type { ChaosDatabase, LatchkeyProcess } from '../environment.js';
import type { FigureSheet } from '../figures.js';
import { shuffle } from '../../support/random.js';
import { connectAccount } from '../../support/connect-account.js';

const SELLERS = 4;
const SESSIONS = 160;
const SUBSCRIBERS = 20;
const CONCURRENCY = 16;
const PAYMENTS = 'POST /v1/webhooks/payments';

interface Delivery {
  name: string;
  payload: string;
  header: string;
  acknowledged: boolean;
  eventId: string;
}

/**
 * Payment notifications with duplicates and in shuffled order, the server killed (SIGKILL) and
 * restarted mid-run, each delivery retried like the processor does (5xx and network failures;
 * a 4xx never). Afterwards every paid session has exactly one license and every license one fee,
 * every subscriber's plan is what the ordered sequence gives, and every acknowledged event is recorded.
 */
export async function paymentWebhookStorm(sheet: FigureSheet, db: ChaosDatabase, server: LatchkeyProcess, stripe: FakeStripe, random: () => number): Promise<void> {
  const call = client(server.url);
  const sellers: { account: string; priceId: string; app: { id: string } }[] = [];
  for (let i = 0; i < SELLERS; i++) {
    const dev = await seedDeveloper(call);
    await seedProPlan(call, server.adminToken, dev);
    // Connect OAuth, as a signed-in person approving on Stripe: connecting takes a session, not an API key.
    const account = await connectAccount(server.url, stripe, dev.accessToken);
    const priceId = `price_${randomBytes(8).toString('hex')}`;
    stripe.addPrice(account, { id: priceId });
    const app = await seedApp(call, dev, `Webhook storm ${i}`);
    const saved = await call('PUT', `/v1/apps/${app.id}`, { apiKey: dev.apiKey, body: { price_id: priceId } });
    if (saved.status !== 200) throw new Error(`save price: ${saved.status} ${JSON.stringify(saved.body)}`);
    sellers.push({ account, priceId, app });
  }

  const deliveries: Delivery[] = [];
  const deliver = (name: string, event: Record<string, unknown>, copies: number) => {
    const signed = signedEvent(event);
    for (let c = 0; c < copies; c++) deliveries.push({ name, ...signed, acknowledged: false, eventId: event.id as string });
  };

  // Paid sessions: each notified once or more, some also by a second event type for the same session.
  const sessions = Array.from({ length: SESSIONS }, (_, i) => {
    const seller = sellers[i % SELLERS]!;
    const id = newSessionId();
    stripe.addSession(seller.account, { id, price_id: seller.priceId, email: `buyer${i}@example.com` });
    const completed = { id: newEventId(), type: 'checkout.session.completed', account: seller.account, data: { object: { id, object: 'checkout.session' } } };
    deliver('checkout.session.completed', completed, 1 + Math.floor(random() * 3));
    if (random() < 0.3) {
      deliver('checkout.session.async_payment_succeeded', { ...completed, id: newEventId(), type: 'checkout.session.async_payment_succeeded' }, 1);
    }
    return { id, appId: seller.app.id };
  });

  // Developer subscriptions: paid, failed, paid again; whatever the order, the newest wins.
  const subscribers: { id: string }[] = [];
  const base = Math.floor(Date.now() / 1000) - 3600;
  for (let i = 0; i < SUBSCRIBERS; i++) {
    const dev = await seedDeveloper(call);
    const customer = `cus_${randomBytes(8).toString('hex')}`;
    const invoice = (type: string, created: number, metadata: Record<string, string>) => ({
      id: newEventId(),
      type,
      created,
      data: { object: { object: 'invoice', customer, metadata } },
    });
    // The first invoice links the customer to the developer; in a shuffle it may come last.
    deliver('invoice.paid', invoice('invoice.paid', base + 10, { developer_id: dev.id }), 1 + Math.floor(random() * 2));
    deliver('invoice.payment_failed', invoice('invoice.payment_failed', base + 20, {}), 1);
    deliver('invoice.paid', invoice('invoice.paid', base + 30, { developer_id: dev.id }), 1 + Math.floor(random() * 2));
    subscribers.push(dev);
  }
  shuffle(deliveries, random);

  const http = chaosClient(sheet, server.url);
  const fault = 'server SIGKILL during the payment webhook storm, then restarted';
  await deliverThroughACrash(sheet, server, deliveries, { concurrency: CONCURRENCY, killAfter: Math.floor(deliveries.length / 2), fault }, async (delivery) => {
    const answer = await http.sendWithRetries(
      PAYMENTS,
      'POST',
      '/v1/webhooks/payments',
      { raw: { data: delivery.payload, contentType: 'application/json' }, headers: { 'stripe-signature': delivery.header } },
      retryServerErrors(60, 250),
    );
    delivery.acknowledged = answer !== undefined && answer.status >= 200 && answer.status < 300;
    if (answer && !delivery.acknowledged) sheet.violated(1, `${delivery.name} answered ${answer.status} ${answer.body?.error_code ?? ''}`);
  });
  sheet.violated(deliveries.filter((d) => !d.acknowledged).length, 'payment notifications never acknowledged');

  const observer = createDb(db.url, { max: 2 });
  try {
    const perSession: { payment_session_hash: string; licenses: number }[] = await observer('licenses')
      .whereIn(
        'payment_session_hash',
        sessions.map((s) => sessionHash(s.id)),
      )
      .groupBy('payment_session_hash')
      .select('payment_session_hash', observer.raw('count(*)::int AS licenses'));
    const bySession = new Map(perSession.map((r) => [r.payment_session_hash, r.licenses]));
    sheet.violated(sessions.filter((s) => (bySession.get(sessionHash(s.id)) ?? 0) !== 1).length, 'paid sessions without exactly one license');
    const fees: { licenses: number; fees: number }[] = await observer('licenses')
      .leftJoin('license_fees', 'license_fees.license_id', 'licenses.id')
      .whereIn(
        'licenses.app_id',
        sellers.map((s) => s.app.id),
      )
      .select(observer.raw('count(DISTINCT licenses.id)::int AS licenses'), observer.raw('count(license_fees.license_id)::int AS fees'));
    if (fees[0]!.licenses !== fees[0]!.fees) sheet.violated(Math.abs(fees[0]!.licenses - fees[0]!.fees), 'licenses not charged exactly one fee');

    const plans: { id: string; plan: string; plan_grace_until: Date | null }[] = await observer('developers')
      .whereIn(
        'id',
        subscribers.map((d) => d.id),
      )
      .select('id', 'plan', 'plan_grace_until');
    sheet.violated(plans.filter((p) => p.plan !== 'pro' || p.plan_grace_until !== null).length, "subscribers not in the ordered sequence's state (Pro, no grace period)");

    const acknowledged = [...new Set(deliveries.filter((d) => d.acknowledged).map((d) => d.eventId))];
    const settled = new Set((await observer('payment_events').whereIn('id', acknowledged).whereNot({ outcome: 'processing' }).select('id')).map((r) => r.id as string));
    sheet.lost(acknowledged.filter((id) => !settled.has(id)).length, 'acknowledged payment events not recorded as processed');
    sheet.note(`payment webhook storm: ${deliveries.length} deliveries of ${acknowledged.length} events, ${SESSIONS} sessions, ${SUBSCRIBERS} subscribers`);
  } finally {
    await observer.destroy();
  }
}
