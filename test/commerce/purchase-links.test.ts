import { describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { createLicense, registerDeveloper } from '../support/fixtures.js';
import { checkoutHelpers } from './checkout.js';
import { startServerWithStripe } from '../support/stripe-server.js';

const { stripe, server, call } = await startServerWithStripe({ PUBLIC_BASE_URL: 'https://licenses.example.com' });
const db = server.database.db;
const { deliver, seller, checkoutCompleted } = checkoutHelpers(call, stripe, server.adminToken);

/** A Pro seller with a trial license to convert. */
async function trialToBuy() {
  const s = await seller();
  const license = await createLicense(call, s.dev, { app_id: s.app.id, license_type: 'trial', email: 'tryer@example.com' });
  return { ...s, licenseId: license.license_id as string };
}

const purchaseLink = (s: Awaited<ReturnType<typeof trialToBuy>>, licenseId = s.licenseId) => call('POST', `/v1/licenses/${licenseId}/purchase-link`, { token: s.dev.accessToken });

/** The session Stripe created for the purchase link, now paid, as Stripe reports it back. */
function paySession(s: Awaited<ReturnType<typeof trialToBuy>>, checkoutUrl: string) {
  const created = [...stripe.createdSessions.values()].find((c) => c.url === checkoutUrl)!;
  stripe.addSession(s.account, { id: created.id, price_id: s.priceId, metadata: { service_app_id: s.app.id, license_id: s.licenseId } });
  return created;
}

describe('Route B: purchase link for a license', () => {
  it('creates a short-lived checkout on the connected account for the license', async () => {
    const s = await trialToBuy();
    const res = await purchaseLink(s);
    expect(res.status).toBe(201);
    expect(res.body.checkout_url).toMatch(/^https:\/\/checkout\.stripe\.test\//);
    // Stripe's shortest session lifetime, counted from when the link was made.
    const stored = await db('license_purchase_sessions').where({ license_id: s.licenseId }).first('created_at', 'expires_at');
    expect(stored.expires_at.getTime() - stored.created_at.getTime()).toBe(30 * 60_000);
    expect(res.body.expires_at).toBe(stored.expires_at.toISOString());
    const created = paySession(s, res.body.checkout_url);
    expect(created.params.expires_at).toBe(String(Math.floor(stored.expires_at.getTime() / 1000)));
    expect(created.account).toBe(s.account);
    expect(created.params).toMatchObject({
      mode: 'payment',
      'line_items[0][price]': s.priceId,
      'metadata[service_app_id]': s.app.id,
      'metadata[license_id]': s.licenseId,
      success_url: `https://licenses.example.com/download?session_id={CHECKOUT_SESSION_ID}&app_id=${s.app.id}`,
    });
  });

  it('converts the trial into a paid license once, whatever the replays and parallel deliveries', async () => {
    const s = await trialToBuy();
    const created = paySession(s, (await purchaseLink(s)).body.checkout_url);
    const results = await Promise.all(Array.from({ length: 4 }, () => deliver(checkoutCompleted(s.account, created.id))));
    expect(results.map((r) => r.body.outcome).sort()).toEqual(['already_fulfilled', 'already_fulfilled', 'already_fulfilled', 'fulfilled']);
    expect((await deliver(checkoutCompleted(s.account, created.id, 'checkout.session.async_payment_succeeded'))).body.outcome).toBe('already_fulfilled');

    const licenses = await db('licenses').where({ app_id: s.app.id }).select('id', 'license_type', 'status', 'expires_at');
    expect(licenses).toEqual([{ id: s.licenseId, license_type: 'perpetual', status: 'ACTIVE', expires_at: null }]);
    expect(await db('license_fees').where({ app_id: s.app.id }).select('license_id')).toEqual([{ license_id: s.licenseId }]);
    // Paid now: a second purchase link is refused.
    expectError(await purchaseLink(s), 409, 'LICENSE_NOT_PURCHASABLE');
  });

  it('uses subscription mode for a recurring Price', async () => {
    const s = await trialToBuy();
    stripe.addPrice(s.account, { id: s.priceId, type: 'recurring' });
    const created = paySession(s, (await purchaseLink(s)).body.checkout_url);
    expect(created.params.mode).toBe('subscription');
  });

  it("answers 404 for another developer's license and a missing one", async () => {
    const s = await trialToBuy();
    const other = await registerDeveloper(call);
    expectError(await call('POST', `/v1/licenses/${s.licenseId}/purchase-link`, { token: other.accessToken }), 404, 'LICENSE_NOT_FOUND');
    expectError(await purchaseLink(s, 'lic_missing'), 404, 'LICENSE_NOT_FOUND');
  });

  it('refuses a revoked license, and a free plan', async () => {
    const s = await trialToBuy();
    expect((await call('POST', `/v1/licenses/${s.licenseId}/revoke`, { token: s.dev.accessToken })).status).toBeLessThan(300);
    expectError(await purchaseLink(s), 409, 'LICENSE_NOT_PURCHASABLE');

    const free = await seller({}, 'free');
    const trial = await createLicense(call, free.dev, { app_id: free.app.id, license_type: 'trial' });
    expectError(await call('POST', `/v1/licenses/${trial.license_id}/purchase-link`, { token: free.dev.accessToken }), 403, 'PLAN_REQUIRED');
  });
});
