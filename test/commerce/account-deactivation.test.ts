import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { newEventId, signedEvent } from '../support/fake-stripe.js';
import { createApp, createLicense, randomFingerprint, registerDeveloper, type TestDeveloper } from '../support/fixtures.js';
import { startServerWithStripe } from '../support/stripe-server.js';
import { checkoutHelpers } from './checkout.js';

const { stripe, server, call } = await startServerWithStripe();
const db = server.database.db;
const { deliver } = checkoutHelpers(call, stripe, server.adminToken);

const at = (secondsAgo: number) => Math.floor(Date.now() / 1000) - secondsAgo;
const invoicePaid = (customer: string, created: number, developerId: string) =>
  signedEvent({
    id: newEventId(), type: 'invoice.paid', created,
    data: { object: { object: 'invoice', customer, metadata: { developer_id: developerId }, lines: { data: [{ period: { end: at(-30 * 86400) } }] } } },
  });
const subscriptionObject = (type: string, customer: string, created: number, status: string) =>
  ({ id: newEventId(), type, created, data: { object: { object: 'subscription', customer, status, metadata: {} } } });
const subscriptionEvent = (type: string, customer: string, created: number, status = 'active') => signedEvent(subscriptionObject(type, customer, created, status));
/** The same notification signed by someone who does not hold the webhook secret. */
const forgedSubscriptionEvent = (type: string, customer: string, created: number, status = 'active') =>
  signedEvent(subscriptionObject(type, customer, created, status), { secret: 'whsec_forged' });

/**
 * A Pro developer (paid through their own subscription) with an app and a customer's license
 * activated on one device; then their subscription is deleted.
 */
async function deactivatedDeveloper() {
  const dev = await registerDeveloper(call);
  const customer = `cus_${randomBytes(8).toString('hex')}`;
  expect((await deliver(invoicePaid(customer, at(600), dev.id))).body.outcome).toBe('applied');
  const app = await createApp(call, dev);
  const license = await createLicense(call, dev, { app_id: app.id, license_type: 'perpetual' });
  const device = randomFingerprint();
  const activated = await call('POST', '/v1/licenses/activate', { body: { license_key: license.license_key, device_fingerprint: device } });
  expect(activated.status).toBe(200);
  const deletion = subscriptionEvent('customer.subscription.deleted', customer, at(300), 'canceled');
  expect((await deliver(deletion)).body.outcome).toBe('applied');
  return { dev, customer, app, license, device, runtimeToken: activated.body.token as string, deletion };
}

/** A change any developer may make on the free plan: creating an app. */
const createAppAs = (dev: TestDeveloper) => call('POST', '/v1/apps', { token: dev.accessToken, body: { name: 'Another app', platforms: ['linux-x64'] } });

describe('[Billing events] customer.subscription.deleted deactivates the developer account', () => {
  it('[Billing events] after deletion, sign-in and reads work, every change answers 403 ACCOUNT_DEACTIVATED and changes nothing', async () => {
    const { dev, app, license } = await deactivatedDeveloper();

    const login = await call('POST', '/v1/auth/login', { body: { email: dev.email, password: dev.password } });
    expect(login.status).toBe(200);
    expect((await call('POST', '/v1/auth/refresh', { body: { refresh_token: login.body.refresh_token } })).status).toBe(200);
    const me = await call('GET', '/v1/auth/me', { token: login.body.access_token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ plan: 'free', deactivated_at: expect.any(String) });
    expect((await call('GET', '/v1/apps', { token: dev.accessToken })).status).toBe(200);
    expect((await call('GET', `/v1/licenses/${license.license_id}`, { apiKey: dev.apiKey })).status).toBe(200);

    const refusals = [
      await createAppAs(dev),
      await call('PUT', `/v1/apps/${app.id}`, { apiKey: dev.apiKey, body: { name: 'Renamed' } }),
      await call('DELETE', `/v1/apps/${app.id}`, { token: login.body.access_token }),
      // A trial is what the free plan may still issue: the refusal is the deactivation, not the plan.
      await call('POST', '/v1/licenses', { apiKey: dev.apiKey, body: { app_id: app.id, license_type: 'trial' } }),
      await call('POST', `/v1/licenses/${license.license_id}/revoke`, { apiKey: dev.apiKey, body: {} }),
      await call('POST', '/v1/marketplace/licenses', { apiKey: dev.apiKey, body: { app_id: app.id, channel: 'gumroad', license_config: { license_type: 'trial' } } }),
      await call('POST', '/v1/auth/api-keys', { token: dev.accessToken, body: { password: dev.password, name: 'ci', scopes: ['read'] } }),
    ];
    for (const res of refusals) {
      expectError(res, 403, 'ACCOUNT_DEACTIVATED');
      expect(res.body.detail).toContain('subscription was cancelled');
    }

    expect(await db('apps').where({ developer_id: dev.id }).select('name')).toEqual([{ name: 'Notes Pro' }]);
    expect(await db('licenses').where({ developer_id: dev.id }).select('id', 'status')).toEqual([{ id: license.license_id, status: 'ACTIVE' }]);
    expect(await db('api_keys').where({ developer_id: dev.id }).select('id')).toHaveLength(1);
  });

  it("[Billing events] after deletion, the customers' licenses keep activating and refreshing", async () => {
    const { license, device, runtimeToken } = await deactivatedDeveloper();
    const refreshed = await call('POST', '/v1/licenses/refresh', { body: { token: runtimeToken } });
    expect(refreshed.status).toBe(200);
    expect((await call('POST', '/v1/licenses/refresh', { body: { license_key: license.license_key, device_fingerprint: device } })).status).toBe(200);
    const second = await call('POST', '/v1/licenses/activate', { body: { license_key: license.license_key, device_fingerprint: randomFingerprint() } });
    expect(second.status).toBe(200);
    expect(second.body.token).toEqual(expect.any(String));
  });

  it('[Billing events] a deactivated account can still secure itself: rotating its API key works and the old key stops', async () => {
    const { dev } = await deactivatedDeveloper();
    const rotated = await call('POST', '/v1/auth/api-keys/rotate', { token: dev.accessToken, body: { password: dev.password } });
    expect(rotated.status).toBe(200);
    expectError(await call('GET', '/v1/apps', { apiKey: dev.apiKey }), 401, 'UNAUTHORIZED');
    expect((await call('GET', '/v1/apps', { apiKey: rotated.body.api_key })).status).toBe(200);
  });

  it('[Billing events] a new subscription (created active) reactivates the account: changes work again', async () => {
    const { dev, customer, app } = await deactivatedDeveloper();
    // A subscription that is not running yet (its first payment pending) reactivates nothing.
    expect((await deliver(subscriptionEvent('customer.subscription.created', customer, at(200), 'incomplete'))).body.outcome).toBe('applied');
    expectError(await createAppAs(dev), 403, 'ACCOUNT_DEACTIVATED');

    expect((await deliver(subscriptionEvent('customer.subscription.created', customer, at(100)))).body.outcome).toBe('applied');
    expect((await call('GET', '/v1/auth/me', { token: dev.accessToken })).body.deactivated_at).toBeNull();
    expect((await createAppAs(dev)).status).toBe(201);
    expect((await call('PUT', `/v1/apps/${app.id}`, { apiKey: dev.apiKey, body: { name: 'Renamed' } })).status).toBe(200);
  });

  it('[Billing events] a new subscription paid (invoice.paid) reactivates the account and restores Pro', async () => {
    const { dev, customer, app } = await deactivatedDeveloper();
    expect((await deliver(invoicePaid(customer, at(100), dev.id))).body.outcome).toBe('applied');
    expect((await call('GET', '/v1/auth/me', { token: dev.accessToken })).body).toMatchObject({ plan: 'pro', deactivated_at: null });
    expect((await call('POST', '/v1/licenses', { apiKey: dev.apiKey, body: { app_id: app.id, license_type: 'perpetual' } })).status).toBe(201);
  });

  it('[Billing events] a replayed or forged notification changes nothing', async () => {
    const { dev, customer, deletion } = await deactivatedDeveloper();

    // Forged reactivations: signed with another secret, or a genuine one's body altered after signing.
    expectError(await deliver(forgedSubscriptionEvent('customer.subscription.created', customer, at(100))), 400, 'INVALID_WEBHOOK_SIGNATURE');
    const pending = subscriptionEvent('customer.subscription.created', customer, at(100), 'incomplete');
    expectError(await deliver({ payload: pending.payload.replace('"incomplete"', '"active"'), header: pending.header }), 400, 'INVALID_WEBHOOK_SIGNATURE');
    expectError(await createAppAs(dev), 403, 'ACCOUNT_DEACTIVATED');

    // A genuine reactivation; then the deletion replayed as delivered, and an older deletion arriving late.
    expect((await deliver(subscriptionEvent('customer.subscription.created', customer, at(100)))).body.outcome).toBe('applied');
    expect((await deliver(deletion)).body).toEqual({ received: true, duplicate: true, outcome: 'duplicate' });
    expect((await deliver(subscriptionEvent('customer.subscription.deleted', customer, at(250), 'canceled'))).body.outcome).toBe('stale_skipped');
    // A forged deletion of the running subscription.
    expectError(await deliver(forgedSubscriptionEvent('customer.subscription.deleted', customer, at(0), 'canceled')), 400, 'INVALID_WEBHOOK_SIGNATURE');

    expect((await call('GET', '/v1/auth/me', { token: dev.accessToken })).body.deactivated_at).toBeNull();
    expect((await createAppAs(dev)).status).toBe(201);
  });

  it('[Billing events] the OpenAPI document declares the 403 on every developer change a deactivated account is refused, and on no read', async () => {
    const doc = (await call('GET', '/v1/openapi.json')).body;
    expect(doc.components.responses.Error403.description).toContain('`ACCOUNT_DEACTIVATED`');
    expect(doc.paths['/v1/apps'].post.responses).toHaveProperty('403');
    expect(doc.paths['/v1/apps/{app_id}'].put.responses).toHaveProperty('403');
    expect(doc.paths['/v1/apps/{app_id}'].delete.responses).toHaveProperty('403');
    expect(doc.paths['/v1/apps'].get.responses).not.toHaveProperty('403');
  });
});
