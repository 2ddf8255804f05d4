import { afterAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { randomFingerprint } from '../support/fixtures.js';
import { startTestServer } from '../support/server.js';
import { brokerOf, merchant, newEventId, PRODUCT_KEY, shopState } from './support.js';

const server = await startTestServer();
afterAll(() => server.close());
const m = await merchant(server);
const db = server.database.db;
const DAY_MS = 86_400_000;

type Broker = ReturnType<typeof brokerOf>;
const activate = (key: string, device: string) => m.call('POST', '/v1/licenses/activate', { body: { license_key: key, device_fingerprint: device } });
const refresh = (key: string, device: string) => m.call('POST', '/v1/licenses/refresh', { body: { license_key: key, device_fingerprint: device } });
const startTrial = (b: Broker, extra: Record<string, unknown> = {}) => b.companion('POST', 'trial', { shop: b.shop, event_id: newEventId(), occurred_at: b.at(), ...extra });

describe('GET {webhook_url}/entitlement', () => {
  it("reads a shop's state without changing it", async () => {
    const b = brokerOf(m);
    const none = await b.entitlement();
    expect(none.body).toEqual({ ok: true, shop: b.shop, entitled: false, status: null, trial: false, trial_kind: null, license_key: null, delivery_url: null, expires_at: null });
    const grant = await b.send(b.event({ trial: true }));
    const read = await b.entitlement(`shop=${b.shop.toUpperCase()}&app=${PRODUCT_KEY}`);
    expect(read.body).toEqual({
      ok: true,
      shop: b.shop,
      entitled: true,
      status: 'ACTIVE',
      trial: true,
      trial_kind: 'subscription',
      license_key: grant.body.license_key,
      delivery_url: grant.body.delivery_url,
      expires_at: null,
    });
    await b.send(b.event({ entitled: false }));
    expect((await b.entitlement()).body).toMatchObject({ entitled: false, status: 'REVOKED', trial: false });
  });

  it('answers 409 to an app mismatch and 400 without a shop', async () => {
    const b = brokerOf(m);
    expectError(await b.entitlement(`shop=${b.shop}&app=other`), 409, 'APP_MISMATCH');
    expectError(await b.entitlement('app=notes-pro'), 400, 'VALIDATION_FAILED');
  });
});

describe('POST {webhook_url}/delivery-email', () => {
  it('stores the address and sends once per address; null clears it; an app mismatch is accepted and recorded', async () => {
    const b = brokerOf(m);
    const post = (email: string | null, app?: string) => b.companion('POST', 'delivery-email', { shop: b.shop, email, ...(app && { app }) });
    expectError(await post('a@shop.example'), 404, 'LICENSE_NOT_FOUND');
    await b.send(b.event());
    const cases: [string | null, string | undefined, { email_sent: boolean; app_mismatch: boolean }][] = [
      ['a@shop.example', undefined, { email_sent: true, app_mismatch: false }],
      ['a@shop.example', PRODUCT_KEY, { email_sent: false, app_mismatch: false }],
      ['b@shop.example', 'wrong-app', { email_sent: true, app_mismatch: true }],
      [null, undefined, { email_sent: false, app_mismatch: false }],
    ];
    for (const [email, app, expected] of cases) {
      const res = await post(email, app);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual({ ok: true, shop: b.shop, email, ...expected });
    }
    const { license, row } = await shopState(m, b.shop);
    expect(license.email).toBeNull();
    expect(row.delivery_email).toBeNull();
    const sent = await db('email_outbox').where({ license_id: license.id }).orderBy('created_at').pluck('recipient');
    expect(sent.sort()).toEqual(['a@shop.example', 'b@shop.example']);
    const recorded = await db('entitlement_events').where({ store_license_id: row.id, kind: 'delivery_email' });
    expect(recorded).toMatchObject([{ app_value: 'wrong-app', note: 'app_mismatch' }]);
    expectError(await post('not-an-address'), 400, 'VALIDATION_FAILED');
  });
});

describe('POST {webhook_url}/trial: the no-commitment trial', () => {
  it('mints a 14-day trial whose clock starts at the first run, idempotent by state, no fee', async () => {
    const b = brokerOf(m);
    const first = await startTrial(b);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ action: 'granted', entitled: true, status: 'ACTIVE', trial: true, trial_kind: 'no_commitment', expires_at: null });
    const again = await startTrial(b, { app: PRODUCT_KEY });
    expect(again.body).toMatchObject({ action: 'noop', license_key: first.body.license_key, delivery_url: first.body.delivery_url, expires_at: null });
    const { license, fees } = await shopState(m, b.shop);
    expect(license).toMatchObject({ license_type: 'trial', expires_at: null });
    expect(fees).toHaveLength(0);

    const device = randomFingerprint();
    expect((await activate(first.body.license_key, device)).status).toBe(200);
    const started = Date.parse((await b.entitlement()).body.expires_at);
    expect(started - server.clock.now().getTime()).toBeGreaterThan(14 * DAY_MS - 60_000);
    // Store events never end it.
    expect((await b.send(b.event({ entitled: false }))).body).toMatchObject({ action: 'noop', note: 'trial_unaffected_by_store' });
    expect((await refresh(first.body.license_key, device)).status).toBe(200);
  });

  it('is enforced at activation and refresh once 14 days have passed', async () => {
    const b = brokerOf(m);
    const key = (await startTrial(b)).body.license_key;
    const device = randomFingerprint();
    expect((await activate(key, device)).status).toBe(200);
    server.clock.advance(14 * DAY_MS + 1000);
    try {
      expectError(await activate(key, device), 403, 'LICENSE_EXPIRED');
      expectError(await refresh(key, device), 403, 'LICENSE_EXPIRED');
      expect((await b.entitlement()).body).toMatchObject({ entitled: false, status: 'EXPIRED' });
      // A paid event brings it back, same key, expiry lifted.
      expect((await b.send(b.event())).body).toMatchObject({ action: 'reactivated', note: 'trial_converted', license_key: key });
      expect((await activate(key, device)).status).toBe(200);
    } finally {
      server.clock.advance(-(14 * DAY_MS + 1000));
    }
  });

  it('allows one trial per computer whatever the store; a converted paying trial frees the computer', async () => {
    const device = randomFingerprint();
    const [one, two] = [brokerOf(m), brokerOf(m)];
    const keyOne = (await startTrial(one)).body.license_key;
    const keyTwo = (await startTrial(two)).body.license_key;
    expect((await activate(keyOne, device)).status).toBe(200);
    expectError(await activate(keyTwo, device), 403, 'TRIAL_ALREADY_USED');
    expect((await one.send(one.event())).body).toMatchObject({ action: 'noop', note: 'trial_converted' });
    expect((await one.entitlement()).body).toMatchObject({ trial: false, expires_at: null });
    expect((await activate(keyTwo, device)).status).toBe(200);
  });

  it('answers 409 to an app mismatch', async () => {
    const b = brokerOf(m);
    expectError(await startTrial(b, { app: 'other' }), 409, 'APP_MISMATCH');
    expect((await shopState(m, b.shop)).row).toBeUndefined();
  });
});

describe('POST {webhook_url}/redact', () => {
  const redact = (b: Broker, extra: Record<string, unknown> = {}) => b.companion('POST', 'redact', { shop: b.shop, app: PRODUCT_KEY, ...extra });

  it.each([
    ['a paying store', {}, 'store_paying'],
    ['a live subscription trial', { trial: true }, 'live_subscription_trial'],
  ])('refuses %s with 409 unless force', async (_name, grant, reason) => {
    const b = brokerOf(m);
    await b.send(b.event(grant));
    const refused = await redact(b);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error_code: 'STORE_STILL_ENTITLED', reason });
    expect((await redact(b, { force: true })).body).toMatchObject({ redacted: true, license_status: 'EXPIRED' });
  });

  it('removes the shop, emails, attribution, delivery link and history; keeps the anonymised expired row and device hashes', async () => {
    const b = brokerOf(m);
    const grant = await b.send(b.event({ customer_email: 'gdpr@shop.example', shop_gid: 'gid://shopify/Shop/7', subscription_name: 'Pro' }));
    const device = randomFingerprint();
    expect((await activate(grant.body.license_key, device)).status).toBe(200);
    await b.send(b.event({ entitled: false }));
    const { row, license } = await shopState(m, b.shop);

    const res = await redact(b);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      ok: true,
      shop: b.shop,
      redacted: true,
      license_status: 'EXPIRED',
      removed: ['shop_domain', 'emails', 'subscription_name', 'attribution', 'delivery_links', 'event_history'],
      kept: ['license_row_anonymised', 'device_fingerprint_hashes', 'trial_history', 'fee_ledger'],
    });
    const after = await db('store_licenses').where({ id: row.id }).first();
    expect(after).toMatchObject({ shop: null, delivery_email: null, subscription_name: null, attribution: {}, delivery_token_hash: null });
    expect(await db('licenses').where({ id: license.id }).first()).toMatchObject({ status: 'EXPIRED', email: null });
    expect(await db('entitlement_events').where({ store_license_id: row.id })).toHaveLength(0);
    expect(await db('email_outbox').where({ license_id: license.id })).toHaveLength(0);
    expect(await db('devices').where({ license_id: license.id })).toHaveLength(0); // deactivated by the revoke
    expect(JSON.stringify(await db('store_licenses').where({ id: row.id }).first())).not.toContain(b.shop);
    expect((await m.call('GET', new URL(grant.body.delivery_url).pathname)).status).toBe(404);
    // Expired: the installed copy asks for a key.
    expectError(await activate(grant.body.license_key, device), 403, 'LICENSE_EXPIRED');
    expect((await redact(b)).body).toMatchObject({ redacted: false, removed: [], kept: [] });
  });

  it('lets an active no-commitment trial keep running, and keeps its device hashes', async () => {
    const b = brokerOf(m);
    const key = (await startTrial(b)).body.license_key;
    const device = randomFingerprint();
    expect((await activate(key, device)).status).toBe(200);
    const { license } = await shopState(m, b.shop);
    expect((await redact(b)).body).toMatchObject({ redacted: true, license_status: 'ACTIVE' });
    expect(await db('devices').where({ license_id: license.id })).toHaveLength(1);
    expect(await db('trial_starts').where({ license_id: license.id })).toHaveLength(1);
    expect((await refresh(key, device)).status).toBe(200);
  });

  it('answers 409 to an app mismatch and 400 without `app`', async () => {
    const b = brokerOf(m);
    await b.send(b.event({ entitled: false }));
    expectError(await redact(b, { app: 'other' }), 409, 'APP_MISMATCH');
    expectError(await b.companion('POST', 'redact', { shop: b.shop }), 400, 'VALIDATION_FAILED');
  });
});

describe('POST {webhook_url}/reset-devices', () => {
  const reset = (b: Broker, app = PRODUCT_KEY) => b.companion('POST', 'reset-devices', { shop: b.shop, app });

  it('deactivates every computer, 3 times in 30 days; the fourth is 429 with Retry-After', async () => {
    const b = brokerOf(m);
    const key = (await b.send(b.event())).body.license_key;
    const offsetBefore = server.clock.offsetMs;
    try {
      for (const remaining of [2, 1, 0]) {
        const devices = [randomFingerprint(), randomFingerprint()];
        for (const d of devices) expect((await activate(key, d)).status).toBe(200);
        const res = await reset(b);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body).toMatchObject({ ok: true, shop: b.shop, devices_removed: 2, resets_remaining: remaining });
        if (remaining > 0) expect(Date.parse(res.body.next_reset_available_at)).toBeLessThanOrEqual(server.clock.now().getTime());
        else expect(Date.parse(res.body.next_reset_available_at)).toBeGreaterThan(server.clock.now().getTime() + 27 * DAY_MS);
        expectError(await refresh(key, devices[0]!), 403, 'DEVICE_NOT_ACTIVATED');
        // Each computer the store reset is a row of the license's deactivation history.
        const { license } = await shopState(m, b.shop);
        const history = await m.call('GET', `/v1/licenses/${license.id}/deactivations?limit=100`, { apiKey: m.dev.apiKey });
        expect(history.status, JSON.stringify(history.body)).toBe(200);
        expect(history.body.filter((row: { source: string }) => row.source === 'store_reset')).toHaveLength(2 * (3 - remaining));
        server.clock.advance(DAY_MS);
      }
      const fourth = await reset(b);
      expectError(fourth, 429, 'RATE_LIMITED');
      const retryAfter = Number(fourth.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(26 * 86_400);
      expect(retryAfter).toBeLessThanOrEqual(27 * 86_400);
      server.clock.advance(retryAfter * 1000);
      expect((await reset(b)).body).toMatchObject({ resets_remaining: 0 });
    } finally {
      server.clock.offsetMs = offsetBefore;
    }
  });

  it("frees a floating license's seats with its computers, and a revocation does too", async () => {
    const floating = await merchant(server, { sold_seat_model: 'floating', sold_max_concurrent: 1, sold_lease_ttl_minutes: 1440 });
    const b = brokerOf(floating);
    const key = (await b.send(b.event())).body.license_key;
    expect((await activate(key, randomFingerprint())).status).toBe(200);
    expect((await activate(key, randomFingerprint())).body).toMatchObject({ status_code: 409, error_code: 'NO_SEAT_AVAILABLE' });
    expect((await reset(b)).body).toMatchObject({ devices_removed: 1 });
    // The seat went with the computer: another one takes it at once, not when its lease would have ended.
    expect((await activate(key, randomFingerprint())).status).toBe(200);

    // Revoked by the store and granted again: no seat is still held for a computer the revocation took off.
    expect((await b.send(b.event({ entitled: false }))).status).toBe(200);
    expect((await b.send(b.event())).status).toBe(200);
    expect((await activate(key, randomFingerprint())).status).toBe(200);
  });

  it('never gives a computer a second free trial', async () => {
    const [one, two] = [brokerOf(m), brokerOf(m)];
    const device = randomFingerprint();
    const keyOne = (await startTrial(one)).body.license_key;
    expect((await activate(keyOne, device)).status).toBe(200);
    expect((await reset(one)).body.devices_removed).toBe(1);
    const keyTwo = (await startTrial(two)).body.license_key;
    expectError(await activate(keyTwo, device), 403, 'TRIAL_ALREADY_USED');
    // The same trial comes back on the same computer; its clock kept running.
    expect((await activate(keyOne, device)).status).toBe(200);
  });

  it('answers 404 without a license and 409 to an app mismatch', async () => {
    const b = brokerOf(m);
    expectError(await reset(b), 404, 'LICENSE_NOT_FOUND');
    await b.send(b.event());
    expectError(await reset(b, 'other'), 409, 'APP_MISMATCH');
  });
});
