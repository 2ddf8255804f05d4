import { randomBytes } from 'node:crypto';
import { createDb } from '../../../server/db/knex.js';
import { seedApp, seedDeveloper, seedProPlan } from '../../bench/seed.js';
import { client } from '../../support/http.js';
import { chaosClient, deliverThroughACrash, retryServerErrors } from '../client.js';
import type { ChaosDatabase, LatchkeyProcess } from '../environment.js';
import type { FigureSheet } from '../figures.js';
import { shuffle } from '../../support/random.js';

const SHOPS = 60;
const CONCURRENCY = 16;
const PRODUCT_KEY = 'chaos-product';
/** docs/contract.md: a broker retries 5xx and timeouts after about 2 seconds, 4xx never. */
const BROKER_RETRY_WAIT_MS = 2_000;

interface StoreEvent {
  event_id: string;
  shop: string;
  entitled: boolean;
  trial: boolean;
  occurred_at: string;
}

/**
 * Entitlement events of many shops, each shop's sequence (grants, trials, conversions, revokes)
 * shuffled with duplicates, delivered concurrently by brokers that retry as docs/contract.md says, the
 * server killed (SIGKILL) and restarted mid-run. Afterwards each shop is where its newest event
 * puts it (stale events are skipped, so an older grant never resurrects a revoked shop), no shop
 * is charged more than one fee, a shop whose newest event is a paid grant is charged exactly one,
 * and every acknowledged event is in the shop's history.
 */
export async function entitlementStorm(sheet: FigureSheet, db: ChaosDatabase, server: LatchkeyProcess, random: () => number): Promise<void> {
  const call = client(server.url);
  const dev = await seedDeveloper(call);
  await seedProPlan(call, server.adminToken, dev);
  const app = await seedApp(call, dev, 'Entitlement storm');
  const keyed = await call('PUT', `/v1/apps/${app.id}`, { apiKey: dev.apiKey, body: { product_key: PRODUCT_KEY } });
  if (keyed.status !== 200) throw new Error(`product key: ${keyed.status} ${JSON.stringify(keyed.body)}`);
  const enabled = await call('POST', `/v1/apps/${app.id}/entitlement-webhook`, { apiKey: dev.apiKey });
  if (enabled.status !== 201) throw new Error(`enable webhook: ${enabled.status} ${JSON.stringify(enabled.body)}`);
  const webhookPath = new URL(enabled.body.webhook_url).pathname;
  const secret: string = enabled.body.secret;

  const base = Date.now() - 3_600_000;
  const sequences = Array.from({ length: SHOPS }, (_, s) => {
    const shop = `chaos-${s}-${randomBytes(3).toString('hex')}.myshopify.com`;
    const length = 1 + Math.floor(random() * 5);
    return Array.from({ length }, (_, i): StoreEvent => ({
      event_id: `evt_${randomBytes(8).toString('hex')}`,
      shop,
      entitled: random() < 0.65,
      trial: random() < 0.25,
      occurred_at: new Date(base + i * 60_000).toISOString(),
    }));
  });
  const deliveries = sequences.flatMap((events) => events.flatMap((e) => Array.from({ length: 1 + Math.floor(random() * 2) }, () => ({ event: e, acknowledged: false }))));
  shuffle(deliveries, random);

  const http = chaosClient(sheet, server.url);
  const fault = 'server SIGKILL during the entitlement webhook storm, then restarted';
  await deliverThroughACrash(sheet, server, deliveries, { concurrency: CONCURRENCY, killAfter: Math.floor(deliveries.length / 2), fault }, async (delivery) => {
    const answer = await http.sendWithRetries(
      'POST /v1/entitlement-webhooks/{webhook_token}',
      'POST',
      webhookPath,
      { body: { app: PRODUCT_KEY, ...delivery.event }, headers: { 'x-merchantops-secret': secret } },
      retryServerErrors(30, BROKER_RETRY_WAIT_MS),
    );
    delivery.acknowledged = answer !== undefined && answer.status >= 200 && answer.status < 300 && answer.body?.ok === true;
    if (answer && !delivery.acknowledged) sheet.violated(1, `entitlement event answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
  });
  sheet.violated(deliveries.filter((d) => !d.acknowledged).length, 'entitlement events never acknowledged');

  const observer = createDb(db.url, { max: 2 });
  try {
    const stores: { shop: string; status: string | null; fees: number }[] = await observer('store_licenses')
      .leftJoin('licenses', 'licenses.id', 'store_licenses.license_id')
      .where('store_licenses.app_id', app.id)
      .select('store_licenses.shop', 'licenses.status', observer.raw('(SELECT count(*)::int FROM license_fees WHERE license_fees.license_id = store_licenses.license_id) AS fees'));
    const byShop = new Map(stores.map((s) => [s.shop, s]));
    let wrongState = 0;
    let wrongFees = 0;
    for (const events of sequences) {
      const newest = events[events.length - 1]!;
      const store = byShop.get(newest.shop);
      const active = store?.status === 'ACTIVE';
      if (newest.entitled !== active) wrongState++;
      if ((store?.fees ?? 0) > 1) wrongFees++;
      if (newest.entitled && !newest.trial && store?.fees !== 1) wrongFees++;
    }
    sheet.violated(wrongState, 'shops not in the state their newest event gives');
    sheet.violated(wrongFees, 'shops charged other than once for a paid grant (or more than once at all)');

    const acknowledged = [...new Set(deliveries.filter((d) => d.acknowledged).map((d) => d.event.event_id))];
    const recorded = new Set(
      (await observer('entitlement_events').where({ app_id: app.id }).whereIn('event_id', acknowledged).select('event_id')).map((r) => r.event_id as string),
    );
    sheet.lost(acknowledged.filter((id) => !recorded.has(id)).length, 'acknowledged entitlement events missing from the history');
    sheet.note(`entitlement storm: ${deliveries.length} deliveries of ${acknowledged.length} events for ${SHOPS} shops`);
  } finally {
    await observer.destroy();
  }
}
