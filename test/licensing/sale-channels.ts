import { expect } from 'vitest';
import { checkoutHelpers } from '../commerce/checkout.js';
import { brokerOf, merchant } from '../entitlements/support.js';
import { createBatch, redeem } from '../redemption/support.js';
import { newSessionId } from '../support/fake-stripe.js';
import { randomFingerprint } from '../support/fixtures.js';
import { startServerWithStripe } from '../support/stripe-server.js';
import type { Tenant } from './world.js';

type License = Record<string, unknown> & { license_id: string; license_key: string };

/**
 * Issue 22: every channel that creates licenses, on one server with a fake Stripe (closed after
 * the file's tests): each sale answers the license it minted, read back through the API.
 */
export async function startSaleChannels() {
  const { stripe, server, call } = await startServerWithStripe();
  const { deliver, seller, checkoutCompleted } = checkoutHelpers(call, stripe, server.adminToken);

  const licenseOf = async (t: Pick<Tenant, 'call' | 'dev'>, licenseId: string): Promise<License> => {
    const res = await t.call('GET', `/v1/licenses/${licenseId}`, { apiKey: t.dev.apiKey });
    expect(res.status).toBe(200);
    return res.body;
  };
  const licenseIdOfKey = async (appId: string, key: string) => (await server.database.db('licenses').where({ app_id: appId, license_key: key }).first('id')).id as string;
  const activate = (licenseKey: string) => call('POST', '/v1/licenses/activate', { body: { license_key: licenseKey, device_fingerprint: randomFingerprint(), build_id: null } });

  /** Provisions `t`'s app through the marketplace API, one new order. */
  const provision = (t: Tenant, licenseConfig?: Record<string, unknown>) =>
    t.call('POST', '/v1/marketplace/licenses', {
      apiKey: t.dev.apiKey,
      body: { app_id: t.app.id, channel: 'gumroad', marketplace_order_id: `order_${randomFingerprint().slice(0, 12)}`, license_config: licenseConfig },
    });

  return {
    server,
    call,
    licenseOf,
    licenseIdOfKey,
    activate,
    provision,

    /** A batch of one code with `batchBody`, redeemed: the batch and the license. */
    async redeemed(t: Tenant, batchBody: Record<string, unknown>) {
      const batch = await createBatch(t, { quantity: 1, ...batchBody });
      const res = await redeem(t, batch.codes[0]!);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return { batch, license: await licenseOf(t, await licenseIdOfKey(t.app.id, res.body.license_key)) };
    },

    /** A marketplace order of `t`'s app: the license it minted. */
    async marketplaceSale(t: Tenant, licenseConfig?: Record<string, unknown>) {
      const sold = await provision(t, licenseConfig);
      expect(sold.status, JSON.stringify(sold.body)).toBe(201);
      return licenseOf(t, sold.body.license_id);
    },

    /** A checkout of a new seller's app created with `appBody`: the license its fulfilment minted. */
    async checkoutSale(appBody: Record<string, unknown>) {
      const s = await seller(appBody);
      const sessionId = newSessionId();
      stripe.addSession(s.account, { id: sessionId, price_id: s.priceId, email: 'buyer@example.com' });
      expect((await deliver(checkoutCompleted(s.account, sessionId))).body.outcome).toBe('fulfilled');
      const id = (await server.database.db('licenses').where({ app_id: s.app.id }).first('id')).id as string;
      return licenseOf({ call, dev: s.dev }, id);
    },

    /**
     * Entitlement webhook grants of a new merchant's app created with `appBody`, without and with a
     * customer email (with one the license is inserted before the delivery email that names it;
     * without, with the event's record): the two licenses.
     */
    async webhookGrants(appBody: Record<string, unknown>) {
      const m = await merchant(server, appBody);
      const licenses: License[] = [];
      for (const fields of [{}, { customer_email: 'shop@example.com' }]) {
        const broker = brokerOf(m);
        const res = await broker.send(broker.event(fields));
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        const row = await server.database.db('store_licenses').where({ app_id: m.app.id, shop: broker.shop }).first('license_id');
        licenses.push(await licenseOf({ call: m.call, dev: m.dev }, row.license_id));
      }
      return licenses;
    },
  };
}
