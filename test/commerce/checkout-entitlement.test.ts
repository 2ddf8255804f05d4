import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { newSessionId } from '../support/fake-stripe.js';
import { createApp } from '../support/fixtures.js';
import { checkoutHelpers } from './checkout.js';
import { startServerWithStripe } from '../support/stripe-server.js';

const { stripe, server, call } = await startServerWithStripe();
const db = server.database.db;
const { deliver, seller, checkoutCompleted, readyBuild } = checkoutHelpers(call, stripe, server.adminToken);

const entitlement = (sessionId: string, appId: string) => call('GET', `/v1/public/checkout-session/${sessionId}/entitlement?app_id=${appId}`);
const deliveryEmails = (appId: string) => db('email_outbox').where({ app_id: appId, kind: 'license_delivery' }).select('recipient', 'license_id');

/** A seller, a paid session of its account (not yet notified), optionally with a READY build. */
async function sale(options: { build?: boolean; email?: string | null } = {}) {
  const s = await seller();
  const build = options.build === false ? null : await readyBuild(server, s, randomBytes(4096));
  const sessionId = newSessionId();
  stripe.addSession(s.account, { id: sessionId, price_id: s.priceId, email: options.email === undefined ? 'buyer@example.com' : options.email });
  const fulfil = async () => expect((await deliver(checkoutCompleted(s.account, sessionId))).body.outcome).toBe('fulfilled');
  return { ...s, build, sessionId, fulfil };
}

describe('GET /v1/public/checkout-session/{session_id}/entitlement', () => {
  it('answers 404 LICENSE_NOT_PROVISIONED until the notification is processed, then the license with a working link', async () => {
    const s = await sale();
    const before = await entitlement(s.sessionId, s.app.id);
    expectError(before, 404, 'LICENSE_NOT_PROVISIONED');
    expect(before.body.detail).toBe('license not yet provisioned; retry in about 2 seconds');
    expect(before.headers.get('retry-after')).toBe('2');

    await s.fulfil();
    const res = await entitlement(s.sessionId, s.app.id);
    expect(res.status).toBe(200);
    const license = await db('licenses').where({ app_id: s.app.id }).first('license_key');
    expect(res.body).toMatchObject({ license_key: license.license_key, app_name: s.app.name, app_version: s.build!.version, customer_email: 'buyer@example.com', note: null });
    // Issue 21 added `downloads` (one link per platform) beside the contract's fields.
    expect(Object.keys(res.body).sort()).toEqual(['app_name', 'app_version', 'customer_email', 'download_expires_at', 'download_url', 'downloads', 'license_key', 'note']);
    expect(Date.parse(res.body.download_expires_at) - Date.now()).toBeGreaterThan(7 * 86_400_000 - 60_000);
    const download = await fetch(res.body.download_url);
    expect(download.status).toBe(200);
    expect(
      createHash('sha256')
        .update(Buffer.from(await download.arrayBuffer()))
        .digest('hex'),
    ).toBe(s.build!.sha256);
  });

  it('sends the delivery email once, however often the entitlement is asked for', async () => {
    const s = await sale();
    await s.fulfil();
    for (let i = 0; i < 3; i++) expect((await entitlement(s.sessionId, s.app.id)).status).toBe(200);
    expect(await deliveryEmails(s.app.id)).toEqual([{ recipient: 'buyer@example.com', license_id: expect.any(String) }]);
  });

  it('without a READY build answers null download fields with a note, and its first return with a build sends the email', async () => {
    const s = await sale({ build: false });
    await s.fulfil();
    const early = await entitlement(s.sessionId, s.app.id);
    expect(early.status).toBe(200);
    expect(early.body).toMatchObject({ download_url: null, download_expires_at: null, app_version: null });
    expect(early.body.note).toMatch(/no build/i);
    expect(early.body.license_key).toMatch(/\S/);
    expect(await deliveryEmails(s.app.id)).toEqual([]);

    await readyBuild(server, s, randomBytes(2048));
    expect((await entitlement(s.sessionId, s.app.id)).body.download_url).toMatch(/\/v1\/downloads\//);
    expect((await entitlement(s.sessionId, s.app.id)).status).toBe(200);
    expect(await deliveryEmails(s.app.id)).toHaveLength(1);
  });

  it('sends nothing for a session that collected no email', async () => {
    const s = await sale({ email: null });
    await s.fulfil();
    const res = await entitlement(s.sessionId, s.app.id);
    expect(res.status).toBe(200);
    expect(res.body.customer_email).toBeNull();
    expect(await deliveryEmails(s.app.id)).toEqual([]);
  });

  it("answers 404 for another app, even the seller's own, and for another developer's app", async () => {
    const s = await sale({ build: false });
    await s.fulfil();
    const otherApp = await createApp(call, s.dev);
    expectError(await entitlement(s.sessionId, otherApp.id), 404, 'LICENSE_NOT_PROVISIONED');
    const other = await seller();
    expectError(await entitlement(s.sessionId, other.app.id), 404, 'LICENSE_NOT_PROVISIONED');
    expectError(await entitlement(s.sessionId, 'app_nope'), 404, 'APP_NOT_FOUND');
  });

  it("never answers a session of another developer's connected account", async () => {
    const victim = await seller();
    const attacker = await sale({ build: false });
    // The attacker sells under the victim's app id: fulfilment refuses it, so no entitlement exists anywhere.
    const sessionId = newSessionId();
    stripe.addSession(attacker.account, { id: sessionId, price_id: victim.priceId, metadata: { service_app_id: victim.app.id } });
    expect((await deliver(checkoutCompleted(attacker.account, sessionId))).body.outcome).toBe('no_matching_app');
    expectError(await entitlement(sessionId, victim.app.id), 404, 'LICENSE_NOT_PROVISIONED');
    expectError(await entitlement(sessionId, attacker.app.id), 404, 'LICENSE_NOT_PROVISIONED');
  });

  it('answers 404 LICENSE_NOT_FOUND once the license is revoked', async () => {
    const s = await sale({ build: false });
    await s.fulfil();
    const license = await db('licenses').where({ app_id: s.app.id }).first('id');
    expect((await call('POST', `/v1/licenses/${license.id}/revoke`, { token: s.dev.accessToken })).status).toBe(200);
    expectError(await entitlement(s.sessionId, s.app.id), 404, 'LICENSE_NOT_FOUND');
  });

  it.each([
    ['an unsubstituted placeholder', '{CHECKOUT_SESSION_ID}', 'app_x'],
    ['a non-session id', 'pi_123', 'app_x'],
    ['a missing app_id', newSessionId(), ''],
  ])('refuses %s with 400', async (_name, sessionId, appId) => {
    expectError(await call('GET', `/v1/public/checkout-session/${encodeURIComponent(sessionId)}/entitlement${appId ? `?app_id=${appId}` : ''}`), 400, 'VALIDATION_FAILED');
  });
});
