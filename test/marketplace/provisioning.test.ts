import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { settled, uploadBuild } from '../builds/support.js';
import { tenant, type Tenant } from '../licensing/world.js';
import { expectError } from '../support/assertions.js';
import { startTestServer } from '../support/server.js';

const server = await startTestServer();
const db = server.database.db;
afterAll(() => server.close());

const PATH = '/v1/marketplace/licenses';
const orderId = () => `order_${randomBytes(6).toString('hex')}`;

async function readyBuild(t: Tenant) {
  const o = { server, call: t.call, dev: t.dev, app: t.app };
  const build = await settled(o, (await uploadBuild(o, { data: 'marketplace build', name: 'tool.bin' })).id);
  expect(build.status).toBe('READY');
  return build;
}

const provision = (t: Tenant, body: Record<string, unknown> = {}) =>
  t.call('POST', PATH, { apiKey: t.dev.apiKey, body: { app_id: t.app.id, channel: 'gumroad', marketplace_order_id: orderId(), ...body } });

const feesOf = (licenseId: string) => db('license_fees').where({ license_id: licenseId }).select('amount_cents', 'source');
const deliveryEmailsOf = (licenseId: string) => db('email_outbox').where({ license_id: licenseId, kind: 'license_delivery' }).select('recipient', 'text_body');

describe('POST /v1/marketplace/licenses', () => {
  it('provisions a license with X-API-Key: 201 with key, id, app name and a signed download link; source is the channel; one 4 USD fee', async () => {
    const t = await tenant(server);
    const build = await readyBuild(t);
    const res = await provision(t, { channel: 'appsumo', license_config: { device_limit: 5, expiry_days: 30, license_type: 'subscription' } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    // Issue 21 added `downloads` (one link per platform) beside the contract's four fields.
    expect(Object.keys(res.body).sort()).toEqual(['app_name', 'download_url', 'downloads', 'license_id', 'license_key']);
    expect(res.body.license_key).toMatch(/^[A-Z0-9]{4}(-[A-Z0-9]{4}){3}$/);
    expect(res.body.app_name).toBe('Notes Pro');
    expect(new URL(res.body.download_url).pathname).toBe(`/v1/downloads/${build.id}`);
    expect((await fetch(res.body.download_url)).status).toBe(200);

    const license = await t.call('GET', `/v1/licenses/${res.body.license_id}`, { apiKey: t.dev.apiKey });
    expect(license.body).toMatchObject({ license_key: res.body.license_key, source: 'appsumo', device_limit: 5, license_type: 'subscription', status: 'ACTIVE' });
    const expiresInDays = (Date.parse(license.body.expires_at) - Date.now()) / 86_400_000;
    expect(expiresInDays).toBeGreaterThan(29.9);
    expect(expiresInDays).toBeLessThan(30.1);
    expect(await feesOf(res.body.license_id)).toEqual([{ amount_cents: 400, source: 'appsumo' }]);
    // No customer_email: no delivery email.
    expect(await deliveryEmailsOf(res.body.license_id)).toEqual([]);
  });

  it("defaults to a perpetual license with the app's device limit and a null download_url while no build is READY", async () => {
    const t = await tenant(server);
    const res = await provision(t, { customer_email: 'buyer@example.com' });
    expect(res.status).toBe(201);
    expect(res.body.download_url).toBeNull();
    const license = (await t.call('GET', `/v1/licenses/${res.body.license_id}`, { apiKey: t.dev.apiKey })).body;
    expect(license).toMatchObject({ license_type: 'perpetual', expires_at: null, device_limit: 2, email: 'buyer@example.com', source: 'gumroad' });
    // An email needs a delivery surface: without a READY build none is queued.
    expect(await deliveryEmailsOf(res.body.license_id)).toEqual([]);
  });

  it('queues the delivery email with customer_email and a READY build, in the same transaction as the license', async () => {
    const t = await tenant(server);
    await readyBuild(t);
    const res = await provision(t, { customer_email: 'store.buyer@example.com' });
    expect(res.status).toBe(201);
    const emails = await deliveryEmailsOf(res.body.license_id);
    expect(emails).toHaveLength(1);
    expect(emails[0]!.recipient).toBe('store.buyer@example.com');
    expect(emails[0]!.text_body).toContain(res.body.license_key);
  });

  it('answers the same license for the same order id: 100 concurrent calls make one license and one fee', async () => {
    const t = await tenant(server);
    await readyBuild(t);
    const order = orderId();
    const body = { app_id: t.app.id, channel: 'gumroad', marketplace_order_id: order, customer_email: 'once@example.com' };
    const answers = await Promise.all(Array.from({ length: 100 }, () => t.call('POST', PATH, { apiKey: t.dev.apiKey, body })));
    expect(answers.map((a) => a.status)).toEqual(Array(100).fill(201));
    expect(new Set(answers.map((a) => a.body.license_key)).size).toBe(1);
    expect(new Set(answers.map((a) => a.body.license_id)).size).toBe(1);
    expect(answers.filter((a) => a.headers.get('idempotent-replayed') === 'true')).toHaveLength(99);
    const licenseId = answers[0]!.body.license_id;
    const list = await t.call('GET', `/v1/licenses?app_id=${t.app.id}`, { apiKey: t.dev.apiKey });
    expect(list.body.map((l: { license_id: string }) => l.license_id)).toEqual([licenseId]);
    expect(await feesOf(licenseId)).toHaveLength(1);
    expect(await deliveryEmailsOf(licenseId)).toHaveLength(1);

    // A later retry, even with other fields, answers the same license.
    const again = await t.call('POST', PATH, { apiKey: t.dev.apiKey, body: { ...body, channel: 'other', customer_email: 'other@example.com' } });
    expect(again.status).toBe(201);
    expect(again.body.license_id).toBe(licenseId);
    expect(await feesOf(licenseId)).toHaveLength(1);
  });

  it('keeps order ids per app: the same order id on another app is another license', async () => {
    const t = await tenant(server);
    const other = (await t.call('POST', '/v1/apps', { apiKey: t.dev.apiKey, body: { name: 'Second', platforms: ['linux-x64'] } })).body;
    const order = orderId();
    const a = await provision(t, { marketplace_order_id: order });
    const b = await t.call('POST', PATH, { apiKey: t.dev.apiKey, body: { app_id: other.id, channel: 'gumroad', marketplace_order_id: order } });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.body.license_id).not.toBe(a.body.license_id);
    expect(b.body.app_name).toBe('Second');
  });

  it('refunds by revoking the license; a replay of the order answers the revoked license without a download', async () => {
    const t = await tenant(server);
    await readyBuild(t);
    const order = orderId();
    const res = await provision(t, { marketplace_order_id: order });
    expect((await t.call('POST', `/v1/licenses/${res.body.license_id}/revoke`, { apiKey: t.dev.apiKey })).body.status).toBe('REVOKED');
    const replay = await provision(t, { marketplace_order_id: order });
    expect(replay.body).toMatchObject({ license_id: res.body.license_id, download_url: null });
    expect(await feesOf(res.body.license_id)).toHaveLength(1);
  });

  it('charges no fee for a trial, which the free plan may provision; paid types need Pro (403 PLAN_REQUIRED)', async () => {
    const t = await tenant(server, { plan: 'free' });
    const trial = await provision(t, { license_config: { license_type: 'trial' } });
    expect(trial.status).toBe(201);
    expect(await feesOf(trial.body.license_id)).toEqual([]);
    expectError(await provision(t), 403, 'PLAN_REQUIRED');
    expectError(await provision(t, { license_config: { license_type: 'subscription' } }), 403, 'PLAN_REQUIRED');
  });

  it.each([
    ['app_id', { app_id: undefined }],
    ['channel', { channel: undefined }],
    ['channel', { channel: 'Gum Road' }],
    ['marketplace_order_id', { marketplace_order_id: undefined }],
    ['customer_email', { customer_email: 'not-an-address' }],
    ['license_config.license_type', { license_config: { license_type: 'lifetime' } }],
    ['license_config.expiry_days', { license_config: { expiry_days: 0 } }],
    ['license_config.device_limit', { license_config: { device_limit: 'two' } }],
  ])('answers 400 naming %s', async (field, change) => {
    const t = await tenant(server);
    const res = await provision(t, change);
    expectError(res, 400, 'VALIDATION_FAILED');
    expect(res.body.detail).toContain(`body.${field}`);
  });

  it("answers 401 without a valid API key, and 404 for an unknown app or another developer's app", async () => {
    const t = await tenant(server);
    const other = await tenant(server);
    const body = { app_id: t.app.id, channel: 'gumroad', marketplace_order_id: orderId() };
    expectError(await t.call('POST', PATH, { body }), 401, 'UNAUTHORIZED');
    expectError(await t.call('POST', PATH, { apiKey: `${t.dev.apiKey}x`, body }), 401, 'UNAUTHORIZED');
    expectError(await t.call('POST', PATH, { apiKey: other.dev.apiKey, body }), 404, 'APP_NOT_FOUND');
    expectError(await t.call('POST', PATH, { apiKey: t.dev.apiKey, body: { ...body, app_id: 'app_missing' } }), 404, 'APP_NOT_FOUND');
    expect((await t.call('GET', `/v1/licenses?app_id=${t.app.id}`, { apiKey: t.dev.apiKey })).body).toEqual([]);
  });
});

describe('POST /v1/marketplace/licenses rate limit', () => {
  it('answers 429 with Retry-After beyond 60 requests a minute per developer', async () => {
    const limited = await startTestServer({ realRateLimits: true });
    try {
      const t = await tenant(limited);
      const body = { app_id: t.app.id, channel: 'gumroad', marketplace_order_id: 'same-order' };
      // 60 a minute: the 61st request of a window is refused. Should a window turn during the loop, the next allows 60 more.
      const statuses: number[] = [];
      for (let i = 0; i < 125 && statuses.at(-1) !== 429; i++) {
        const res = await t.call('POST', PATH, { apiKey: t.dev.apiKey, body });
        statuses.push(res.status);
        if (res.status === 429) {
          expectError(res, 429, 'RATE_LIMITED');
          expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
        } else {
          expect(res.status).toBe(201);
          expect(res.headers.get('ratelimit-limit')).toBe('60');
        }
      }
      expect(statuses.at(-1)).toBe(429);
      expect(statuses.length).toBeGreaterThanOrEqual(61);
    } finally {
      await limited.close();
    }
  });
});
