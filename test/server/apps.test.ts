import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { startFakeStripe, type FakeStripe } from '../support/fake-stripe.js';
import { createApp, registerDeveloper, type TestDeveloper } from '../support/fixtures.js';
import { client, type ApiResponse, type Call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { connectAccount as connectByOAuth } from '../support/connect-account.js';

let server: TestServer;
let call: Call;
let dev: TestDeveloper;
// Saving a Price ID checks it against the developer's connected account, here a fake Stripe's.
let stripe: FakeStripe;
let account: string;
beforeAll(async () => {
  stripe = await startFakeStripe();
  server = await startTestServer({ env: stripe.env });
  call = client(server.url);
  dev = await registerDeveloper(call);
  account = await connectAccount(dev);
});
afterAll(async () => {
  await server.close();
  await stripe.close();
});

const connectAccount = (owner: TestDeveloper): Promise<string> => connectByOAuth(server.url, stripe, owner.accessToken);

let priceSerial = 0;
/** A Price ID no other test uses (the uniqueness is global, across developers), on `dev`'s account. */
const newPriceId = () => {
  const id = `price_${process.pid}x${Date.now()}x${++priceSerial}`;
  stripe.addPrice(account, { id });
  return id;
};

const getApp = (id: string, owner = dev) => call('GET', `/v1/apps/${id}`, { token: owner.accessToken });
const updateApp = (id: string, body: unknown, owner = dev) => call('PUT', `/v1/apps/${id}`, { token: owner.accessToken, body });

describe('app CRUD', () => {
  it('creates an app with the documented defaults and a fingerprint salt', async () => {
    const res = await call('POST', '/v1/apps', { token: dev.accessToken, body: { name: 'Notes Pro', platforms: ['linux-x64', 'mac-arm64'] } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^app_/),
      name: 'Notes Pro',
      platforms: ['linux-x64', 'mac-arm64'],
      protection_level: 'standard',
      price_id: null,
      delivery_mode: 'all',
      product_key: null,
      trials_per_computer: 1,
      default_device_limit: 2,
      offline_grace_hours: 72,
      download_limit: null,
      app_deactivations_per_30_days: 3,
      sold_seat_model: 'node_locked',
      sold_max_concurrent: null,
      sold_lease_ttl_minutes: null,
      sold_meters: {},
      fingerprint_salt: expect.any(String),
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(res.body.fingerprint_salt.length).toBeGreaterThanOrEqual(32);
    expect(new Date(res.body.created_at).toISOString()).toBe(res.body.created_at);
  });

  it('gives each app its own fingerprint salt', async () => {
    const [a, b] = [await createApp(call, dev), await createApp(call, dev)];
    expect(a.fingerprint_salt).not.toBe(b.fingerprint_salt);
  });

  it('reads an app back as it was created, and lists it', async () => {
    const app = await createApp(call, dev, { protection_level: 'hardened', default_device_limit: 5, product_key: 'notes-pro' });
    const res = await getApp(app.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(app);
    const list = await call('GET', '/v1/apps?limit=100', { token: dev.accessToken });
    expect(list.body).toContainEqual(app);
  });

  it('PUT changes only the fields sent', async () => {
    const app = await createApp(call, dev, { offline_grace_hours: 48 });
    const change = { name: 'Notes Pro 2', delivery_mode: 'released_only', platforms: ['win-arm64'] };
    const res = await updateApp(app.id, change);
    expect(res.status).toBe(200);
    const { updated_at: _before, ...unchanged } = app;
    expect(res.body).toEqual({ ...unchanged, ...change, updated_at: expect.any(String) });
    expect((await getApp(app.id)).body).toEqual(res.body);
  });

  it('PUT with nothing to change is a 400', async () => {
    const app = await createApp(call, dev);
    expectError(await updateApp(app.id, {}), 400, 'VALIDATION_FAILED');
  });

  it('DELETE answers 204, then the app is gone', async () => {
    const app = await createApp(call, dev);
    const res = await call('DELETE', `/v1/apps/${app.id}`, { token: dev.accessToken });
    expect(res.status).toBe(204);
    expect(res.body).toBe('');
    expectError(await getApp(app.id), 404, 'APP_NOT_FOUND');
    expectError(await call('DELETE', `/v1/apps/${app.id}`, { token: dev.accessToken }), 404, 'APP_NOT_FOUND');
    expectError(await updateApp(app.id, { name: 'Back' }), 404, 'APP_NOT_FOUND');
  });

  it("lists only the caller's apps", async () => {
    const other = await registerDeveloper(call);
    const theirs = await createApp(call, other);
    const list = await call('GET', '/v1/apps?limit=100', { token: dev.accessToken });
    expect(list.body.map((a: { id: string }) => a.id)).not.toContain(theirs.id);
  });
});

describe('Price ID', () => {
  it('must be a Price ID (price_...), not a Product ID (prod_...)', async () => {
    expectError(await call('POST', '/v1/apps', { token: dev.accessToken, body: { name: 'X', platforms: ['win-x64'], price_id: 'prod_NWjs8kKbJWmuuc' } }), 400, 'VALIDATION_FAILED');
    const app = await createApp(call, dev);
    expectError(await updateApp(app.id, { price_id: 'prod_NWjs8kKbJWmuuc' }), 400, 'VALIDATION_FAILED');
    const priceId = newPriceId();
    expect((await updateApp(app.id, { price_id: priceId })).body.price_id).toBe(priceId);
  });

  it('backs one app only: reusing it answers 409 PRICE_ID_IN_USE, also across developers', async () => {
    const priceId = newPriceId();
    const owner = await createApp(call, dev, { price_id: priceId });
    const other = await registerDeveloper(call);
    // The same Price on the other developer's account too: the price rules pass, the uniqueness does not.
    stripe.addPrice(await connectAccount(other), { id: priceId });

    const ownSecondApp = await createApp(call, dev);
    expectError(await updateApp(ownSecondApp.id, { price_id: priceId }), 409, 'PRICE_ID_IN_USE');
    expect((await getApp(ownSecondApp.id)).body.price_id).toBeNull();
    expectError(await call('POST', '/v1/apps', { token: dev.accessToken, body: { name: 'Dup', platforms: ['win-x64'], price_id: priceId } }), 409, 'PRICE_ID_IN_USE');
    expectError(await call('POST', '/v1/apps', { token: other.accessToken, body: { name: 'Theirs', platforms: ['win-x64'], price_id: priceId } }), 409, 'PRICE_ID_IN_USE');
    // Saving it again on its own app is not a conflict.
    expect((await updateApp(owner.id, { price_id: priceId })).status).toBe(200);
  });

  it('is free again once its app clears it', async () => {
    const priceId = newPriceId();
    const first = await createApp(call, dev, { price_id: priceId });
    expect((await updateApp(first.id, { price_id: null })).body.price_id).toBeNull();
    expect((await createApp(call, dev, { price_id: priceId })).price_id).toBe(priceId);
  });
});

describe('pagination', () => {
  const TOTAL = 25;
  let owner: TestDeveloper;
  let ids: string[];

  beforeAll(async () => {
    owner = await registerDeveloper(call);
    ids = [];
    for (let i = 0; i < TOTAL; i++) ids.push((await createApp(call, owner, { name: `App ${i}` })).id);
  });

  const list = (query = '') => call('GET', `/v1/apps${query}`, { token: owner.accessToken });

  /** `rel` -> `{ limit, offset }` of each RFC 8288 link. */
  function links(res: ApiResponse): Record<string, { limit: number; offset: number }> {
    const out: Record<string, { limit: number; offset: number }> = {};
    for (const part of (res.headers.get('link') ?? '').split(',')) {
      const m = /<([^>]+)>;\s*rel="(\w+)"/.exec(part.trim());
      expect(m, `malformed Link part: ${part}`).toBeTruthy();
      const url = new URL(m![1]!, server.url);
      expect(url.pathname).toBe('/v1/apps');
      out[m![2]!] = { limit: Number(url.searchParams.get('limit')), offset: Number(url.searchParams.get('offset')) };
    }
    return out;
  }

  it('answers a bare array of 20 by default, oldest first, with X-Total-Count and Link', async () => {
    const res = await list();
    expect(res.status).toBe(200);
    expect(res.body.map((a: { id: string }) => a.id)).toEqual(ids.slice(0, 20));
    expect(res.headers.get('x-total-count')).toBe(String(TOTAL));
    const rel = links(res);
    expect(rel.next).toEqual({ limit: 20, offset: 20 });
    expect(rel.last).toEqual({ limit: 20, offset: 20 });
    expect(rel.prev).toBeUndefined();
  });

  it('pages with limit and offset', async () => {
    const res = await list('?limit=10&offset=10');
    expect(res.body.map((a: { id: string }) => a.id)).toEqual(ids.slice(10, 20));
    const rel = links(res);
    expect(rel.prev).toEqual({ limit: 10, offset: 0 });
    expect(rel.next).toEqual({ limit: 10, offset: 20 });
    expect(rel.last).toEqual({ limit: 10, offset: 20 });

    const lastPage = await list('?limit=10&offset=20');
    expect(lastPage.body.map((a: { id: string }) => a.id)).toEqual(ids.slice(20));
    expect(links(lastPage).next).toBeUndefined();
  });

  it('past the end answers an empty page that still counts the total', async () => {
    const res = await list('?offset=500');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    expect(res.headers.get('x-total-count')).toBe(String(TOTAL));
    expect(links(res).last).toEqual({ limit: 20, offset: 20 });
  });

  it('accepts a limit of 100 at most', async () => {
    expect((await list('?limit=100')).body).toHaveLength(TOTAL);
    for (const bad of ['?limit=101', '?limit=0', '?limit=abc', '?offset=-1']) expectError(await list(bad), 400, 'VALIDATION_FAILED');
  });
});
