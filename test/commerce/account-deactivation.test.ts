import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { connectCallback, startConnect } from '../support/connect-account.js';
import { newEventId, signedEvent } from '../support/fake-stripe.js';
import { createApp, createLicense, randomFingerprint, registerDeveloper, type TestDeveloper } from '../support/fixtures.js';
import { startServerWithStripe } from '../support/stripe-server.js';
import { checkoutHelpers } from './checkout.js';

const { stripe, server, call } = await startServerWithStripe();
const db = server.database.db;
const { deliver } = checkoutHelpers(call, stripe, server.adminToken);

const at = (secondsAgo: number) => Math.floor(Date.now() / 1000) - secondsAgo;
const newSubscriptionId = () => `sub_${randomBytes(8).toString('hex')}`;
const newCustomerId = () => `cus_${randomBytes(8).toString('hex')}`;
/**
 * An invoice.paid of a subscription, a month paid ahead. Stripe names the subscription under
 * `parent.subscription_details` since API version 2025-03-31.basil, at the top (`subscription`) before.
 */
const invoicePaid = (customer: string, created: number, developerId: string, subscription: string, shape: 'parent' | 'top-level' = 'parent') =>
  signedEvent({
    id: newEventId(),
    type: 'invoice.paid',
    created,
    data: {
      object: {
        object: 'invoice',
        customer,
        metadata: { developer_id: developerId },
        ...(shape === 'parent' ? { parent: { type: 'subscription_details', subscription_details: { subscription, metadata: {} } } } : { subscription }),
        lines: { data: [{ period: { end: at(-30 * 86400) } }] },
      },
    },
  });
const subscriptionObject = (type: string, customer: string, created: number, status: string, subscription: string, metadata: Record<string, string> = {}) => ({
  id: newEventId(),
  type,
  created,
  data: { object: { id: subscription, object: 'subscription', customer, status, metadata } },
});
const subscriptionEvent = (type: string, customer: string, created: number, status: string, subscription: string, metadata: Record<string, string> = {}) =>
  signedEvent(subscriptionObject(type, customer, created, status, subscription, metadata));
/** The same notification signed by someone who does not hold the webhook secret. */
const forgedSubscriptionEvent = (type: string, customer: string, created: number, status: string, subscription: string) =>
  signedEvent(subscriptionObject(type, customer, created, status, subscription), { secret: 'whsec_forged' });

/** A developer on Pro through their own subscription, paid 600 seconds ago. */
async function proDeveloper() {
  const dev = await registerDeveloper(call);
  const customer = newCustomerId();
  const subscription = newSubscriptionId();
  expect((await deliver(invoicePaid(customer, at(600), dev.id, subscription))).body.outcome).toBe('applied');
  return { dev, customer, subscription };
}

/**
 * A Pro developer (paid through their own subscription) with an app and a customer's license
 * activated on one device; then their subscription is deleted.
 */
async function deactivatedDeveloper() {
  const { dev, customer, subscription } = await proDeveloper();
  const app = await createApp(call, dev);
  const license = await createLicense(call, dev, { app_id: app.id, license_type: 'perpetual' });
  const device = randomFingerprint();
  const activated = await call('POST', '/v1/licenses/activate', { body: { license_key: license.license_key, device_fingerprint: device } });
  expect(activated.status).toBe(200);
  const deletion = subscriptionEvent('customer.subscription.deleted', customer, at(300), 'canceled', subscription);
  expect((await deliver(deletion)).body.outcome).toBe('applied');
  return { dev, customer, subscription, app, license, device, runtimeToken: activated.body.token as string, deletion };
}

const accountOf = async (dev: TestDeveloper) => (await call('GET', '/v1/auth/me', { token: dev.accessToken })).body;

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

  it('[Billing events] every developer change but securing the account or reducing its exposure answers 403 ACCOUNT_DEACTIVATED', async () => {
    const { dev } = await deactivatedDeveloper();
    const doc = (await call('GET', '/v1/openapi.json')).body as { paths: Record<string, Record<string, { operationId: string; security: Record<string, unknown>[] }>> };
    const developerChanges = Object.entries(doc.paths).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([method, op]) => method !== 'get' && op.security?.some((scheme) => 'bearerAuth' in scheme))
        .map(([method, op]) => ({ method: method.toUpperCase(), path: path.replace(/\{\w+\}/g, 'x'), operationId: op.operationId })),
    );
    expect(developerChanges.length).toBeGreaterThan(30);

    const allowed: string[] = [];
    for (const { method, path, operationId } of developerChanges) {
      // No body: the check comes before the body is read, and an allowed operation stops at its validation.
      const res = await call(method, path, { token: dev.accessToken });
      if (res.body?.error_code === 'ACCOUNT_DEACTIVATED') expectError(res, 403, 'ACCOUNT_DEACTIVATED');
      else allowed.push(operationId);
    }
    expect(allowed.sort()).toEqual(
      [
        // Securing the account.
        'changePassword',
        'confirmTwoFactor',
        'disableTwoFactor',
        'revokeApiKey',
        'rotateApiKey',
        'setupTwoFactor',
        // Reducing what it exposes.
        'deletePaymentLink',
        'disableEntitlementWebhook',
        'disconnectPaymentAccount',
        'revokeLicense',
        'revokeRedemptionBatch',
        'revokeRedemptionCode',
        'rotateEntitlementWebhookSecret',
      ].sort(),
    );
  });

  it('[Billing events] a deactivated account can still stop a leaked credential or license: API key rotation, license revocation, payment account disconnection', async () => {
    const { dev, license } = await deactivatedDeveloper();
    const rotated = await call('POST', '/v1/auth/api-keys/rotate', { token: dev.accessToken, body: { password: dev.password } });
    expect(rotated.status).toBe(200);
    expectError(await call('GET', '/v1/apps', { apiKey: dev.apiKey }), 401, 'UNAUTHORIZED');
    expect((await call('GET', '/v1/apps', { apiKey: rotated.body.api_key })).status).toBe(200);

    expect((await call('POST', `/v1/licenses/${license.license_id}/revoke`, { apiKey: rotated.body.api_key, body: {} })).body.status).toBe('REVOKED');
    expect((await call('POST', '/v1/licenses/activate', { body: { license_key: license.license_key, device_fingerprint: randomFingerprint() } })).status).not.toBe(200);
    expect((await call('DELETE', '/v1/payments/account', { token: dev.accessToken })).body).toMatchObject({ connected: false });
  });

  it('[Billing events] a new subscription (running: updated active) reactivates the account: changes work again', async () => {
    const { dev, customer, app } = await deactivatedDeveloper();
    // A subscription that is not running yet (its first payment pending) reactivates nothing.
    const next = newSubscriptionId();
    expect((await deliver(subscriptionEvent('customer.subscription.created', customer, at(200), 'incomplete', next))).body.outcome).toBe('applied');
    expectError(await createAppAs(dev), 403, 'ACCOUNT_DEACTIVATED');

    expect((await deliver(subscriptionEvent('customer.subscription.updated', customer, at(100), 'active', next))).body.outcome).toBe('applied');
    expect((await call('GET', '/v1/auth/me', { token: dev.accessToken })).body.deactivated_at).toBeNull();
    expect((await createAppAs(dev)).status).toBe(201);
    expect((await call('PUT', `/v1/apps/${app.id}`, { apiKey: dev.apiKey, body: { name: 'Renamed' } })).status).toBe(200);
  });

  it('[Billing events] a new subscription paid (invoice.paid) reactivates the account and restores Pro', async () => {
    const { dev, customer, app } = await deactivatedDeveloper();
    expect((await deliver(invoicePaid(customer, at(100), dev.id, newSubscriptionId()))).body.outcome).toBe('applied');
    expect((await call('GET', '/v1/auth/me', { token: dev.accessToken })).body).toMatchObject({ plan: 'pro', deactivated_at: null });
    expect((await call('POST', '/v1/licenses', { apiKey: dev.apiKey, body: { app_id: app.id, license_type: 'perpetual' } })).status).toBe(201);
  });

  it('[Billing events] a replayed or forged notification changes nothing', async () => {
    const { dev, customer, subscription, deletion } = await deactivatedDeveloper();
    const next = newSubscriptionId();

    // Forged reactivations: signed with another secret, or a genuine one's body altered after signing.
    expectError(await deliver(forgedSubscriptionEvent('customer.subscription.created', customer, at(100), 'active', next)), 400, 'INVALID_WEBHOOK_SIGNATURE');
    const pending = subscriptionEvent('customer.subscription.created', customer, at(100), 'incomplete', next);
    expectError(await deliver({ payload: pending.payload.replace('"incomplete"', '"active"'), header: pending.header }), 400, 'INVALID_WEBHOOK_SIGNATURE');
    expectError(await createAppAs(dev), 403, 'ACCOUNT_DEACTIVATED');

    // A genuine reactivation; then the deletion replayed as delivered, and an older deletion arriving late.
    expect((await deliver(subscriptionEvent('customer.subscription.created', customer, at(100), 'active', next))).body.outcome).toBe('applied');
    expect((await deliver(deletion)).body).toEqual({ received: true, duplicate: true, outcome: 'duplicate' });
    expect((await deliver(subscriptionEvent('customer.subscription.deleted', customer, at(250), 'canceled', subscription))).body.outcome).toBe('stale_skipped');
    // A forged deletion of the running subscription.
    expectError(await deliver(forgedSubscriptionEvent('customer.subscription.deleted', customer, at(0), 'canceled', next)), 400, 'INVALID_WEBHOOK_SIGNATURE');

    expect((await call('GET', '/v1/auth/me', { token: dev.accessToken })).body.deactivated_at).toBeNull();
    expect((await createAppAs(dev)).status).toBe(201);
  });

  it.each(['parent', 'top-level'] as const)(
    '[Billing events] the final invoice of the deleted subscription (subscription named as in Stripe API versions: %s) neither reactivates the account nor restores Pro',
    async (shape) => {
      const { dev, customer, subscription } = await deactivatedDeveloper();
      // Fees metered on the deleted subscription are billed by a final invoice, paid after the deletion.
      expect((await deliver(invoicePaid(customer, at(100), dev.id, subscription, shape))).body.outcome).toBe('ended_subscription_skipped');
      // Nor does a late update of it.
      expect((await deliver(subscriptionEvent('customer.subscription.updated', customer, at(50), 'active', subscription))).body.outcome).toBe('ended_subscription_skipped');
      expect(await accountOf(dev)).toMatchObject({ plan: 'free', deactivated_at: expect.any(String) });
      expectError(await createAppAs(dev), 403, 'ACCOUNT_DEACTIVATED');
    },
  );

  it('[Billing events] a plan switch (new subscription created and paid, then the old one deleted) leaves the account active and Pro; deleting the new one deactivates', async () => {
    const { dev, customer, subscription: old } = await proDeveloper();
    const next = newSubscriptionId();
    expect((await deliver(subscriptionEvent('customer.subscription.created', customer, at(400), 'active', next))).body.outcome).toBe('applied');
    expect((await deliver(invoicePaid(customer, at(390), dev.id, next))).body.outcome).toBe('applied');
    // The old one is deleted, then its final usage invoice is paid; an update of it changes nothing either.
    expect((await deliver(subscriptionEvent('customer.subscription.deleted', customer, at(300), 'canceled', old))).body.outcome).toBe('other_subscription_ended');
    expect((await deliver(invoicePaid(customer, at(200), dev.id, old))).body.outcome).toBe('ended_subscription_skipped');
    expect(await accountOf(dev)).toMatchObject({ plan: 'pro', deactivated_at: null });
    expect((await createAppAs(dev)).status).toBe(201);

    expect((await deliver(subscriptionEvent('customer.subscription.deleted', customer, at(100), 'canceled', next))).body.outcome).toBe('applied');
    expect(await accountOf(dev)).toMatchObject({ plan: 'free', deactivated_at: expect.any(String) });
  });

  it("[Billing events] another subscription's update does not reactivate a deactivated account, nor its failed payment start a grace period", async () => {
    const { dev, customer } = await deactivatedDeveloper();
    const other = newSubscriptionId();
    expect((await deliver(subscriptionEvent('customer.subscription.updated', customer, at(100), 'active', other))).body.outcome).toBe('other_subscription_skipped');
    const failed = signedEvent({
      id: newEventId(),
      type: 'invoice.payment_failed',
      created: at(90),
      data: { object: { object: 'invoice', customer, parent: { subscription_details: { subscription: other, metadata: {} } } } },
    });
    expect((await deliver(failed)).body.outcome).toBe('other_subscription_skipped');
    expect(await accountOf(dev)).toMatchObject({ plan: 'free', deactivated_at: expect.any(String), plan_grace_until: null });
    expectError(await createAppAs(dev), 403, 'ACCOUNT_DEACTIVATED');
  });

  it('[Billing events] re-subscribing under a new Stripe customer reactivates the account; a running account is not taken over by metadata', async () => {
    const { dev } = await deactivatedDeveloper();
    const customer = newCustomerId();
    const subscription = newSubscriptionId();
    const created = subscriptionEvent('customer.subscription.created', customer, at(100), 'active', subscription, { developer_id: dev.id });
    expect((await deliver(created)).body.outcome).toBe('applied');
    expect((await accountOf(dev)).deactivated_at).toBeNull();
    // Later events find the developer by the new customer.
    const paid = signedEvent({
      id: newEventId(),
      type: 'invoice.paid',
      created: at(90),
      data: { object: { object: 'invoice', customer, parent: { subscription_details: { subscription, metadata: {} } }, lines: { data: [{ period: { end: at(-30 * 86400) } }] } } },
    });
    expect((await deliver(paid)).body.outcome).toBe('applied');
    expect(await accountOf(dev)).toMatchObject({ plan: 'pro', deactivated_at: null });
    expect((await createAppAs(dev)).status).toBe(201);

    // Running under that customer now, the account is not re-linked by another customer's metadata.
    const stranger = subscriptionEvent('customer.subscription.created', newCustomerId(), at(80), 'active', newSubscriptionId(), { developer_id: dev.id });
    expect((await deliver(stranger)).body.outcome).toBe('developer_not_found');
  });

  it('[Billing events] re-subscribing under a new Stripe customer: its first invoice.paid reactivates the account and restores Pro', async () => {
    const { dev } = await deactivatedDeveloper();
    expect((await deliver(invoicePaid(newCustomerId(), at(100), dev.id, newSubscriptionId()))).body.outcome).toBe('applied');
    expect(await accountOf(dev)).toMatchObject({ plan: 'pro', deactivated_at: null });
  });

  it('[Billing events] the operator setting Pro reactivates a deactivated account; setting free leaves it deactivated', async () => {
    const { dev } = await deactivatedDeveloper();
    const plan = (value: string) => call('PUT', `/v1/admin/developers/${dev.id}/plan`, { token: server.adminToken, body: { plan: value } });
    expect((await plan('free')).status).toBe(200);
    expect((await accountOf(dev)).deactivated_at).toEqual(expect.any(String));
    expect((await plan('pro')).status).toBe(200);
    expect(await accountOf(dev)).toMatchObject({ plan: 'pro', deactivated_at: null });
    expect((await createAppAs(dev)).status).toBe(201);
  });

  it('[Billing events] a Stripe Connect connection started before the deletion does not complete after it', async () => {
    const { dev, customer, subscription } = await proDeveloper();
    const started = await startConnect(server.url, { token: dev.accessToken });
    expect(started.status).toBe(200);
    expect((await deliver(subscriptionEvent('customer.subscription.deleted', customer, at(100), 'canceled', subscription))).body.outcome).toBe('applied');

    const back = await connectCallback(server.url, { code: stripe.grantCode(stripe.addAccount()), state: started.state! }, started.cookie);
    expect(back.status).toBe(403);
    expect(back.body).toMatchObject({ error_code: 'ACCOUNT_DEACTIVATED' });
    expect((await call('GET', '/v1/payments/account', { token: dev.accessToken })).body).toMatchObject({ connected: false });
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
