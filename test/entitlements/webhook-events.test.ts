import { afterAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { randomFingerprint, setPlan } from '../support/fixtures.js';
import { startTestServer } from '../support/server.js';
import { brokerOf, merchant, newEventId, PRODUCT_KEY, shopState, type EventBody } from './support.js';

const server = await startTestServer();
afterAll(() => server.close());
const m = await merchant(server);

type Broker = ReturnType<typeof brokerOf>;

/** A step before the event under test: an event (fields over a valid grant), or the no-commitment trial. */
type Step = EventBody | 'trial';

interface Row {
  situation: string;
  before: Step[];
  event: EventBody | ((b: Broker) => EventBody);
  action: string;
  note: string | null;
  /** The response names the key and delivery URL. */
  grantType: boolean;
  /** The shop's license afterwards: its stored status, or null for none. */
  status: 'ACTIVE' | 'REVOKED' | null;
  fees: number;
}

const ROWS: Row[] = [
  { situation: 'entitled true, no license', before: [], event: {}, action: 'granted', note: null, grantType: true, status: 'ACTIVE', fees: 1 },
  { situation: 'entitled true, license already active', before: [{}], event: {}, action: 'noop', note: null, grantType: true, status: 'ACTIVE', fees: 1 },
  { situation: 'entitled true, license revoked', before: [{}, { entitled: false }], event: {}, action: 'reactivated', note: null, grantType: true, status: 'ACTIVE', fees: 1 },
  { situation: 'entitled false, license active', before: [{}], event: { entitled: false }, action: 'revoked', note: null, grantType: false, status: 'REVOKED', fees: 1 },
  {
    situation: 'entitled false, subscription trial',
    before: [{ trial: true }],
    event: { entitled: false },
    action: 'revoked',
    note: 'trial_ended',
    grantType: false,
    status: 'REVOKED',
    fees: 0,
  },
  {
    situation: 'entitled false, trial minted by a test event',
    before: [{ trial: true, test: true }],
    event: { entitled: false },
    action: 'revoked',
    note: null,
    grantType: false,
    status: 'REVOKED',
    fees: 0,
  },
  {
    situation: 'entitled false, active no-commitment trial',
    before: ['trial'],
    event: { entitled: false },
    action: 'noop',
    note: 'trial_unaffected_by_store',
    grantType: true,
    status: 'ACTIVE',
    fees: 0,
  },
  { situation: 'entitled false, no license', before: [], event: { entitled: false }, action: 'noop', note: null, grantType: false, status: null, fees: 0 },
  {
    situation: 'entitled true, subscription trial, then paid',
    before: [{ trial: true }],
    event: {},
    action: 'noop',
    note: 'trial_converted',
    grantType: true,
    status: 'ACTIVE',
    fees: 1,
  },
  { situation: 'entitled true with trial, no license', before: [], event: { trial: true }, action: 'granted', note: null, grantType: true, status: 'ACTIVE', fees: 0 },
  { situation: 'test subscription, no license', before: [], event: { test: true }, action: 'granted', note: null, grantType: true, status: 'ACTIVE', fees: 0 },
  {
    situation: 'no-commitment trial, then a trial event',
    before: ['trial'],
    event: { trial: true },
    action: 'noop',
    note: 'subscription_trial_started',
    grantType: true,
    status: 'ACTIVE',
    fees: 0,
  },
  { situation: 'no-commitment trial, then paid', before: ['trial'], event: {}, action: 'noop', note: 'trial_converted', grantType: true, status: 'ACTIVE', fees: 1 },
  // The revoke ended the trial: what comes back is a paid license (its first fee), no longer a trial.
  {
    situation: 'subscription trial revoked, then paid',
    before: [{ trial: true }, { entitled: false }],
    event: {},
    action: 'reactivated',
    note: null,
    grantType: true,
    status: 'ACTIVE',
    fees: 1,
  },
  {
    situation: 'older occurred_at than one processed (a grant after a revoke)',
    before: [{ entitled: false }],
    event: () => ({ occurred_at: '2025-12-31T00:00:00Z' }),
    action: 'stale_skipped',
    note: null,
    grantType: false,
    status: null,
    fees: 0,
  },
  {
    situation: 'older occurred_at than one processed (a revoke after a grant)',
    before: [{}],
    event: () => ({ entitled: false, occurred_at: '2025-12-31T00:00:00Z' }),
    action: 'stale_skipped',
    note: null,
    grantType: false,
    status: 'ACTIVE',
    fees: 1,
  },
  {
    situation: 'a revoke tied with an applied grant',
    before: [{ occurred_at: '2026-02-01T00:00:00Z' }],
    event: { entitled: false, occurred_at: '2026-02-01T00:00:00.000Z' },
    action: 'revoked',
    note: null,
    grantType: false,
    status: 'REVOKED',
    fees: 1,
  },
  {
    situation: 'a grant tied with an applied revoke',
    before: [{}, { entitled: false, occurred_at: '2026-02-01T00:00:00Z' }],
    event: { occurred_at: '2026-02-01T01:00:00+01:00' },
    action: 'stale_skipped',
    note: null,
    grantType: false,
    status: 'REVOKED',
    fees: 1,
  },
  { situation: 'wrong app value', before: [], event: { app: 'someone-else' }, action: 'unactionable', note: 'app_mismatch', grantType: false, status: null, fees: 0 },
];

async function runSteps(b: Broker, steps: Step[]) {
  for (const step of steps) {
    const res = step === 'trial' ? await b.companion('POST', 'trial', { shop: b.shop, event_id: newEventId(), occurred_at: b.at() }) : await b.send(b.event(step));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
}

describe("POST {webhook_url}: every outcome of docs/contract.md's table", () => {
  it.each(ROWS.map((r) => [r.situation, r] as const))('%s', async (_name, row) => {
    const b = brokerOf(m);
    await runSteps(b, row.before);
    const body = b.event(typeof row.event === 'function' ? row.event(b) : row.event);
    const res = await b.send(body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ ok: row.action !== 'unactionable', action: row.action, event_id: body.event_id, note: row.note });
    const { row: stored, license, fees } = await shopState(m, b.shop);
    expect(license?.status ?? null).toBe(row.status);
    expect(fees).toHaveLength(row.fees);
    if (row.grantType) {
      expect(res.body.license_key).toBe(license.license_key);
      expect(res.body.delivery_url).toMatch(new RegExp(`^${server.url}/d/[A-Za-z0-9_-]{43}$`));
    } else {
      expect(res.body.license_key).toBeNull();
      expect(res.body.delivery_url).toBeNull();
    }
    // Every event is recorded, applied or not.
    const recorded = await server.database.db('entitlement_events').where({ app_id: m.app.id, event_id: body.event_id }).first();
    expect(recorded.action).toBe(row.action);
    if (row.action === 'unactionable') expect(stored).toBeUndefined();
  });

  it('answers a repeated event_id with the original outcome, key and URL, changing nothing', async () => {
    const b = brokerOf(m);
    const grant = b.event({ customer_email: 'owner@shop.example' });
    const first = await b.send(grant);
    expect(first.body.action).toBe('granted');
    for (const again of [grant, { ...grant, entitled: false, occurred_at: b.at() }]) {
      const res = await b.send(again);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ...first.body, action: 'duplicate', original_action: 'granted' });
    }
    const { license, fees } = await shopState(m, b.shop);
    expect(license.status).toBe('ACTIVE');
    expect(fees).toHaveLength(1);
    const emails = await server.database.db('email_outbox').where({ license_id: license.id });
    expect(emails).toHaveLength(1);
  });

  it('deactivates the devices of a revoked license; the same key works again once reactivated', async () => {
    const b = brokerOf(m);
    const key = (await b.send(b.event())).body.license_key;
    const device = randomFingerprint();
    const activate = () => m.call('POST', '/v1/licenses/activate', { body: { license_key: key, device_fingerprint: device } });
    expect((await activate()).status).toBe(200);
    expect((await b.send(b.event({ entitled: false }))).body.action).toBe('revoked');
    expect(await server.database.db('devices').join('licenses', 'licenses.id', 'devices.license_id').where({ license_key: key })).toHaveLength(0);
    // The license's deactivation history says the store's revocation took the device off.
    const { license } = await shopState(m, b.shop);
    const history = await m.call('GET', `/v1/licenses/${license.id}/deactivations`, { token: m.dev.accessToken });
    expect(history.body).toMatchObject([{ source: 'revoked' }]);
    expectError(await activate(), 401, 'INVALID_LICENSE_KEY');
    const back = await b.send(b.event());
    expect(back.body).toMatchObject({ action: 'reactivated', license_key: key });
    expect((await activate()).status).toBe(200);
  });

  it('sends the standard delivery email once per address, with the permanent delivery URL and the key', async () => {
    const b = brokerOf(m);
    const res = await b.send(b.event({ customer_email: 'buyer@shop.example', subscription_name: 'Pro monthly' }));
    await b.send(b.event({ customer_email: 'buyer@shop.example' }));
    const { license, row } = await shopState(m, b.shop);
    const emails = await server.database.db('email_outbox').where({ license_id: license.id });
    expect(emails).toHaveLength(1);
    expect(emails[0].recipient).toBe('buyer@shop.example');
    expect(emails[0].text_body).toContain(res.body.delivery_url);
    expect(emails[0].text_body).toContain(license.license_key);
    expect(license.email).toBe('buyer@shop.example');
    expect(row.subscription_name).toBe('Pro monthly');
    // The store's license is shown by its delivery page's token, never by the address (the storefront lookup).
    const byAddress = await (await fetch(`${server.url}/download?app_id=${m.app.id}&email=buyer%40shop.example`)).text();
    expect(byAddress).toMatch(/being prepared/);
    expect(byAddress).not.toContain(license.license_key);
  });
});

describe('POST {webhook_url}: the payload', () => {
  it('keeps well-formed attribution, treats empty strings as absent and ignores malformed values', async () => {
    const b = brokerOf(m);
    const res = await b.send(
      b.event({
        source: '',
        subscription_gid: 'gid://shopify/AppSubscription/42',
        shop_gid: 'not a gid',
        order_gid: 17,
        order_number: '#1001',
        topic: 'APP_SUBSCRIPTIONS_UPDATE',
        status: 'ACTIVE',
        customer_email: 'not-an-address',
      }),
    );
    expect(res.status).toBe(200);
    expect(res.body.action).toBe('granted');
    const { row } = await shopState(m, b.shop);
    expect(row.attribution).toEqual({ subscription_gid: 'gid://shopify/AppSubscription/42', order_number: '#1001' });
    expect(row.delivery_email).toBeNull();
  });

  it.each([
    ['entitled as a string', { entitled: 'true' }],
    ['entitled as a number', { entitled: 1 }],
    ['entitled missing', { entitled: undefined }],
    ['no shop', { shop: undefined }],
    ['no event_id', { event_id: undefined }],
    ['an occurred_at that is no timestamp', { occurred_at: 'yesterday' }],
    // Well-formed, but outside what the database stores: a 400, never a 500 the broker retries for good.
    ['an occurred_at in the year 0000', { occurred_at: '0000-01-01T00:00:00Z' }],
    ['an occurred_at past the year 9999 once its offset is applied', { occurred_at: '9999-12-31T23:59:59-23:59' }],
    ['trial as a string', { trial: 'yes' }],
    ['a shop that is no domain', { shop: 'https://evil/<x>' }],
  ])('refuses %s with 400', async (_name, fields) => {
    const b = brokerOf(m);
    expectError(await b.send(b.event(fields)), 400, 'VALIDATION_FAILED');
    expect((await shopState(m, b.shop)).row).toBeUndefined();
  });

  it('refuses a missing or wrong secret with 401 and an unknown URL with 404', async () => {
    const b = brokerOf(m);
    expectError(await m.call('POST', m.path, { body: b.event() }), 401, 'UNAUTHORIZED');
    expectError(await b.send(b.event(), `${m.secret}x`), 401, 'UNAUTHORIZED');
    expectError(await m.call('POST', `/v1/entitlement-webhooks/${'A'.repeat(43)}`, { body: b.event(), headers: { 'x-merchantops-secret': m.secret } }), 404, 'NOT_FOUND');
    expect((await shopState(m, b.shop)).row).toBeUndefined();
  });

  it('names the product key in an `app` value compared exactly', async () => {
    const b = brokerOf(m);
    expect((await b.send(b.event({ app: PRODUCT_KEY.toUpperCase() }))).body.action).toBe('unactionable');
    expect((await b.send(b.event({ app: PRODUCT_KEY }))).body.action).toBe('granted');
  });

  it("grants nothing while the developer's Pro has lapsed (a permanent 403, nothing recorded) but still applies a revoke", async () => {
    const lapsed = await merchant(server);
    const paying = brokerOf(lapsed);
    expect((await paying.send(paying.event())).body.action).toBe('granted');
    await setPlan(lapsed.call, server.adminToken, lapsed.dev.id, 'free');

    const newcomer = brokerOf(lapsed);
    const refused = newcomer.event();
    expectError(await newcomer.send(refused), 403, 'PLAN_REQUIRED');
    expect((await shopState(lapsed, newcomer.shop)).row).toBeUndefined();
    expect((await paying.send(paying.event({ entitled: false }))).body.action).toBe('revoked');
    expectError(await paying.send(paying.event()), 403, 'PLAN_REQUIRED');

    // Renewed: the same decision, sent again, grants.
    await setPlan(lapsed.call, server.adminToken, lapsed.dev.id, 'pro');
    expect((await newcomer.send(refused)).body.action).toBe('granted');
  });
});
