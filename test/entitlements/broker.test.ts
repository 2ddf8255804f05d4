import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { createBroker } from '../../examples/entitlement-broker/broker.js';
import { decisionFromSubscription } from '../../examples/entitlement-broker/normalize.js';
import { closeNow, listenOnLoopback } from '../support/local-http.js';
import { startTestServer } from '../support/server.js';
import { merchant, newEventId, newShop, PRODUCT_KEY } from './support.js';

const server = await startTestServer();
afterAll(() => server.close());
const m = await merchant(server);
const RETRY_WAIT_MS = 50;

/** A local stand-in for the webhook answering from a script of statuses ('hang': no answer), recording what it got. */
async function stub(script: (number | 'hang')[]) {
  const received: { secret: string | undefined; at: number; body: unknown }[] = [];
  const srv = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ secret: req.headers['x-merchantops-secret'] as string | undefined, at: Date.now(), body: JSON.parse(Buffer.concat(chunks).toString() || 'null') });
      const step = script[Math.min(received.length - 1, script.length - 1)]!;
      if (step === 'hang') return;
      res.writeHead(step, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: step < 300 }));
    });
  });
  const url = await listenOnLoopback(srv);
  return { url: `${url}/v1/entitlement-webhooks/stub`, received, close: () => closeNow(srv) };
}

const decision = (shop = newShop()) => ({ app: PRODUCT_KEY, shop, entitled: true, event_id: newEventId(), occurred_at: new Date().toISOString() });

describe('the example broker against the real server', () => {
  const broker = createBroker({ webhookUrl: m.webhookUrl, secret: m.secret, retryWaitMs: RETRY_WAIT_MS });

  it('forwards decisions and the companion requests', async () => {
    const shop = newShop();
    const grant = await broker.forward(decision(shop));
    expect(grant).toMatchObject({ delivered: true, status: 200, attempts: 1, body: { action: 'granted' } });
    expect((await broker.entitlement(shop, PRODUCT_KEY)).body).toMatchObject({ entitled: true });
    expect((await broker.deliveryEmail(shop, 'owner@shop.example')).body).toMatchObject({ email_sent: true });
    expect((await broker.resetDevices({ shop, app: PRODUCT_KEY })).body).toMatchObject({ resets_remaining: 2 });
    expect((await broker.redact({ shop, app: PRODUCT_KEY })).status).toBe(409);
    expect((await broker.trial({ shop: newShop(), event_id: newEventId(), occurred_at: new Date().toISOString() })).body).toMatchObject({ action: 'granted' });
  });

  it('normalizes a platform subscription notification', async () => {
    const shop = newShop();
    const notification = {
      app_subscription: { admin_graphql_api_id: 'gid://shopify/AppSubscription/9', name: 'Pro', status: 'ACTIVE', trial_days: 7, created_at: new Date().toISOString() },
    };
    const d = decisionFromSubscription(notification, { productKey: PRODUCT_KEY, shop, webhookId: newEventId(), triggeredAt: new Date().toISOString() });
    expect(d).toMatchObject({ entitled: true, trial: true, test: false, subscription_gid: 'gid://shopify/AppSubscription/9' });
    expect((await broker.forward(d)).body).toMatchObject({ action: 'granted' });
    const cancelled = { app_subscription: { ...notification.app_subscription, status: 'CANCELLED' } };
    const later = new Date(Date.now() + 1000).toISOString();
    const end = await broker.forward(decisionFromSubscription(cancelled, { productKey: PRODUCT_KEY, shop, webhookId: newEventId(), triggeredAt: later }));
    expect(end.body).toMatchObject({ action: 'revoked', note: 'trial_ended' });
  });

  it('never retries a permanent 4xx', async () => {
    const wrongSecret = createBroker({ webhookUrl: m.webhookUrl, secret: 'whsec_wrong', retryWaitMs: RETRY_WAIT_MS });
    expect(await wrongSecret.forward(decision())).toMatchObject({ delivered: false, status: 401, attempts: 1, failure: 'permanent' });
    expect(await broker.forward({ ...decision(), entitled: 'yes' as unknown as boolean })).toMatchObject({ status: 400, attempts: 1, failure: 'permanent' });
  });
});

describe('the example broker against a local stub', () => {
  it('retries a 503 after the wait, with the same event and secret, then stops at the 200', async () => {
    const s = await stub([503, 200]);
    try {
      const d = decision();
      const res = await createBroker({ webhookUrl: s.url, secret: 'whsec_stub', retryWaitMs: RETRY_WAIT_MS }).forward(d);
      expect(res).toMatchObject({ delivered: true, status: 200, attempts: 2 });
      expect(s.received.map((r) => r.body)).toEqual([d, d]);
      expect(s.received.every((r) => r.secret === 'whsec_stub')).toBe(true);
      expect(s.received[1]!.at - s.received[0]!.at).toBeGreaterThanOrEqual(RETRY_WAIT_MS - 5);
    } finally {
      await s.close();
    }
  });

  it('retries a timeout, and gives up after the bounded attempts', async () => {
    const hang = await stub(['hang', 200]);
    const down = await stub([503]);
    try {
      // Long enough for the second attempt's whole round trip on a loaded machine; the first never answers.
      expect(await createBroker({ webhookUrl: hang.url, secret: 's', retryWaitMs: RETRY_WAIT_MS, timeoutMs: 1000 }).forward(decision())).toMatchObject({
        delivered: true,
        attempts: 2,
      });
      expect(await createBroker({ webhookUrl: down.url, secret: 's', retryWaitMs: RETRY_WAIT_MS, maxAttempts: 3 }).forward(decision())).toMatchObject({
        delivered: false,
        status: 503,
        attempts: 3,
        failure: 'exhausted',
      });
      expect(down.received).toHaveLength(3);
    } finally {
      await hang.close();
      await down.close();
    }
  });

  it.each([400, 401, 404, 409])('does not retry a %i', async (status) => {
    const s = await stub([status, 200]);
    try {
      expect(await createBroker({ webhookUrl: s.url, secret: 's', retryWaitMs: RETRY_WAIT_MS }).forward(decision())).toMatchObject({ delivered: false, status, attempts: 1 });
      expect(s.received).toHaveLength(1);
    } finally {
      await s.close();
    }
  });

  it('waits about 2 seconds by default', async () => {
    const s = await stub([503, 200]);
    try {
      const res = await createBroker({ webhookUrl: s.url, secret: 's' }).forward(decision());
      expect(res.attempts).toBe(2);
      const waited = s.received[1]!.at - s.received[0]!.at;
      expect(waited).toBeGreaterThanOrEqual(1900);
    } finally {
      await s.close();
    }
  });
});
