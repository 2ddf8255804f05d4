import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLicense } from '../support/fixtures.js';
import { expectError } from '../support/assertions.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { DAY_MS, tenant, type Tenant } from './world.js';

let server: TestServer;
let t: Tenant;
beforeAll(async () => {
  server = await startTestServer();
  t = await tenant(server, { app: { default_device_limit: 3 } });
});
afterAll(() => server.close());

const KEY = /^[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{4}(-[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{4}){3}$/;

describe('create license', () => {
  it('mints a unique key with the app defaults', async () => {
    const res = await t.call('POST', '/v1/licenses', { apiKey: t.dev.apiKey, body: { app_id: t.app.id, email: 'buyer@example.com' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      license_id: expect.stringMatching(/^lic_[0-9a-f]{24}$/),
      license_key: expect.stringMatching(KEY),
      app_id: t.app.id,
      status: 'ACTIVE',
      license_type: 'perpetual',
      device_limit: 3,
      seat_model: 'node_locked',
      max_concurrent: null,
      lease_ttl_minutes: null,
      email: 'buyer@example.com',
      expires_at: null,
      features: {},
      meters: {},
      source: 'api',
      payment_session_id: null,
      download_limit: null,
      revoked_at: null,
      tamper_reports: 0,
      last_tamper_report_at: null,
      created_at: expect.any(String),
    });
    const other = await createLicense(t.call, t.dev, { app_id: t.app.id });
    expect(other.license_key).not.toBe(res.body.license_key);
  });

  it('takes device limit, type, expiry in days or as a date, features and download limit', async () => {
    const before = server.clock.now().getTime();
    const byDays = await createLicense(t.call, t.dev, {
      app_id: t.app.id,
      device_limit: 5,
      license_type: 'subscription',
      expiry_days: 30,
      features: { tier: 'pro', seats: 3, beta: true },
      download_limit: 25,
    });
    expect(byDays).toMatchObject({ device_limit: 5, license_type: 'subscription', features: { tier: 'pro', seats: 3, beta: true }, download_limit: 25 });
    expect(new Date(byDays.expires_at as string).getTime() - before).toBeGreaterThanOrEqual(30 * DAY_MS - 1000);
    expect(new Date(byDays.expires_at as string).getTime() - before).toBeLessThan(30 * DAY_MS + 60_000);

    const at = new Date(before + 90 * DAY_MS).toISOString();
    const byDate = await createLicense(t.call, t.dev, { app_id: t.app.id, expires_at: at });
    expect(byDate.expires_at).toBe(at);
  });

  it('leaves a trial without expiry unstarted (expires_at null until first activation)', async () => {
    const trial = await createLicense(t.call, t.dev, { app_id: t.app.id, license_type: 'trial' });
    expect(trial).toMatchObject({ license_type: 'trial', expires_at: null, status: 'ACTIVE' });
  });

  it.each([
    ['an unknown field', { extra: 1 }],
    ['a device limit of 0', { device_limit: 0 }],
    ['a fractional device limit', { device_limit: 1.5 }],
    ['an unknown license type', { license_type: 'lifetime' }],
    ['a malformed email', { email: 'not-an-email' }],
    ['both expiry forms', { expiry_days: 3, expires_at: new Date(Date.now() + 9 * DAY_MS).toISOString() }],
    ['an expiry in the past', { expires_at: '2001-01-01T00:00:00Z' }],
    // In UTC that is the year 10000, which no answer could show again.
    ['an expiry past the year 9999 once its offset is applied', { expires_at: '9999-12-31T23:00:00-02:00' }],
    ['zero expiry days', { expiry_days: 0 }],
    ['features that are not an object', { features: ['tier'] }],
    ['features too large', { features: { blob: 'x'.repeat(5000) } }],
  ])('refuses %s with 400 and creates nothing', async (_name, extra) => {
    const before = await t.call('GET', `/v1/licenses?app_id=${t.app.id}`, { apiKey: t.dev.apiKey });
    const res = await t.call('POST', '/v1/licenses', { apiKey: t.dev.apiKey, body: { app_id: t.app.id, ...extra } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error_code: 'VALIDATION_FAILED', status_code: 400, detail: expect.any(String) });
    const after = await t.call('GET', `/v1/licenses?app_id=${t.app.id}`, { apiKey: t.dev.apiKey });
    expect(after.headers.get('x-total-count')).toBe(before.headers.get('x-total-count'));
  });

  it('refuses a missing or unknown app', async () => {
    expect((await t.call('POST', '/v1/licenses', { apiKey: t.dev.apiKey, body: {} })).status).toBe(400);
    const res = await t.call('POST', '/v1/licenses', { apiKey: t.dev.apiKey, body: { app_id: 'app_000000000000000000000000' } });
    expect(res.status).toBe(404);
    expect(res.body.error_code).toBe('APP_NOT_FOUND');
  });

  it('needs a credential', async () => {
    const res = await t.call('POST', '/v1/licenses', { body: { app_id: t.app.id } });
    expect(res.status).toBe(401);
  });

  it('lets the free plan create trial licenses only (403 PLAN_REQUIRED otherwise)', async () => {
    const free = await tenant(server, { plan: 'free' });
    for (const license_type of ['perpetual', 'subscription', undefined]) {
      const res = await free.call('POST', '/v1/licenses', { apiKey: free.dev.apiKey, body: { app_id: free.app.id, license_type } });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ error_code: 'PLAN_REQUIRED', status_code: 403 });
    }
    const trial = await free.call('POST', '/v1/licenses', { apiKey: free.dev.apiKey, body: { app_id: free.app.id, license_type: 'trial' } });
    expect(trial.status).toBe(201);
    const list = await free.call('GET', '/v1/licenses', { apiKey: free.dev.apiKey });
    expect(list.body.map((l: any) => l.license_type)).toEqual(['trial']);
  });
});

describe('list, get, revoke, reset', () => {
  it("searches by license key or id (exact, any case) and by part of the email, within the developer's own licenses", async () => {
    const mine = await tenant(server);
    const other = await tenant(server);
    const ada = await createLicense(mine.call, mine.dev, { app_id: mine.app.id, email: 'Ada.Lovelace@example.com' });
    const bob = await createLicense(mine.call, mine.dev, { app_id: mine.app.id, email: 'bob@example.org' });
    const foreign = await createLicense(other.call, other.dev, { app_id: other.app.id, email: 'ada@example.com' });
    const search = async (q: string) => (await mine.call('GET', `/v1/licenses?q=${encodeURIComponent(q)}`, { apiKey: mine.dev.apiKey })).body.map((l: any) => l.license_id);

    expect(await search(ada.license_key.toLowerCase())).toEqual([ada.license_id]);
    expect(await search(bob.license_id)).toEqual([bob.license_id]);
    expect(await search('LOVELACE')).toEqual([ada.license_id]);
    expect(await search('example.')).toEqual([ada.license_id, bob.license_id]);
    // LIKE wildcards are plain characters; another developer's license is never found.
    expect(await search('%')).toEqual([]);
    expect(await search(foreign.license_key)).toEqual([]);
    expectError(await mine.call('GET', `/v1/licenses?q=${'x'.repeat(255)}`, { apiKey: mine.dev.apiKey }), 400, 'VALIDATION_FAILED');
  });

  it('lists with app and lower-case status filters and pagination headers', async () => {
    const mine = await tenant(server);
    const secondApp = await mine.call('POST', '/v1/apps', { token: mine.dev.accessToken, body: { name: 'Second', platforms: ['mac-arm64'] } });
    const a1 = await createLicense(mine.call, mine.dev, { app_id: mine.app.id });
    const a2 = await createLicense(mine.call, mine.dev, { app_id: mine.app.id, expiry_days: 1 });
    const a3 = await createLicense(mine.call, mine.dev, { app_id: mine.app.id });
    const b1 = await createLicense(mine.call, mine.dev, { app_id: secondApp.body.id });
    await mine.call('POST', `/v1/licenses/${a3.license_id}/revoke`, { apiKey: mine.dev.apiKey });

    const list = (q: string) => mine.call('GET', `/v1/licenses${q}`, { apiKey: mine.dev.apiKey });
    const ids = (res: any) => res.body.map((l: any) => l.license_id);

    const all = await list('');
    expect(ids(all)).toEqual([a1, a2, a3, b1].map((l) => l.license_id));
    expect(all.headers.get('x-total-count')).toBe('4');
    expect(ids(await list(`?app_id=${mine.app.id}`))).toEqual([a1, a2, a3].map((l) => l.license_id));
    expect(ids(await list('?status=revoked'))).toEqual([a3.license_id]);
    expect(ids(await list('?status=active'))).toEqual([a1, a2, b1].map((l) => l.license_id));
    expect(ids(await list('?status=demo'))).toEqual([]);

    const page = await list('?limit=2&offset=1');
    expect(ids(page)).toEqual([a2, a3].map((l) => l.license_id));
    expect(page.headers.get('link')).toContain('rel="next"');

    // Expiry is a matter of time: the same license reads as EXPIRED once its date passes.
    server.clock.advance(2 * DAY_MS);
    try {
      const expired = await list('?status=expired');
      expect(ids(expired)).toEqual([a2.license_id]);
      expect(expired.body[0].status).toBe('EXPIRED');
      expect(ids(await list(`?status=active&app_id=${mine.app.id}`))).toEqual([a1.license_id]);
    } finally {
      server.clock.advance(-2 * DAY_MS);
    }
  });

  it.each([['?status=ACTIVE'], ['?status=gone'], ['?limit=0'], ['?limit=101'], ['?offset=-1']])('refuses the list query %s with 400', async (q) => {
    expect((await t.call('GET', `/v1/licenses${q}`, { apiKey: t.dev.apiKey })).status).toBe(400);
  });

  it('gets a license with its devices', async () => {
    const lic = await createLicense(t.call, t.dev, { app_id: t.app.id });
    const res = await t.call('GET', `/v1/licenses/${lic.license_id}`, { token: t.dev.accessToken });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...lic, seats_in_use: null, devices: [] });
  });

  it('revokes at once and idempotently', async () => {
    const lic = await createLicense(t.call, t.dev, { app_id: t.app.id });
    const first = await t.call('POST', `/v1/licenses/${lic.license_id}/revoke`, { apiKey: t.dev.apiKey });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ license_id: lic.license_id, status: 'REVOKED', revoked_at: expect.any(String) });
    const again = await t.call('POST', `/v1/licenses/${lic.license_id}/revoke`, { apiKey: t.dev.apiKey });
    expect(again.body.revoked_at).toBe(first.body.revoked_at);
  });

  it('answers 404 for unknown license ids', async () => {
    for (const [method, path] of [
      ['GET', '/v1/licenses/lic_000000000000000000000000'],
      ['POST', '/v1/licenses/lic_000000000000000000000000/revoke'],
      ['POST', '/v1/licenses/lic_000000000000000000000000/reset-devices'],
    ] as const) {
      const res = await t.call(method, path, { apiKey: t.dev.apiKey });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error_code: 'LICENSE_NOT_FOUND', status_code: 404, detail: 'No such license', request_id: res.headers.get('x-request-id') });
    }
  });
});

describe('tenant isolation', () => {
  it("treats another developer's licenses and apps as not found, and changes nothing", async () => {
    const owner = await tenant(server);
    const intruder = await tenant(server);
    const lic = await createLicense(owner.call, owner.dev, { app_id: owner.app.id });

    for (const [method, path] of [
      ['GET', `/v1/licenses/${lic.license_id}`],
      ['POST', `/v1/licenses/${lic.license_id}/revoke`],
      ['POST', `/v1/licenses/${lic.license_id}/reset-devices`],
    ] as const) {
      const res = await intruder.call(method, path, { apiKey: intruder.dev.apiKey });
      expect(res.status).toBe(404);
      expect(res.body.error_code).toBe('LICENSE_NOT_FOUND');
    }
    const create = await intruder.call('POST', '/v1/licenses', { apiKey: intruder.dev.apiKey, body: { app_id: owner.app.id } });
    expect(create.status).toBe(404);
    expect(create.body.error_code).toBe('APP_NOT_FOUND');
    const list = await intruder.call('GET', `/v1/licenses?app_id=${owner.app.id}`, { apiKey: intruder.dev.apiKey });
    expect(list.body).toEqual([]);

    const still = await owner.call('GET', `/v1/licenses/${lic.license_id}`, { apiKey: owner.dev.apiKey });
    expect(still.body.status).toBe('ACTIVE');
  });
});
