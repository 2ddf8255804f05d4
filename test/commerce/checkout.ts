import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { connectAccount } from '../support/connect-account.js';
import { newEventId, signedEvent, type FakeStripe } from '../support/fake-stripe.js';
import { createApp, registerDeveloper, setPlan } from '../support/fixtures.js';
import type { Call } from '../support/http.js';
import type { TestServer } from '../support/server.js';
import { settled, uploadBuild } from '../builds/support.js';

/** Checkout helpers over a test server wired to a fake Stripe: sellers, and signed notifications delivered to it. */
export function checkoutHelpers(call: Call, stripe: FakeStripe, adminToken: string) {
  const deliver = (signed: { payload: string; header: string }, header: string | undefined = signed.header) =>
    call('POST', '/v1/webhooks/payments', { raw: { data: signed.payload, contentType: 'application/json' }, headers: header === undefined ? {} : { 'stripe-signature': header } });

  /** A developer (Pro, as paid sales need, unless `plan` says otherwise) with a connected account and an app (`appBody` on top) selling one Price. */
  async function seller(appBody: Record<string, unknown> = {}, plan: 'free' | 'pro' = 'pro') {
    const dev = await registerDeveloper(call);
    if (plan === 'pro') await setPlan(call, adminToken, dev.id, 'pro');
    const account = await connectAccount(call.baseUrl, stripe, dev.accessToken);
    const priceId = `price_${randomBytes(8).toString('hex')}`;
    stripe.addPrice(account, { id: priceId });
    const app = await createApp(call, dev, { ...appBody, price_id: priceId });
    return { dev, account, priceId, app };
  }

  function checkoutCompleted(account: string, sessionId: string, type = 'checkout.session.completed') {
    return signedEvent({ id: newEventId(), type, account, data: { object: { id: sessionId, object: 'checkout.session' } } });
  }

  /** Uploads a small cross-platform build of the seller's app and waits for it to be READY. */
  async function readyBuild(server: TestServer, s: Awaited<ReturnType<typeof seller>>, bytes: Buffer) {
    const owner = { server, call, dev: s.dev, app: s.app };
    const build = await settled(owner, (await uploadBuild(owner, { data: new Uint8Array(bytes), name: 'tool.bin' })).id);
    expect(build.status).toBe('READY');
    return build as { id: string; sha256: string; version: string | null };
  }

  return { deliver, seller, checkoutCompleted, readyBuild };
}
