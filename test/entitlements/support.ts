import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { settled, uploadBuild } from '../builds/support.js';
import { createApp, registerDeveloper, setPlan, type TestDeveloper } from '../support/fixtures.js';
import { client, type ApiResponse, type Call } from '../support/http.js';
import type { TestServer } from '../support/server.js';

export const PRODUCT_KEY = 'notes-pro';

export interface Merchant {
  server: TestServer;
  call: Call;
  dev: TestDeveloper;
  app: { id: string; fingerprint_salt: string } & Record<string, unknown>;
  /** The webhook URL's path on the test server. */
  path: string;
  webhookUrl: string;
  secret: string;
}

/** A Pro developer with an app (product key `notes-pro`) and its entitlement webhook enabled. */
export async function merchant(server: TestServer, appBody: Record<string, unknown> = {}): Promise<Merchant> {
  const call = client(server.url);
  const dev = await registerDeveloper(call);
  await setPlan(call, server.adminToken, dev.id, 'pro');
  const app = await createApp(call, dev, { product_key: PRODUCT_KEY, ...appBody });
  const res = await call('POST', `/v1/apps/${app.id}/entitlement-webhook`, { token: dev.accessToken });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const webhookUrl = res.body.webhook_url as string;
  return { server, call, dev, app, webhookUrl, path: new URL(webhookUrl).pathname, secret: res.body.secret };
}

export const newShop = () => `shop-${randomBytes(5).toString('hex')}.myshopify.com`;
export const newEventId = () => `evt-${randomBytes(8).toString('hex')}`;

/** Strictly increasing event times, one second apart, from a fixed start. */
export function eventClock(start = Date.parse('2026-01-01T00:00:00Z')) {
  let t = start;
  return () => new Date((t += 1000)).toISOString();
}

export type EventBody = Record<string, unknown>;

/** The broker's side of one merchant: events and companion requests with the secret. */
export function brokerOf(m: Merchant, shop = newShop()) {
  const at = eventClock();
  const headers = (secret = m.secret) => ({ 'x-merchantops-secret': secret });
  return {
    shop,
    at,
    event: (fields: EventBody = {}): EventBody => ({ app: PRODUCT_KEY, shop, entitled: true, event_id: newEventId(), occurred_at: at(), ...fields }),
    send: (body: EventBody, secret?: string): Promise<ApiResponse> => m.call('POST', m.path, { body, headers: headers(secret) }),
    companion: (method: string, sub: string, body?: EventBody, secret?: string): Promise<ApiResponse> => m.call(method, `${m.path}/${sub}`, { body, headers: headers(secret) }),
    entitlement: (query = `shop=${shop}`): Promise<ApiResponse> => m.call('GET', `${m.path}/entitlement?${query}`, { headers: headers() }),
  };
}

/** What the database holds for a shop: its license and fee rows. */
export async function shopState(m: Merchant, shop: string) {
  const db = m.server.database.db;
  const row = await db('store_licenses').where({ app_id: m.app.id, shop }).first();
  const licenses = await db('licenses')
    .where({ app_id: m.app.id, source: 'commerce_platform' })
    .whereIn('id', row?.license_id ? [row.license_id] : []);
  const fees = row?.license_id ? await db('license_fees').where({ license_id: row.license_id }) : [];
  return { row, license: licenses[0], fees };
}

/** A READY build of the app for `platform`, with `bytes` as its package. */
export async function readyBuild(m: Merchant, platform: string, bytes = randomBytes(2048)) {
  const owner = { server: m.server, call: m.call, dev: m.dev, app: m.app };
  const build = await settled(owner, (await uploadBuild(owner, { data: new Uint8Array(bytes), name: `tool-${platform}.bin` }, { platform })).id);
  expect(build.status).toBe('READY');
  return build as { id: string; sha256: string; platform: string };
}
