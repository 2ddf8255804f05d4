import { describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { startSaleChannels } from './sale-channels.js';
import { tenant } from './world.js';

// Issue 22: the channels that create licenses mint floating ones when the developer says so: a
// redemption batch by its own seat fields, the sale channels by the app's sold seat model.
const { server, licenseOf, activate, redeemed, marketplaceSale, checkoutSale, webhookGrants } = await startSaleChannels();

const SELLS_FLOATING = { sold_seat_model: 'floating', sold_max_concurrent: 2, sold_lease_ttl_minutes: 30 };
const FLOATING_SOLD = { seat_model: 'floating', max_concurrent: 2, device_limit: 2, lease_ttl_minutes: 30 };
const NODE_LOCKED = { seat_model: 'node_locked', max_concurrent: null, lease_ttl_minutes: null };

/** Two devices run on a 2-seat floating license; the third is refused a seat. */
async function expectTwoSeats(licenseKey: string) {
  expect((await activate(licenseKey)).status).toBe(200);
  expect((await activate(licenseKey)).status).toBe(200);
  const third = await activate(licenseKey);
  expect(third.status, JSON.stringify(third.body)).toBe(409);
  expect(third.body.error_code).toBe('NO_SEAT_AVAILABLE');
}

describe("an app's sold seat model", () => {
  it('is node_locked by default, set on create and update, read back, and cleared by going back to node_locked', async () => {
    const t = await tenant(server);
    expect(t.app).toMatchObject({ sold_seat_model: 'node_locked', sold_max_concurrent: null, sold_lease_ttl_minutes: null });
    const update = (body: unknown) => t.call('PUT', `/v1/apps/${t.app.id}`, { token: t.dev.accessToken, body });
    expect((await update({ sold_seat_model: 'floating', sold_max_concurrent: 5 })).body).toMatchObject({
      sold_seat_model: 'floating',
      sold_max_concurrent: 5,
      sold_lease_ttl_minutes: 15,
    });
    expect((await t.call('GET', `/v1/apps/${t.app.id}`, { token: t.dev.accessToken })).body).toMatchObject({ sold_seat_model: 'floating', sold_max_concurrent: 5 });
    // Other settings leave it alone.
    expect((await update({ default_device_limit: 4 })).body).toMatchObject({ sold_seat_model: 'floating', sold_max_concurrent: 5, default_device_limit: 4 });
    expect((await update({ sold_seat_model: 'node_locked' })).body).toMatchObject({ sold_seat_model: 'node_locked', sold_max_concurrent: null, sold_lease_ttl_minutes: null });
    const created = await tenant(server, { app: SELLS_FLOATING });
    expect(created.app).toMatchObject(SELLS_FLOATING);
  });

  it('stays whole under a burst of concurrent updates: floating with its seats, or node_locked with none', async () => {
    const t = await tenant(server);
    const bodies = Array.from({ length: 12 }, (_, i) => (i % 2 ? { sold_seat_model: 'node_locked' } : { sold_seat_model: 'floating', sold_max_concurrent: i + 1 }));
    const answers = await Promise.all(bodies.map((body) => t.call('PUT', `/v1/apps/${t.app.id}`, { token: t.dev.accessToken, body })));
    expect(answers.map((a) => a.status)).toEqual(bodies.map(() => 200));
    const app = (await t.call('GET', `/v1/apps/${t.app.id}`, { token: t.dev.accessToken })).body;
    if (app.sold_seat_model === 'floating') expect(app).toMatchObject({ sold_max_concurrent: expect.any(Number), sold_lease_ttl_minutes: 15 });
    else expect(app).toMatchObject({ sold_max_concurrent: null, sold_lease_ttl_minutes: null });
  });

  it('refuses bad combinations with 400 and changes nothing; another developer gets 404', async () => {
    const t = await tenant(server, { app: SELLS_FLOATING });
    const update = (body: unknown, token = t.dev.accessToken) => t.call('PUT', `/v1/apps/${t.app.id}`, { token, body });
    for (const body of [
      { sold_seat_model: 'floating' },
      { sold_seat_model: 'floating', sold_max_concurrent: null },
      { sold_seat_model: 'floating', sold_max_concurrent: 0 },
      { sold_seat_model: 'floating', sold_max_concurrent: 2, sold_lease_ttl_minutes: 2 },
      { sold_seat_model: 'node_locked', sold_max_concurrent: 2 },
      { sold_seat_model: 'node_locked', sold_lease_ttl_minutes: 30 },
      { sold_max_concurrent: 3 },
      { sold_lease_ttl_minutes: null },
      { sold_seat_model: 'concurrent', sold_max_concurrent: 3 },
    ]) {
      expectError(await update(body), 400, 'VALIDATION_FAILED');
    }
    const refused = await t.call('POST', '/v1/apps', { token: t.dev.accessToken, body: { name: 'X', platforms: ['linux-x64'], sold_seat_model: 'floating' } });
    expectError(refused, 400, 'VALIDATION_FAILED');
    const other = await tenant(server);
    expectError(await update({ sold_seat_model: 'node_locked' }, other.dev.accessToken), 404, 'APP_NOT_FOUND');
    expect((await t.call('GET', `/v1/apps/${t.app.id}`, { token: t.dev.accessToken })).body).toMatchObject(SELLS_FLOATING);
    expect((await t.call('GET', '/v1/apps', { token: t.dev.accessToken })).body).toHaveLength(1);
  });
});

describe('redemption batches', () => {
  it('of floating licenses redeem to floating licenses whose seats cap concurrent activations', async () => {
    const t = await tenant(server);
    const { batch, license } = await redeemed(t, { seat_model: 'floating', max_concurrent: 2, lease_ttl_minutes: 30 });
    expect(batch).toMatchObject(FLOATING_SOLD);
    expect(license).toMatchObject(FLOATING_SOLD);
    await expectTwoSeats(license.license_key);
    // The license's page reads its live leases: the two copies running.
    expect((await licenseOf(t, license.license_id)).seats_in_use).toBe(2);
    const listed = (await t.call('GET', `/v1/apps/${t.app.id}/redemption-batches`, { apiKey: t.dev.apiKey })).body;
    expect(listed[0]).toMatchObject(FLOATING_SOLD);
  });

  it('are node_locked by default, even for an app that sells floating licenses', async () => {
    const t = await tenant(server, { app: SELLS_FLOATING });
    const { batch, license } = await redeemed(t, { device_limit: 3 });
    expect(batch).toMatchObject({ ...NODE_LOCKED, device_limit: 3 });
    expect(license).toMatchObject({ ...NODE_LOCKED, device_limit: 3, seats_in_use: null });
  });

  it('refuses bad combinations with 400 and creates no batch', async () => {
    const t = await tenant(server);
    for (const body of [
      { seat_model: 'floating' },
      { seat_model: 'floating', max_concurrent: 2, device_limit: 2 },
      { seat_model: 'floating', max_concurrent: 2, license_type: 'trial' },
      { seat_model: 'floating', max_concurrent: 2, lease_ttl_minutes: 1441 },
      { max_concurrent: 2 },
      { lease_ttl_minutes: 30 },
    ]) {
      const res = await t.call('POST', `/v1/apps/${t.app.id}/redemption-batches`, { apiKey: t.dev.apiKey, body: { channel: 'appsumo', quantity: 1, ...body } });
      expectError(res, 400, 'VALIDATION_FAILED');
    }
    expect((await t.call('GET', `/v1/apps/${t.app.id}/redemption-batches`, { apiKey: t.dev.apiKey })).body).toEqual([]);
  });
});

describe('sales of an app that sells floating licenses', () => {
  it('mint floating licenses through marketplace provisioning; a trial stays node_locked', async () => {
    const t = await tenant(server, { app: SELLS_FLOATING });
    const license = await marketplaceSale(t, { license_type: 'perpetual' });
    expect(license).toMatchObject(FLOATING_SOLD);
    await expectTwoSeats(license.license_key);
    expect(await marketplaceSale(t, { license_type: 'trial' })).toMatchObject({ ...NODE_LOCKED, license_type: 'trial', device_limit: 2 });
  });

  it('mint floating licenses through checkout', async () => {
    const license = await checkoutSale(SELLS_FLOATING);
    expect(license).toMatchObject({ ...FLOATING_SOLD, source: 'direct_payment' });
    await expectTwoSeats(license.license_key);
  });

  it('mint floating licenses through the entitlement webhook, with and without a customer email', async () => {
    for (const license of await webhookGrants(SELLS_FLOATING)) {
      expect(license).toMatchObject({ ...FLOATING_SOLD, source: 'commerce_platform' });
      await expectTwoSeats(license.license_key);
    }
  });

  it('mint node-locked licenses with the default device limit for an app that sells node_locked', async () => {
    const t = await tenant(server, { app: { default_device_limit: 4 } });
    expect(await marketplaceSale(t)).toMatchObject({ ...NODE_LOCKED, device_limit: 4 });
  });
});
