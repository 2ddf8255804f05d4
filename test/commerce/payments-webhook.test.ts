import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { newEventId, newSessionId, signedEvent } from '../support/fake-stripe.js';
import { createApp, registerDeveloper } from '../support/fixtures.js';
import { checkoutHelpers } from './checkout.js';
import { startServerWithStripe } from '../support/stripe-server.js';
import { connectAccount } from '../support/connect-account.js';

const { stripe, server, call } = await startServerWithStripe();
const db = server.database.db;

const { deliver, seller, checkoutCompleted } = checkoutHelpers(call, stripe, server.adminToken);

const licensesOf = (appId: string) => db('licenses').where({ app_id: appId }).select('id', 'email', 'source', 'license_type', 'payment_session_id');
const feesOf = (appId: string) => db('license_fees').where({ app_id: appId }).select('license_id');

describe('signature', () => {
  it.each([
    ['a tampered body', (s: ReturnType<typeof signedEvent>) => ({ payload: s.payload.replace('checkout', 'checkouT'), header: s.header })],
    ['a wrong secret', () => signedEvent({ id: newEventId(), type: 'checkout.session.completed' }, { secret: 'whsec_wrong' })],
    ['a missing header', (s: ReturnType<typeof signedEvent>) => ({ payload: s.payload, header: undefined })],
    ['a stale timestamp', () => signedEvent({ id: newEventId(), type: 'checkout.session.completed' }, { timestamp: Math.floor(Date.now() / 1000) - 600 })],
    ['a garbage header', (s: ReturnType<typeof signedEvent>) => ({ payload: s.payload, header: 't=1,v1=00' })],
  ])('refuses %s with 400 and changes nothing', async (_name, make) => {
    const { account, app } = await seller();
    const sessionId = newSessionId();
    stripe.addSession(account, { id: sessionId, price_id: (await db('apps').where({ id: app.id }).first()).price_id });
    const bad = make(checkoutCompleted(account, sessionId)) as { payload: string; header: string | undefined };
    expectError(await deliver({ payload: bad.payload, header: bad.header ?? '' }, bad.header), 400, 'INVALID_WEBHOOK_SIGNATURE');
    expect(await licensesOf(app.id)).toEqual([]);
  });

  it('refuses a signed event of the wrong shape with 400', async () => {
    expectError(await deliver(signedEvent({ id: newEventId(), type: 'checkout.session.completed', data: 'nope' })), 400, 'VALIDATION_FAILED');
    const bad = signedEvent({ id: newEventId(), type: 'checkout.session.completed', account: 'acct_x', data: { object: { id: 'pi_123' } } });
    expectError(await deliver(bad), 400, 'VALIDATION_FAILED');
  });
});

describe('checkout fulfilment', () => {
  it('mints one license and one fee for a paid session, however often it is delivered', async () => {
    const { account, app } = await seller();
    const sessionId = newSessionId();
    stripe.addSession(account, { id: sessionId, price_id: (await db('apps').where({ id: app.id }).first()).price_id, email: 'buyer@example.com' });
    const event = checkoutCompleted(account, sessionId);
    const results = await Promise.all(Array.from({ length: 5 }, () => deliver(event)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(results.filter((r) => r.body.outcome === 'fulfilled')).toHaveLength(1);
    // The same session through its other event, and replayed later: still one license.
    expect((await deliver(checkoutCompleted(account, sessionId, 'checkout.session.async_payment_succeeded'))).body.outcome).toBe('already_fulfilled');
    expect((await deliver(event)).body).toEqual({ received: true, duplicate: true, outcome: 'duplicate' });

    const licenses = await licensesOf(app.id);
    expect(licenses).toHaveLength(1);
    expect(licenses[0]).toMatchObject({ email: 'buyer@example.com', source: 'direct_payment', license_type: 'perpetual' });
    // The session id is a secret: only a masked form is stored.
    expect(licenses[0]!.payment_session_id).not.toBe(sessionId);
    expect(await feesOf(app.id)).toEqual([{ license_id: licenses[0]!.id }]);
  });

  it('mints concurrently delivered distinct events for the same session once', async () => {
    const { account, app, priceId } = await seller();
    const sessionId = newSessionId();
    stripe.addSession(account, { id: sessionId, price_id: priceId });
    const results = await Promise.all(Array.from({ length: 5 }, () => deliver(checkoutCompleted(account, sessionId))));
    expect(results.filter((r) => r.body.outcome === 'fulfilled')).toHaveLength(1);
    expect(await licensesOf(app.id)).toHaveLength(1);
  });

  it('finds the app by metadata service_app_id when no Price matches, and mints nothing for an unpaid session', async () => {
    const { account, app } = await seller();
    const byMetadata = newSessionId();
    stripe.addSession(account, { id: byMetadata, price_id: 'price_elsewhere', metadata: { service_app_id: app.id }, email: null });
    expect((await deliver(checkoutCompleted(account, byMetadata))).body.outcome).toBe('fulfilled');
    const unpaid = newSessionId();
    stripe.addSession(account, { id: unpaid, price_id: 'price_elsewhere', payment_status: 'unpaid', metadata: { service_app_id: app.id } });
    expect((await deliver(checkoutCompleted(account, unpaid))).body.outcome).toBe('not_paid');
    expect(await licensesOf(app.id)).toHaveLength(1);
  });

  it('sells the app whose Price matches over one the metadata names, even one without a Price', async () => {
    const { dev, account, app, priceId } = await seller();
    const unpriced = await createApp(call, dev);
    const sessionId = newSessionId();
    stripe.addSession(account, { id: sessionId, price_id: priceId, metadata: { service_app_id: unpriced.id } });
    expect((await deliver(checkoutCompleted(account, sessionId))).body.outcome).toBe('fulfilled');
    expect(await licensesOf(app.id)).toHaveLength(1);
    expect(await licensesOf(unpriced.id)).toEqual([]);
  });

  it("never matches another developer's app or Price", async () => {
    const victim = await seller();
    const attacker = await seller();
    const sessionId = newSessionId();
    stripe.addSession(attacker.account, { id: sessionId, price_id: victim.priceId, metadata: { service_app_id: victim.app.id } });
    expect((await deliver(checkoutCompleted(attacker.account, sessionId))).body.outcome).toBe('no_matching_app');
    // A session of one account named under another account's event is not found there.
    expect((await deliver(checkoutCompleted(victim.account, sessionId))).body.outcome).toBe('session_not_found');
    expect(await licensesOf(victim.app.id)).toEqual([]);
    expect(await licensesOf(attacker.app.id)).toEqual([]);
  });

  it('delivers nothing while the account is disconnected, and a late notification after reconnecting fulfils', async () => {
    const { dev, account, app, priceId } = await seller();
    const sessionId = newSessionId();
    stripe.addSession(account, { id: sessionId, price_id: priceId });
    expect((await call('DELETE', '/v1/payments/account', { token: dev.accessToken })).status).toBe(200);
    expect((await deliver(checkoutCompleted(account, sessionId))).body.outcome).toBe('account_not_connected');
    expect(await licensesOf(app.id)).toEqual([]);
    await connectAccount(call.baseUrl, stripe, dev.accessToken, account);
    expect((await deliver(checkoutCompleted(account, sessionId))).body.outcome).toBe('fulfilled');
  });

  it('delivers no license for a developer without an active Pro subscription', async () => {
    const { account, app, priceId } = await seller({}, 'free');
    const sessionId = newSessionId();
    stripe.addSession(account, { id: sessionId, price_id: priceId, email: 'buyer@example.com' });
    expect((await deliver(checkoutCompleted(account, sessionId))).body.outcome).toBe('plan_required');
    expect(await licensesOf(app.id)).toEqual([]);
    expect(await feesOf(app.id)).toEqual([]);
  });

  it('answers 503 while the processor is down, so the event is delivered again', async () => {
    const { account, app, priceId } = await seller();
    const sessionId = newSessionId();
    stripe.addSession(account, { id: sessionId, price_id: priceId });
    const event = checkoutCompleted(account, sessionId);
    stripe.state.outage = true;
    try {
      expectError(await deliver(event), 503, 'PAYMENT_PROCESSOR_UNAVAILABLE');
    } finally {
      stripe.state.outage = false;
    }
    expect((await deliver(event)).body.outcome).toBe('fulfilled');
    expect(await licensesOf(app.id)).toHaveLength(1);
  });
});

describe('developer subscription events', () => {
  const customer = () => `cus_${randomBytes(8).toString('hex')}`;
  const at = (secondsAgo: number) => Math.floor(Date.now() / 1000) - secondsAgo;
  const invoice = (type: string, cus: string, created: number, metadata: Record<string, string> = {}) =>
    signedEvent({ id: newEventId(), type, created, data: { object: { object: 'invoice', customer: cus, metadata, lines: { data: [{ period: { end: at(-30 * 86400) } }] } } } });
  const subscription = (type: string, cus: string, created: number, metadata: Record<string, string> = {}) =>
    signedEvent({ id: newEventId(), type, created, data: { object: { object: 'subscription', customer: cus, status: 'active', metadata } } });
  const planOf = async (id: string) => db('developers').where({ id }).first('plan', 'plan_grace_until', 'plan_period_end', 'subscription_metadata');

  it('invoice.paid makes the developer Pro; payment_failed starts the grace period; deleted makes them free', async () => {
    const dev = await registerDeveloper(call);
    const cus = customer();
    expect((await deliver(invoice('invoice.paid', cus, at(300), { developer_id: dev.id }))).body.outcome).toBe('applied');
    expect((await call('GET', '/v1/auth/me', { token: dev.accessToken })).body.plan).toBe('pro');
    expect((await planOf(dev.id)).plan_period_end).not.toBeNull();

    // Later events find the developer by the stored customer id.
    const paymentFailed = invoice('invoice.payment_failed', cus, at(200));
    expect((await deliver(paymentFailed)).body.outcome).toBe('applied');
    const failed = await planOf(dev.id);
    expect(failed.plan).toBe('pro');
    expect(failed.plan_grace_until.getTime() - Date.now()).toBeGreaterThan(6 * 86_400_000);
    // The developer is told by email, once, however often the processor delivers the event.
    expect((await deliver(paymentFailed)).body.duplicate).toBe(true);
    const notices = await db('email_outbox').where({ developer_id: dev.id, kind: 'plan_payment_failed' }).select('recipient', 'subject', 'text_body');
    expect(notices).toEqual([{ recipient: dev.email, subject: 'Latchkey Pro: your payment failed', text_body: expect.stringContaining('Update your payment method') }]);

    expect((await deliver(subscription('customer.subscription.updated', cus, at(150), { tier: 'annual' }))).body.outcome).toBe('applied');
    expect((await planOf(dev.id)).subscription_metadata).toEqual({ tier: 'annual', status: 'active' });

    expect((await deliver(subscription('customer.subscription.deleted', cus, at(100)))).body.outcome).toBe('applied');
    expect((await planOf(dev.id)).plan).toBe('free');
  });

  it('ends Pro by itself when the grace period passes unpaid; a later payment restores it', async () => {
    const dev = await registerDeveloper(call);
    const cus = customer();
    await deliver(invoice('invoice.paid', cus, at(9 * 86400), { developer_id: dev.id }));
    // The failure was 8 days ago: its 7-day grace period is over, with no event to say so.
    await deliver(invoice('invoice.payment_failed', cus, at(8 * 86400)));
    const me = (await call('GET', '/v1/auth/me', { token: dev.accessToken })).body;
    expect(me.plan).toBe('free');
    expect(Date.parse(me.plan_grace_until)).toBeLessThan(Date.now());
    const app = await createApp(call, dev);
    expectError(await call('POST', '/v1/licenses', { token: dev.accessToken, body: { app_id: app.id, license_type: 'perpetual' } }), 403, 'PLAN_REQUIRED');
    expectError(await call('POST', `/v1/apps/${app.id}/push-update`, { token: dev.accessToken, body: {} }), 403, 'PLAN_REQUIRED');

    await deliver(invoice('invoice.paid', cus, at(60)));
    expect((await call('GET', '/v1/auth/me', { token: dev.accessToken })).body).toMatchObject({ plan: 'pro', plan_grace_until: null });
    expect((await call('POST', '/v1/licenses', { token: dev.accessToken, body: { app_id: app.id, license_type: 'perpetual' } })).status).toBe(201);
  });

  it('keeps Pro during the grace period and says until when', async () => {
    const dev = await registerDeveloper(call);
    const cus = customer();
    await deliver(invoice('invoice.paid', cus, at(3 * 86400), { developer_id: dev.id }));
    await deliver(invoice('invoice.payment_failed', cus, at(2 * 86400)));
    const me = (await call('GET', '/v1/auth/me', { token: dev.accessToken })).body;
    expect(me.plan).toBe('pro');
    expect(Date.parse(me.plan_grace_until) - Date.now()).toBeGreaterThan(4 * 86_400_000);
  });

  it('skips an older event arriving after a newer one: a late renewal does not resurrect a deleted subscription', async () => {
    const dev = await registerDeveloper(call);
    const cus = customer();
    await deliver(invoice('invoice.paid', cus, at(1000), { developer_id: dev.id }));
    await deliver(subscription('customer.subscription.deleted', cus, at(100)));
    expect((await deliver(invoice('invoice.paid', cus, at(500), { developer_id: dev.id }))).body.outcome).toBe('stale_skipped');
    expect((await planOf(dev.id)).plan).toBe('free');
  });

  it("ignores an unknown customer, and a connected account's own invoices", async () => {
    const dev = await registerDeveloper(call);
    expect((await deliver(invoice('invoice.paid', customer(), at(10)))).body.outcome).toBe('developer_not_found');
    const connected = signedEvent({
      id: newEventId(),
      type: 'invoice.paid',
      account: 'acct_someone',
      data: { object: { customer: customer(), metadata: { developer_id: dev.id } } },
    });
    expect((await deliver(connected)).body.outcome).toBe('ignored');
    expect((await planOf(dev.id)).plan).toBe('free');
  });
});
