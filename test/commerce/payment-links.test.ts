import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { newSessionId } from '../support/fake-stripe.js';
import { createApp, registerDeveloper, setPlan } from '../support/fixtures.js';
import { checkoutHelpers } from './checkout.js';
import { startServerWithStripe } from '../support/stripe-server.js';
import { connectAccount } from '../support/connect-account.js';

const { stripe, server, call } = await startServerWithStripe({ PUBLIC_BASE_URL: 'https://licenses.example.com' });
const db = server.database.db;
const { deliver, seller, checkoutCompleted } = checkoutHelpers(call, stripe, server.adminToken);

/** A seller (Pro) whose Price, when `type` is given, is of that kind (and currency). */
async function proSeller(price: { type?: 'one_time' | 'recurring'; currency?: string } = {}) {
  const s = await seller();
  if (price.type) stripe.addPrice(s.account, { id: s.priceId, ...price });
  return s;
}

const generate = (s: Awaited<ReturnType<typeof seller>>) => call('POST', `/v1/apps/${s.app.id}/payment-link`, { token: s.dev.accessToken });

/** A paid session through `linkId` (in `currency`, default USD), as Stripe reports it, delivered; answers the webhook outcome. */
async function saleThrough(s: Awaited<ReturnType<typeof seller>>, linkId: string, currency?: string) {
  const sessionId = newSessionId();
  stripe.addSession(s.account, {
    id: sessionId,
    price_id: s.priceId,
    metadata: { service_app_id: s.app.id },
    payment_link: { id: linkId, application_fee_percent: null },
    ...(currency ? { currency } : {}),
  });
  const res = await deliver(checkoutCompleted(s.account, sessionId));
  expect(res.status).toBe(200);
  return res.body.outcome as string;
}

describe('Route A: the app payment link', () => {
  it('creates a link on the connected account with the Price, the fee and the literal-brace download redirect', async () => {
    const s = await proSeller();
    const res = await generate(s);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ id: expect.stringMatching(/^plink_/), url: expect.stringMatching(/^https:/), created_at: expect.any(String), delivering: true });
    const link = stripe.paymentLinks.get(res.body.id)!;
    expect(link.account).toBe(s.account);
    expect(link.params).toMatchObject({
      'line_items[0][price]': s.priceId,
      'line_items[0][quantity]': '1',
      application_fee_amount: '400',
      'metadata[service_app_id]': s.app.id,
      'after_completion[type]': 'redirect',
      'after_completion[redirect][url]': `https://licenses.example.com/download?session_id={CHECKOUT_SESSION_ID}&app_id=${s.app.id}`,
    });
    expect((await call('GET', `/v1/apps/${s.app.id}/payment-link`, { token: s.dev.accessToken })).body).toEqual(res.body);
  });

  it('sets no application fee on a subscription Price: that fee is reported once per license instead', async () => {
    const s = await proSeller({ type: 'recurring' });
    const res = await generate(s);
    expect(res.status).toBe(201);
    expect(stripe.paymentLinks.get(res.body.id)!.params.application_fee_amount).toBeUndefined();
  });

  it('sets no application fee on a one-time Price in another currency (Stripe would read 400 as yen), and reports the fee as usage', async () => {
    const s = await proSeller({ type: 'one_time', currency: 'jpy' });
    const res = await generate(s);
    expect(res.status).toBe(201);
    expect(stripe.paymentLinks.get(res.body.id)!.params.application_fee_amount).toBeUndefined();
    expect(await saleThrough(s, res.body.id)).toBe('fulfilled');
    const license = await db('licenses').where({ app_id: s.app.id }).first('id');
    expect(await db('license_fees').where({ license_id: license.id }).first()).toMatchObject({ collected_by: 'usage_report' });
  });

  it('counts a sale through a link carrying the 400 fee in another currency (made before that was refused) as not fee-collected', async () => {
    const s = await proSeller();
    const link = (await generate(s)).body;
    expect(stripe.paymentLinks.get(link.id)!.params.application_fee_amount).toBe('400');
    // The price was in yen when the link was made: Stripe took 400 yen.
    expect(await saleThrough(s, link.id, 'jpy')).toBe('fulfilled');
    const license = await db('licenses').where({ app_id: s.app.id }).first('id');
    expect(await db('license_fees').where({ license_id: license.id }).first()).toMatchObject({ collected_by: 'usage_report' });
  });

  it('regenerating deactivates the old link at Stripe, and its sales no longer mint', async () => {
    const s = await proSeller();
    const first = (await generate(s)).body;
    expect(await saleThrough(s, first.id)).toBe('fulfilled');
    const second = (await generate(s)).body;
    expect(second.id).not.toBe(first.id);
    expect(stripe.paymentLinks.get(first.id)!.active).toBe(false);
    expect(stripe.paymentLinks.get(second.id)!.active).toBe(true);

    expect(await saleThrough(s, first.id)).toBe('payment_link_inactive');
    expect(await saleThrough(s, second.id)).toBe('fulfilled');
    expect(await db('licenses').where({ app_id: s.app.id }).select('id')).toHaveLength(2);
  });

  it('DELETE pauses sales: the link is deactivated, GET answers 404 and a late sale mints nothing', async () => {
    const s = await proSeller();
    const link = (await generate(s)).body;
    expect((await call('DELETE', `/v1/apps/${s.app.id}/payment-link`, { token: s.dev.accessToken })).status).toBe(204);
    expect(stripe.paymentLinks.get(link.id)!.active).toBe(false);
    expectError(await call('GET', `/v1/apps/${s.app.id}/payment-link`, { token: s.dev.accessToken }), 404, 'PAYMENT_LINK_NOT_FOUND');
    expectError(await call('DELETE', `/v1/apps/${s.app.id}/payment-link`, { token: s.dev.accessToken }), 404, 'PAYMENT_LINK_NOT_FOUND');
    expect(await saleThrough(s, link.id)).toBe('payment_link_inactive');
    expect(await db('licenses').where({ app_id: s.app.id })).toEqual([]);
  });

  it('after disconnecting and reconnecting, the old link delivers nothing until regenerated', async () => {
    const s = await proSeller();
    const old = (await generate(s)).body;
    expect((await call('DELETE', '/v1/payments/account', { token: s.dev.accessToken })).status).toBe(200);
    expect(await saleThrough(s, old.id)).toBe('account_not_connected');
    await connectAccount(call.baseUrl, stripe, s.dev.accessToken, s.account);
    expect((await call('GET', `/v1/apps/${s.app.id}/payment-link`, { token: s.dev.accessToken })).body.delivering).toBe(false);
    expect(await saleThrough(s, old.id)).toBe('payment_link_inactive');

    const fresh = (await generate(s)).body;
    expect(fresh.delivering).toBe(true);
    expect(await saleThrough(s, fresh.id)).toBe('fulfilled');
  });

  it('deleting the app deactivates its link at Stripe; a late sale through it mints nothing, even for a new app on the same Price', async () => {
    const s = await proSeller();
    const link = (await generate(s)).body;
    expect((await call('DELETE', `/v1/apps/${s.app.id}`, { token: s.dev.accessToken })).status).toBe(204);
    expect(stripe.paymentLinks.get(link.id)!.active).toBe(false);
    // A buyer who opened the link before it went: the Price now backs another app, and the link is no longer stored.
    const again = { ...s, app: await createApp(call, s.dev, { price_id: s.priceId }) };
    expect(await saleThrough(again, link.id)).toBe('payment_link_inactive');
    expect(await db('licenses').where({ app_id: again.app.id })).toEqual([]);
  });

  it('deleting an app keeps it when Stripe cannot deactivate its link: 503, to be tried again', async () => {
    const s = await proSeller();
    const link = (await generate(s)).body;
    stripe.state.outage = true;
    try {
      expectError(await call('DELETE', `/v1/apps/${s.app.id}`, { token: s.dev.accessToken }), 503, 'PAYMENT_PROCESSOR_UNAVAILABLE');
    } finally {
      stripe.state.outage = false;
    }
    expect(await db('apps').where({ id: s.app.id }).first('id')).toEqual({ id: s.app.id });
    expect(stripe.paymentLinks.get(link.id)!.active).toBe(true);
    expect((await call('DELETE', `/v1/apps/${s.app.id}`, { token: s.dev.accessToken })).status).toBe(204);
  });

  it('deleting an app whose account no longer grants access (disconnected here, or revoked at Stripe) deletes it: its link is out of reach', async () => {
    const disconnected = await proSeller();
    const first = (await generate(disconnected)).body;
    expect((await call('DELETE', '/v1/payments/account', { token: disconnected.dev.accessToken })).status).toBe(200);
    expect((await call('DELETE', `/v1/apps/${disconnected.app.id}`, { token: disconnected.dev.accessToken })).status).toBe(204);
    expect(stripe.paymentLinks.get(first.id)!.active).toBe(true);

    const revoked = await proSeller();
    await generate(revoked);
    stripe.revokeAccess(revoked.account);
    expect((await call('DELETE', `/v1/apps/${revoked.app.id}`, { token: revoked.dev.accessToken })).status).toBe(204);
    expect(await db('apps').whereIn('id', [disconnected.app.id, revoked.app.id])).toEqual([]);
  });

  it('deleting the app while a link is being made leaves no link selling: the deletion holds the app until it is gone', async () => {
    for (let round = 0; round < 5; round++) {
      const s = await proSeller();
      await generate(s);
      const [deleted, made] = await Promise.all([call('DELETE', `/v1/apps/${s.app.id}`, { token: s.dev.accessToken }), generate(s)]);
      expect(deleted.status).toBe(204);
      expect([201, 404]).toContain(made.status);
      const links = [...stripe.paymentLinks.values()].filter((l) => l.params['metadata[service_app_id]'] === s.app.id);
      expect(links.filter((l) => l.active)).toEqual([]);
    }
  });

  it('after switching to another Stripe account, the link made on the first is retired as out of reach: regenerating and pausing work', async () => {
    const s = await proSeller();
    const old = (await generate(s)).body;
    expect((await call('DELETE', '/v1/payments/account', { token: s.dev.accessToken })).status).toBe(200);
    const other = await connectAccount(call.baseUrl, stripe, s.dev.accessToken);
    stripe.addPrice(other, { id: s.priceId });
    const fresh = await generate(s);
    expect(fresh.status, JSON.stringify(fresh.body)).toBe(201);
    expect(stripe.paymentLinks.get(fresh.body.id)!.account).toBe(other);
    expect(await saleThrough(s, old.id)).toBe('account_not_connected');
    expect((await call('DELETE', `/v1/apps/${s.app.id}/payment-link`, { token: s.dev.accessToken })).status).toBe(204);
    expect(stripe.paymentLinks.get(fresh.body.id)!.active).toBe(false);
  });

  it('a link the developer built (Route C) still sells', async () => {
    const s = await proSeller();
    await generate(s);
    expect(await saleThrough(s, `plink_own${randomBytes(6).toString('hex')}`)).toBe('fulfilled');
  });
});

describe('Route A preconditions', () => {
  it('needs Pro, then a connected account, then a saved Price ID', async () => {
    const dev = await registerDeveloper(call);
    const app = await createApp(call, dev);
    const post = () => call('POST', `/v1/apps/${app.id}/payment-link`, { token: dev.accessToken });
    expectError(await post(), 403, 'PLAN_REQUIRED');
    await setPlan(call, server.adminToken, dev.id, 'pro');
    expectError(await post(), 409, 'PAYMENT_ACCOUNT_NOT_CONNECTED');
    await connectAccount(call.baseUrl, stripe, dev.accessToken);
    expectError(await post(), 409, 'PRICE_ID_NOT_SET');
  });

  it("answers 404 for another developer's app and for a missing one", async () => {
    const s = await proSeller();
    const other = await registerDeveloper(call);
    expectError(await call('POST', `/v1/apps/${s.app.id}/payment-link`, { token: other.accessToken }), 404, 'APP_NOT_FOUND');
    expectError(await call('GET', `/v1/apps/${s.app.id}/payment-link`, { token: other.accessToken }), 404, 'APP_NOT_FOUND');
    expectError(await call('POST', '/v1/apps/app_missing/payment-link', { token: s.dev.accessToken }), 404, 'APP_NOT_FOUND');
  });

  it('answers 503 when Stripe is down, and keeps the current link', async () => {
    const s = await proSeller();
    const link = (await generate(s)).body;
    stripe.state.outage = true;
    try {
      expectError(await generate(s), 503, 'PAYMENT_PROCESSOR_UNAVAILABLE');
    } finally {
      stripe.state.outage = false;
    }
    expect((await call('GET', `/v1/apps/${s.app.id}/payment-link`, { token: s.dev.accessToken })).body.id).toBe(link.id);
  });
});
