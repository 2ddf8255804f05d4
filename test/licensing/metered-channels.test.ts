import { describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { randomFingerprint } from '../support/fixtures.js';
import { startSaleChannels } from './sale-channels.js';
import { tenant, type Tenant } from './world.js';

// Issue 22 item 5: the channels that create licenses give them metered features: a redemption
// batch by its own meters (else the app's), the sale channels by the app's sold meters.
const { server, call, activate, redeemed, marketplaceSale, checkoutSale, webhookGrants } = await startSaleChannels();

const METERS = { export: { uses_per_period: 3, period: 'month' }, render: { uses_per_period: 1, period: 'lifetime' } };
const SELLS_METERED = { sold_meters: METERS };

/** Activates the license on a new device and consumes `quantity` exports with its token: the answer. */
async function consumeExports(licenseKey: string, quantity: number) {
  const activated = await activate(licenseKey);
  expect(activated.status, JSON.stringify(activated.body)).toBe(200);
  return call('POST', '/v1/licenses/consume', {
    body: { token: activated.body.token, feature: 'export', quantity, idempotency_key: `ch-${randomFingerprint().slice(0, 16)}` },
  });
}

/** The license's three exports a month count: 3 pass, the 4th is refused. */
async function expectThreeExports(licenseKey: string) {
  const first = await consumeExports(licenseKey, 3);
  expect(first.status, JSON.stringify(first.body)).toBe(200);
  expect(first.body).toMatchObject({ used: 3, remaining: 0, uses_per_period: 3 });
  const over = await consumeExports(licenseKey, 1);
  expect(over.status, JSON.stringify(over.body)).toBe(409);
  expect(over.body).toMatchObject({ error_code: 'USAGE_LIMIT_EXCEEDED', remaining: 0 });
}

const appOf = async (t: Tenant) => (await t.call('GET', `/v1/apps/${t.app.id}`, { token: t.dev.accessToken })).body;

describe("an app's sold meters", () => {
  it('are none by default, set on create and update, read back, left alone by other settings, and cleared with {}', async () => {
    const t = await tenant(server);
    expect(t.app.sold_meters).toEqual({});
    const update = (body: unknown) => t.call('PUT', `/v1/apps/${t.app.id}`, { token: t.dev.accessToken, body });
    expect((await update(SELLS_METERED)).body.sold_meters).toEqual(METERS);
    expect((await appOf(t)).sold_meters).toEqual(METERS);
    expect((await update({ default_device_limit: 4 })).body).toMatchObject({ default_device_limit: 4, sold_meters: METERS });
    // Replaced as a whole.
    expect((await update({ sold_meters: { export: { uses_per_period: 9, period: 'day' } } })).body.sold_meters).toEqual({ export: { uses_per_period: 9, period: 'day' } });
    expect((await update({ sold_meters: {} })).body.sold_meters).toEqual({});
    expect((await tenant(server, { app: SELLS_METERED })).app.sold_meters).toEqual(METERS);
  });

  it('stay whole under a burst of concurrent updates and sales: each sale mints one set or the other', async () => {
    const t = await tenant(server);
    const ONE_EXPORT = { export: { uses_per_period: 1, period: 'day' } };
    const updates = Array.from({ length: 8 }, (_, i) => t.call('PUT', `/v1/apps/${t.app.id}`, { token: t.dev.accessToken, body: { sold_meters: i % 2 ? METERS : ONE_EXPORT } }));
    const sales = Array.from({ length: 4 }, () => marketplaceSale(t));
    const [answers, sold] = await Promise.all([Promise.all(updates), Promise.all(sales)]);
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect([METERS, ONE_EXPORT]).toContainEqual((await appOf(t)).sold_meters);
    for (const license of sold) expect([{}, METERS, ONE_EXPORT]).toContainEqual(license.meters);
  });

  it('refuses bad meters with 400 and changes nothing; another developer gets 404', async () => {
    const t = await tenant(server, { app: SELLS_METERED });
    const update = (body: unknown, token = t.dev.accessToken) => t.call('PUT', `/v1/apps/${t.app.id}`, { token, body });
    const bad = [
      { export: { uses_per_period: 0, period: 'month' } },
      { export: { uses_per_period: 3, period: 'week' } },
      { export: { uses_per_period: 3 } },
      { export: { uses_per_period: 3, period: 'month', extra: 1 } },
      { '-bad name': { uses_per_period: 3, period: 'month' } },
      Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`f${i}`, { uses_per_period: 1, period: 'day' }])),
      null,
      [],
    ];
    for (const sold_meters of bad) {
      expectError(await update({ sold_meters }), 400, 'VALIDATION_FAILED');
      expectError(await t.call('POST', '/v1/apps', { token: t.dev.accessToken, body: { name: 'X', platforms: ['linux-x64'], sold_meters } }), 400, 'VALIDATION_FAILED');
    }
    const other = await tenant(server);
    expectError(await update({ sold_meters: {} }, other.dev.accessToken), 404, 'APP_NOT_FOUND');
    expect((await appOf(t)).sold_meters).toEqual(METERS);
    expect((await t.call('GET', '/v1/apps', { token: t.dev.accessToken })).body).toHaveLength(1);
  });
});

describe('redemption batches with meters', () => {
  it('redeem to licenses carrying them, and consumption counts against them', async () => {
    const t = await tenant(server);
    const { batch, license } = await redeemed(t, { meters: METERS });
    expect(batch.meters).toEqual(METERS);
    expect(license.meters).toEqual(METERS);
    await expectThreeExports(license.license_key);
    const listed = (await t.call('GET', `/v1/apps/${t.app.id}/redemption-batches`, { apiKey: t.dev.apiKey })).body;
    expect(listed[0].meters).toEqual(METERS);
  });

  it("without meters take the app's sold meters when redeemed; with {} none", async () => {
    const t = await tenant(server);
    const batch = await redeemed(t, {});
    expect(batch.batch.meters).toBeNull();
    expect(batch.license.meters).toEqual({});
    await t.call('PUT', `/v1/apps/${t.app.id}`, { token: t.dev.accessToken, body: SELLS_METERED });
    expect((await redeemed(t, {})).license.meters).toEqual(METERS);
    expect((await redeemed(t, { meters: {} })).license.meters).toEqual({});
  });

  it('refuse bad meters with 400 and create no batch', async () => {
    const t = await tenant(server);
    for (const meters of [{ export: { uses_per_period: -1, period: 'month' } }, { export: { uses_per_period: 1, period: 'hour' } }, null, 'export=1/month']) {
      const res = await t.call('POST', `/v1/apps/${t.app.id}/redemption-batches`, { apiKey: t.dev.apiKey, body: { channel: 'appsumo', quantity: 1, meters } });
      expectError(res, 400, 'VALIDATION_FAILED');
    }
    expect((await t.call('GET', `/v1/apps/${t.app.id}/redemption-batches`, { apiKey: t.dev.apiKey })).body).toEqual([]);
  });
});

describe('sales of an app that sells metered features', () => {
  it('mint licenses with them through marketplace provisioning, a trial too, and keep them when the app changes its sold meters', async () => {
    const t = await tenant(server, { app: SELLS_METERED });
    const license = await marketplaceSale(t, { license_type: 'perpetual' });
    expect(license.meters).toEqual(METERS);
    await expectThreeExports(license.license_key);
    expect(await marketplaceSale(t, { license_type: 'trial' })).toMatchObject({ license_type: 'trial', meters: METERS });

    await t.call('PUT', `/v1/apps/${t.app.id}`, { token: t.dev.accessToken, body: { sold_meters: {} } });
    expect((await marketplaceSale(t)).meters).toEqual({});
    expect((await t.call('GET', `/v1/licenses/${license.license_id}`, { apiKey: t.dev.apiKey })).body.meters).toEqual(METERS);
  });

  it('mint licenses with them through checkout', async () => {
    const license = await checkoutSale(SELLS_METERED);
    expect(license).toMatchObject({ source: 'direct_payment', meters: METERS });
    await expectThreeExports(license.license_key);
  });

  it('mint licenses with them through the entitlement webhook, with and without a customer email', async () => {
    for (const license of await webhookGrants(SELLS_METERED)) {
      expect(license).toMatchObject({ source: 'commerce_platform', meters: METERS });
      await expectThreeExports(license.license_key);
    }
  });

  it('mint licenses without meters for an app that sells none', async () => {
    expect((await checkoutSale({})).meters).toEqual({});
  });
});
