import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { connectAccount } from '../support/connect-account.js';
import { createApp, registerDeveloper, type TestDeveloper } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { startTestServer } from '../support/server.js';
import { startServerWithStripe } from '../support/stripe-server.js';

const { stripe, server, call } = await startServerWithStripe();
const newPriceId = () => `price_${randomBytes(8).toString('hex')}`;

/** A developer whose Stripe account is connected by Connect OAuth (payments-connect.test.ts tests that flow). */
async function connectedDeveloper(): Promise<{ dev: TestDeveloper; account: string }> {
  const dev = await registerDeveloper(call);
  const account = await connectAccount(server.url, stripe, dev.accessToken);
  return { dev, account };
}

describe('the connected processor account', () => {
  it('shows the connected account, and keeps it through a processor outage at disconnect (503, nothing changes)', async () => {
    const { dev, account } = await connectedDeveloper();
    expect((await call('GET', '/v1/payments/account', { apiKey: dev.apiKey })).body).toMatchObject({ connected: true, account_id: account });
    stripe.state.outage = true;
    try {
      expectError(await call('DELETE', '/v1/payments/account', { token: dev.accessToken }), 503, 'PAYMENT_PROCESSOR_UNAVAILABLE');
    } finally {
      stripe.state.outage = false;
    }
    expect((await call('GET', '/v1/payments/account', { token: dev.accessToken })).body.account_id).toBe(account);
    expect((await call('DELETE', '/v1/payments/account', { token: dev.accessToken })).body.connected).toBe(false);
  });

  it('answers 503 when no Stripe key is configured', async () => {
    const bare = await startTestServer();
    try {
      const bareCall = client(bare.url);
      const other = await registerDeveloper(bareCall);
      const res = await bareCall('POST', '/v1/apps', { token: other.accessToken, body: { name: 'X', platforms: ['win-x64'], price_id: newPriceId() } });
      expectError(res, 503, 'PAYMENTS_NOT_CONFIGURED');
      expectError(await bareCall('POST', '/v1/webhooks/payments', { body: { id: 'evt_1' } }), 503, 'PAYMENTS_NOT_CONFIGURED');
    } finally {
      await bare.close();
    }
  });
});

describe('price rules when a Price ID is saved', () => {
  it('accepts a flat one-time price and a flat subscription of at least 4 USD per period', async () => {
    const { dev, account } = await connectedDeveloper();
    const oneTime = newPriceId();
    const monthly = newPriceId();
    stripe.addPrice(account, { id: oneTime, unit_amount: 100 });
    stripe.addPrice(account, { id: monthly, type: 'recurring', unit_amount: 400 });
    expect((await createApp(call, dev, { price_id: oneTime })).price_id).toBe(oneTime);
    const app = await createApp(call, dev);
    expect((await call('PUT', `/v1/apps/${app.id}`, { token: dev.accessToken, body: { price_id: monthly } })).body.price_id).toBe(monthly);
  });

  it.each([
    ['a subscription under 4 USD per period', { type: 'recurring', unit_amount: 399 }, /at least 4 USD/],
    ['a tiered price', { type: 'recurring', billing_scheme: 'tiered', unit_amount: null }, /tiered/],
    ['a metered price', { type: 'recurring', unit_amount: 1000, recurring: { interval: 'month', usage_type: 'metered' } }, /usage-based/],
    ['a subscription in another currency', { type: 'recurring', unit_amount: 1000, currency: 'eur' }, /USD/],
    ['an archived price', { active: false }, /archived/],
  ] as const)('refuses %s with 400 PRICE_NOT_SUPPORTED', async (_name, price, message) => {
    const { dev, account } = await connectedDeveloper();
    const id = newPriceId();
    stripe.addPrice(account, { id, ...price });
    const res = await call('POST', '/v1/apps', { token: dev.accessToken, body: { name: 'X', platforms: ['win-x64'], price_id: id } });
    expectError(res, 400, 'PRICE_NOT_SUPPORTED');
    expect(res.body.detail).toMatch(message);
  });

  it("refuses a Price the connected account does not have (another account's too)", async () => {
    const { dev } = await connectedDeveloper();
    const { account: otherAccount } = await connectedDeveloper();
    const theirs = newPriceId();
    stripe.addPrice(otherAccount, { id: theirs });
    for (const priceId of [newPriceId(), theirs]) {
      expectError(await call('POST', '/v1/apps', { token: dev.accessToken, body: { name: 'X', platforms: ['win-x64'], price_id: priceId } }), 400, 'PRICE_NOT_FOUND');
    }
  });

  it('refuses a Price ID before a processor account is connected', async () => {
    const dev = await registerDeveloper(call);
    const app = await createApp(call, dev);
    expectError(await call('PUT', `/v1/apps/${app.id}`, { token: dev.accessToken, body: { price_id: newPriceId() } }), 409, 'PAYMENT_ACCOUNT_NOT_CONNECTED');
    // Clearing one needs no processor.
    expect((await call('PUT', `/v1/apps/${app.id}`, { token: dev.accessToken, body: { price_id: null } })).status).toBe(200);
  });

  it('keeps one app per Price ID (409)', async () => {
    const { dev, account } = await connectedDeveloper();
    const id = newPriceId();
    stripe.addPrice(account, { id });
    await createApp(call, dev, { price_id: id });
    const res = await call('POST', '/v1/apps', { token: dev.accessToken, body: { name: 'Dup', platforms: ['win-x64'], price_id: id } });
    expectError(res, 409, 'PRICE_ID_IN_USE');
  });
});

it('publishes the platform prices', async () => {
  const res = await call('GET', '/v1/public/pricing');
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ base_fee_annual_usd: expect.any(Number), license_fee_usd: 4, free_download_limit: 10, storage_fee_per_gb_month_usd: expect.any(Number) });
});
