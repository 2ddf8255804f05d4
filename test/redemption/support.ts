import { expect } from 'vitest';
import { settled, uploadBuild } from '../builds/support.js';
import type { Tenant } from '../licensing/world.js';
import type { TestServer } from '../support/server.js';

/** docs/contract.md's `<CODE_PREFIX>-<8>-<4>`, with the service's prefix and its alphabet without look-alikes. */
export const CODE_FORMAT = /^LK-[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{8}-[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{4}$/;

export interface CreatedBatch {
  id: string;
  codes: string[];
  [field: string]: unknown;
}

/** A batch of `t`'s app through the API (Pro tenants may make any type; free ones trials). */
export async function createBatch(t: Tenant, body: Record<string, unknown> = {}): Promise<CreatedBatch> {
  const res = await t.call('POST', `/v1/apps/${t.app.id}/redemption-batches`, { apiKey: t.dev.apiKey, body: { channel: 'appsumo', quantity: 3, ...body } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

export const redeem = (t: Pick<Tenant, 'call'>, code: string, email?: string) => t.call('POST', '/v1/public/redeem', { body: email === undefined ? { code } : { code, email } });

/** Uploads a small build of `t`'s app and waits for it to be READY. */
export async function readyBuild(server: TestServer, t: Tenant) {
  const o = { server, call: t.call, dev: t.dev, app: t.app };
  const build = await settled(o, (await uploadBuild(o, { data: 'redeemable build', name: 'tool.bin' })).id);
  expect(build.status).toBe('READY');
  return build as { id: string } & Record<string, unknown>;
}

export async function batchesOf(t: Tenant) {
  const res = await t.call('GET', `/v1/apps/${t.app.id}/redemption-batches`, { apiKey: t.dev.apiKey });
  expect(res.status).toBe(200);
  return res.body as ({ id: string; counts: Record<string, number> } & Record<string, unknown>)[];
}
