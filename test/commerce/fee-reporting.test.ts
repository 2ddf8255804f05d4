import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { feeIdempotencyKey } from '../../server/billing/fees.js';
import { sessionHash } from '../../server/payments/fulfilment.js';
import { createStripeFeeReporter, LICENSE_FEE_METER_EVENT } from '../../server/payments/stripe-fee-reporter.js';
import { createStripeClient } from '../../server/payments/stripe-processor.js';
import { newEventId, newSessionId, signedEvent, type FakeSession } from '../support/fake-stripe.js';
import { createLicense } from '../support/fixtures.js';
import { checkoutHelpers } from './checkout.js';
import { eventually } from '../support/wait.js';
import { startServerWithStripe } from '../support/stripe-server.js';

const { stripe, server, call } = await startServerWithStripe();
const db = server.database.db;
const { deliver, seller, checkoutCompleted } = checkoutHelpers(call, stripe, server.adminToken);

/** A Pro seller billed on the platform account under its own customer. */
async function billedSeller() {
  const s = await seller();
  const customer = `cus_${randomBytes(8).toString('hex')}`;
  await db('developers').where({ id: s.dev.id }).update({ billing_customer_id: customer });
  return { ...s, customer };
}

async function sell(s: Awaited<ReturnType<typeof seller>>, session: Partial<Omit<FakeSession, 'id' | 'price_id'>> = {}) {
  const id = newSessionId();
  stripe.addSession(s.account, { id, price_id: s.priceId, ...session });
  expect((await deliver(checkoutCompleted(s.account, id))).body.outcome).toBe('fulfilled');
  return (
    await db('licenses')
      .where({ payment_session_hash: sessionHash(id) })
      .first('id')
  ).id as string;
}

const settledFee = (licenseId: string) =>
  eventually('the fee report to settle', async () => db('license_fees').where({ license_id: licenseId }).whereNot({ report_status: 'pending' }).first());

describe('license fee usage events to Stripe', () => {
  it("reports a sale's fee once as a meter event on the developer's customer, keyed by the license", async () => {
    const s = await billedSeller();
    const licenseId = await sell(s);
    expect(await settledFee(licenseId)).toMatchObject({ report_status: 'reported', collected_by: 'usage_report', report_idempotency_key: `license_fee:${licenseId}` });
    expect(stripe.meterEvents.get(feeIdempotencyKey(licenseId))).toEqual({
      identifier: `license_fee:${licenseId}`,
      event_name: LICENSE_FEE_METER_EVENT,
      payload: { stripe_customer_id: s.customer, value: '400' },
      idempotencyKey: `license_fee:${licenseId}`,
    });
  });

  it('records one event when a report is retried, after an outage or after a crash before it settled', async () => {
    const s = await billedSeller();
    const reporter = createStripeFeeReporter({
      stripe: createStripeClient({ secretKey: stripe.env.LATCHKEY_STRIPE_SECRET_KEY, webhookSecret: undefined, apiBase: new URL(stripe.url) }),
    });
    const licenseId = `lic_${randomBytes(8).toString('hex')}`;
    const usage = { licenseId, developerId: s.dev.id, amountCents: 400, currency: 'usd', idempotencyKey: feeIdempotencyKey(licenseId), billingCustomerId: s.customer };
    stripe.state.outage = true;
    try {
      await expect(reporter.reportLicenseFee(usage)).rejects.toThrow();
    } finally {
      stripe.state.outage = false;
    }
    expect(await reporter.reportLicenseFee(usage)).toEqual({ status: 'reported' });
    expect(await reporter.reportLicenseFee(usage)).toEqual({ status: 'reported' });
    expect([...stripe.meterEvents.keys()].filter((k) => k === usage.idempotencyKey)).toHaveLength(1);
  });

  it("does not report a fee Stripe took as the payment link's application fee", async () => {
    const s = await billedSeller();
    const link = (await call('POST', `/v1/apps/${s.app.id}/payment-link`, { token: s.dev.accessToken })).body;
    const licenseId = await sell(s, { payment_link: { id: link.id, application_fee_percent: null } });
    expect(await db('license_fees').where({ license_id: licenseId }).first()).toMatchObject({ collected_by: 'application_fee', report_status: 'not_reported' });
    expect(await db('jobs').where({ kind: 'report_license_fee' }).whereRaw(`payload->>'license_id' = ?`, [licenseId])).toEqual([]);
    expect(stripe.meterEvents.has(feeIdempotencyKey(licenseId))).toBe(false);
  });

  it('reports the fee as usage for a link this service did not make, even one whose percentage fee goes to another platform', async () => {
    const s = await billedSeller();
    const ownLink = (application: string | null) => ({ id: `plink_own${randomBytes(6).toString('hex')}`, application_fee_percent: 50, application });
    const sales = [await sell(s, { payment_link: ownLink('ca_anotherplatform'), mode: 'subscription' }), await sell(s, { payment_link: ownLink(null) })];
    for (const licenseId of sales) expect(await settledFee(licenseId)).toMatchObject({ collected_by: 'usage_report', report_status: 'reported' });
  });

  it('never bills trial or test-mode licenses', async () => {
    const s = await billedSeller();
    const trial = await createLicense(call, s.dev, { app_id: s.app.id, license_type: 'trial' });
    const testSale = await sell(s, { livemode: false });
    expect(await db('license_fees').whereIn('license_id', [trial.license_id, testSale])).toEqual([]);
    expect(stripe.meterEvents.has(feeIdempotencyKey(trial.license_id)) || stripe.meterEvents.has(feeIdempotencyKey(testSale))).toBe(false);
  });

  it('keeps the fee in the ledger for a developer with no billing customer, and reports it once they become one', async () => {
    const s = await seller();
    const licenseId = await sell(s);
    expect(await settledFee(licenseId)).toMatchObject({ report_status: 'not_reported', report_detail: expect.stringContaining('no billing customer') });

    // Their first paid Pro invoice links a customer: the fee kept in the ledger is reported, once.
    const customer = `cus_${randomBytes(8).toString('hex')}`;
    const paid = () => signedEvent({ id: newEventId(), type: 'invoice.paid', data: { object: { object: 'invoice', customer, metadata: { developer_id: s.dev.id } } } });
    expect((await deliver(paid())).body.outcome).toBe('applied');
    const reported = await settledFee(licenseId);
    expect(reported).toMatchObject({ report_status: 'reported' });
    expect(stripe.meterEvents.get(feeIdempotencyKey(licenseId))).toMatchObject({ payload: { stripe_customer_id: customer } });
    // A renewal finds nothing left to report.
    expect((await deliver(paid())).body.outcome).toBe('applied');
    expect(await db('license_fees').where({ license_id: licenseId }).first()).toEqual(reported);
  });
});
