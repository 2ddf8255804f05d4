import { afterAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { createApp, registerDeveloper, setPlan } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { startTestServer } from '../support/server.js';
import { brokerOf, merchant, PRODUCT_KEY } from './support.js';

const server = await startTestServer();
afterAll(() => server.close());
const call = client(server.url);
const HOUR_MS = 3_600_000;

const hookPath = (appId: string) => `/v1/apps/${appId}/entitlement-webhook`;

describe('enabling the entitlement webhook', () => {
  it('answers the URL and the secret once, and stores only their hashes', async () => {
    const m = await merchant(server);
    expect(m.webhookUrl).toMatch(new RegExp(`^${server.url}/v1/entitlement-webhooks/[A-Za-z0-9_-]{43}$`));
    expect(m.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    const stored = await server.database.db('entitlement_webhooks').where({ app_id: m.app.id }).first();
    expect(JSON.stringify(stored)).not.toContain(m.secret);
    expect(JSON.stringify(stored)).not.toContain(m.path.split('/').pop());
    const status = await call('GET', hookPath(m.app.id), { token: m.dev.accessToken });
    expect(status.body).toMatchObject({ enabled: true, product_key: PRODUCT_KEY, secret_rotated_at: null, previous_secret_expires_at: null });
    expect(JSON.stringify(status.body)).not.toContain(m.secret);
    expectError(await call('POST', hookPath(m.app.id), { token: m.dev.accessToken }), 409, 'ENTITLEMENT_WEBHOOK_ENABLED');
  });

  it('needs Pro: the free plan answers 403 PLAN_REQUIRED', async () => {
    const dev = await registerDeveloper(call);
    const app = await createApp(call, dev, { product_key: PRODUCT_KEY });
    expectError(await call('POST', hookPath(app.id), { token: dev.accessToken }), 403, 'PLAN_REQUIRED');
    expect((await call('GET', hookPath(app.id), { token: dev.accessToken })).body.enabled).toBe(false);
    await setPlan(call, server.adminToken, dev.id, 'pro');
    expect((await call('POST', hookPath(app.id), { apiKey: dev.apiKey })).status).toBe(201);
  });

  it("answers 404 for another tenant's app, for every operation", async () => {
    const m = await merchant(server);
    const other = await registerDeveloper(call);
    await setPlan(call, server.adminToken, other.id, 'pro');
    for (const [method, path] of [
      ['POST', hookPath(m.app.id)],
      ['GET', hookPath(m.app.id)],
      ['POST', `${hookPath(m.app.id)}/rotate-secret`],
      ['DELETE', hookPath(m.app.id)],
    ] as const) {
      expectError(await call(method, path, { token: other.accessToken }), 404, 'APP_NOT_FOUND');
    }
    const b = brokerOf(m);
    expect((await b.send(b.event())).status).toBe(200);
  });

  it('disabling makes the URL answer 404; enabling again gives a new URL', async () => {
    const m = await merchant(server);
    const b = brokerOf(m);
    expect((await call('DELETE', hookPath(m.app.id), { token: m.dev.accessToken })).status).toBe(204);
    expectError(await b.send(b.event()), 404, 'NOT_FOUND');
    expectError(await call('DELETE', hookPath(m.app.id), { token: m.dev.accessToken }), 404, 'ENTITLEMENT_WEBHOOK_NOT_FOUND');
    expectError(await call('POST', `${hookPath(m.app.id)}/rotate-secret`, { token: m.dev.accessToken }), 404, 'ENTITLEMENT_WEBHOOK_NOT_FOUND');
    const again = await call('POST', hookPath(m.app.id), { token: m.dev.accessToken });
    expect(again.status).toBe(201);
    expect(again.body.webhook_url).not.toBe(m.webhookUrl);
  });
});

describe('secret rotation', () => {
  it('keeps the old secret working for 24 hours, then 401', async () => {
    const m = await merchant(server);
    const b = brokerOf(m);
    const rotated = await call('POST', `${hookPath(m.app.id)}/rotate-secret`, { token: m.dev.accessToken });
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.secret as string;
    expect(fresh).not.toBe(m.secret);
    expect(Date.parse(rotated.body.previous_secret_expires_at) - server.clock.now().getTime()).toBeGreaterThan(24 * HOUR_MS - 60_000);

    expect((await b.send(b.event(), m.secret)).status).toBe(200);
    expect((await b.send(b.event(), fresh)).status).toBe(200);
    server.clock.advance(23 * HOUR_MS);
    expect((await b.send(b.event(), m.secret)).status).toBe(200);
    expect((await b.companion('POST', 'reset-devices', { shop: b.shop, app: PRODUCT_KEY }, m.secret)).status).toBe(200);
    server.clock.advance(HOUR_MS + 1000);
    expectError(await b.send(b.event(), m.secret), 401, 'UNAUTHORIZED');
    expectError(await b.companion('GET', `entitlement?shop=${b.shop}`, undefined, m.secret), 401, 'UNAUTHORIZED');
    expect((await b.send(b.event(), fresh)).status).toBe(200);
  });

  it('a second rotation ends the oldest secret at once', async () => {
    const m = await merchant(server);
    const b = brokerOf(m);
    const first = (await call('POST', `${hookPath(m.app.id)}/rotate-secret`, { token: m.dev.accessToken })).body.secret;
    const second = (await call('POST', `${hookPath(m.app.id)}/rotate-secret`, { token: m.dev.accessToken })).body.secret;
    expectError(await b.send(b.event(), m.secret), 401, 'UNAUTHORIZED');
    expect((await b.send(b.event(), first)).status).toBe(200);
    expect((await b.send(b.event(), second)).status).toBe(200);
  });

  // Each process remembers the webhooks it verified; a change made by another process (here: the
  // row written directly) must still take effect at once, for events and companion requests alike.
  it('a rotation or disable by another process takes effect at once here', async () => {
    const m = await merchant(server);
    const b = brokerOf(m);
    expect((await b.send(b.event())).status).toBe(200);
    expect((await b.entitlement()).status).toBe(200);
    const rows = () => server.database.db('entitlement_webhooks').where({ app_id: m.app.id });
    const stored = await rows().first();
    // Rotated twice elsewhere: the secret this process remembers ended at once.
    await rows().update({ secret_hash: 'f'.repeat(64), previous_secret_hash: 'e'.repeat(64), previous_secret_expires_at: new Date(server.clock.now().getTime() + HOUR_MS) });
    expectError(await b.send(b.event()), 401, 'UNAUTHORIZED');
    expectError(await b.entitlement(), 401, 'UNAUTHORIZED');
    // Rotated once elsewhere: the remembered secret is the previous one, still in its overlap.
    await rows().update({ secret_hash: 'f'.repeat(64), previous_secret_hash: stored.secret_hash, previous_secret_expires_at: new Date(server.clock.now().getTime() + HOUR_MS) });
    expect((await b.send(b.event())).status).toBe(200);
    await rows().update({ secret_hash: stored.secret_hash, previous_secret_hash: null, previous_secret_expires_at: null });
    expect((await b.send(b.event())).status).toBe(200);
    // Disabled elsewhere: the URL answers 404 and nothing is recorded.
    await rows().delete();
    const before = await server.database.db('entitlement_events').where({ app_id: m.app.id }).count<{ count: number }[]>('* as count');
    expectError(await b.send(b.event({ shop: 'another-shop.myshopify.com' })), 404, 'NOT_FOUND');
    expectError(await b.entitlement(), 404, 'NOT_FOUND');
    const after = await server.database.db('entitlement_events').where({ app_id: m.app.id }).count<{ count: number }[]>('* as count');
    expect(after).toEqual(before);
    expect(await server.database.db('store_licenses').where({ app_id: m.app.id, shop: 'another-shop.myshopify.com' }).first()).toBeUndefined();
  });
});
