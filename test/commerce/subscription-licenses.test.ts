import { describe, expect, it } from 'vitest';
import { LICENSE_RENEWAL_GRACE_DAYS } from '../../server/payments/subscription-licenses.js';
import { expectError } from '../support/assertions.js';
import { newEventId, newSessionId, newSubscriptionId, signedEvent } from '../support/fake-stripe.js';
import { randomFingerprint } from '../support/fixtures.js';
import { checkoutHelpers } from './checkout.js';
import { startServerWithStripe } from '../support/stripe-server.js';

const { stripe, server, call } = await startServerWithStripe();
const db = server.database.db;

const { deliver, seller, checkoutCompleted } = checkoutHelpers(call, stripe, server.adminToken);

const DAY_SECONDS = 86_400;
const GRACE_MS = LICENSE_RENEWAL_GRACE_DAYS * DAY_SECONDS * 1000;
/** Unix seconds, `offset` seconds from now (negative: in the past). */
const at = (offset: number) => Math.floor(Date.now() / 1000) + offset;

const invoicePaid = (account: string | undefined, subscriptionId: string, created: number, periodEnd: number) =>
  signedEvent({
    id: newEventId(),
    type: 'invoice.paid',
    account,
    created,
    data: {
      object: {
        object: 'invoice',
        customer: 'cus_buyer',
        parent: { type: 'subscription_details', subscription_details: { subscription: subscriptionId, metadata: {} } },
        lines: { data: [{ period: { end: periodEnd } }] },
      },
    },
  });
const subscriptionDeleted = (account: string, subscriptionId: string, created: number) =>
  signedEvent({
    id: newEventId(),
    type: 'customer.subscription.deleted',
    account,
    created,
    data: { object: { id: subscriptionId, object: 'subscription', customer: 'cus_buyer', status: 'canceled', metadata: {} } },
  });

const licenseOf = (appId: string) =>
  db('licenses').where({ app_id: appId }).first('id', 'license_key', 'license_type', 'expires_at', 'processor_subscription_id') as Promise<{
    id: string;
    license_key: string;
    license_type: string;
    expires_at: Date | null;
    processor_subscription_id: string | null;
  }>;
const activate = (licenseKey: string) => call('POST', '/v1/licenses/activate', { body: { license_key: licenseKey, device_fingerprint: randomFingerprint() } });

/** A seller's subscription Price sold through checkout: the license minted for its first period. */
async function subscriptionSale() {
  const sale = await seller();
  const sessionId = newSessionId();
  const subscriptionId = newSubscriptionId();
  const periodEnd = at(30 * DAY_SECONDS);
  stripe.addSession(sale.account, { id: sessionId, price_id: sale.priceId, mode: 'subscription', subscription: { id: subscriptionId, current_period_end: periodEnd } });
  expect((await deliver(checkoutCompleted(sale.account, sessionId))).body.outcome).toBe('fulfilled');
  return { ...sale, sessionId, subscriptionId, periodEnd };
}

describe('subscription licenses', () => {
  it('runs a sold subscription license to its paid period end plus the renewal grace', async () => {
    const sale = await subscriptionSale();
    expect(await licenseOf(sale.app.id)).toMatchObject({
      license_type: 'subscription',
      processor_subscription_id: sale.subscriptionId,
      expires_at: new Date(sale.periodEnd * 1000 + GRACE_MS),
    });
  });

  it('extends the license on each renewal, and never shortens it', async () => {
    const sale = await subscriptionSale();
    const nextEnd = sale.periodEnd + 30 * DAY_SECONDS;
    expect((await deliver(invoicePaid(sale.account, sale.subscriptionId, at(-100), nextEnd))).body.outcome).toBe('applied');
    expect((await licenseOf(sale.app.id)).expires_at).toEqual(new Date(nextEnd * 1000 + GRACE_MS));

    // The first period's invoice arriving late is older than the renewal: skipped.
    expect((await deliver(invoicePaid(sale.account, sale.subscriptionId, at(-200), sale.periodEnd))).body.outcome).toBe('stale_skipped');
    // A newer invoice for an earlier period end (a proration, say) applies but leaves the longer term.
    expect((await deliver(invoicePaid(sale.account, sale.subscriptionId, at(-50), sale.periodEnd))).body.outcome).toBe('applied');
    expect((await licenseOf(sale.app.id)).expires_at).toEqual(new Date(nextEnd * 1000 + GRACE_MS));
  });

  it('ends the license when its subscription is deleted: activation then answers 403 LICENSE_EXPIRED', async () => {
    const sale = await subscriptionSale();
    const { license_key } = await licenseOf(sale.app.id);
    expect((await activate(license_key)).status).toBe(200);

    expect((await deliver(subscriptionDeleted(sale.account, sale.subscriptionId, at(-10)))).body.outcome).toBe('applied');
    expect((await licenseOf(sale.app.id)).expires_at!.getTime()).toBeLessThanOrEqual(server.clock.now().getTime());
    expectError(await activate(license_key), 403, 'LICENSE_EXPIRED');

    // A renewal created before the deletion but delivered after it does not bring the license back.
    expect((await deliver(invoicePaid(sale.account, sale.subscriptionId, at(-20), sale.periodEnd + 30 * DAY_SECONDS))).body.outcome).toBe('stale_skipped');
    expectError(await activate(license_key), 403, 'LICENSE_EXPIRED');
  });

  it("never lets another developer's account, or the platform account, touch the license", async () => {
    const sale = await subscriptionSale();
    const other = await seller();
    const before = await licenseOf(sale.app.id);
    const longer = sale.periodEnd + 365 * DAY_SECONDS;
    expect((await deliver(invoicePaid(other.account, sale.subscriptionId, at(-10), longer))).body.outcome).toBe('ignored');
    expect((await deliver(subscriptionDeleted(other.account, sale.subscriptionId, at(-5)))).body.outcome).toBe('ignored');
    // The platform account's invoices are the developers' own Pro subscriptions.
    expect((await deliver(invoicePaid(undefined, sale.subscriptionId, at(-1), longer))).body.outcome).toBe('developer_not_found');
    expect(await licenseOf(sale.app.id)).toEqual(before);
  });

  it('ignores unknown subscriptions and invoices of no subscription', async () => {
    const sale = await subscriptionSale();
    expect((await deliver(invoicePaid(sale.account, newSubscriptionId(), at(-10), at(DAY_SECONDS)))).body.outcome).toBe('ignored');
    expect((await deliver(subscriptionDeleted(sale.account, newSubscriptionId(), at(-10)))).body).toEqual({ received: true, duplicate: false, outcome: 'ignored' });
    const oneOff = signedEvent({
      id: newEventId(),
      type: 'invoice.paid',
      account: sale.account,
      data: { object: { object: 'invoice', customer: 'cus_buyer', lines: { data: [{ period: { end: at(DAY_SECONDS) } }] } } },
    });
    expect((await deliver(oneOff)).body.outcome).toBe('ignored');
    expect((await licenseOf(sale.app.id)).expires_at).toEqual(new Date(sale.periodEnd * 1000 + GRACE_MS));
  });

  it('refuses a signed subscription event of the wrong shape with 400', async () => {
    const sale = await subscriptionSale();
    const bad = signedEvent({ id: newEventId(), type: 'customer.subscription.deleted', account: sale.account, data: { object: { id: 'in_123' } } });
    expectError(await deliver(bad), 400, 'VALIDATION_FAILED');
  });

  it('changes nothing on replays of the sale, a renewal or the deletion', async () => {
    const sale = await subscriptionSale();
    const firstTerm = (await licenseOf(sale.app.id)).expires_at;
    expect((await deliver(checkoutCompleted(sale.account, sale.sessionId, 'checkout.session.async_payment_succeeded'))).body.outcome).toBe('already_fulfilled');
    expect((await licenseOf(sale.app.id)).expires_at).toEqual(firstTerm);

    const renewal = invoicePaid(sale.account, sale.subscriptionId, at(-100), sale.periodEnd + 30 * DAY_SECONDS);
    expect((await deliver(renewal)).body.outcome).toBe('applied');
    const renewed = await licenseOf(sale.app.id);
    expect((await deliver(renewal)).body).toEqual({ received: true, duplicate: true, outcome: 'duplicate' });
    expect(await licenseOf(sale.app.id)).toEqual(renewed);

    const deletion = subscriptionDeleted(sale.account, sale.subscriptionId, at(-10));
    expect((await deliver(deletion)).body.outcome).toBe('applied');
    const ended = await licenseOf(sale.app.id);
    expect((await deliver(deletion)).body.duplicate).toBe(true);
    expect(await licenseOf(sale.app.id)).toEqual(ended);
  });
});
