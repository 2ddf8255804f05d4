import { createHash } from 'node:crypto';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { owner, settled, upload, uploadBuild, type Owner } from '../builds/support.js';
import { peFile } from '../support/executables.js';
import { otherApp, readyBuild } from '../updates/support.js';
import { tenant, type Tenant } from '../licensing/world.js';
import { setPlan } from '../support/fixtures.js';
import { createBatch } from '../redemption/support.js';
import { expectError } from '../support/assertions.js';
import type { ApiResponse } from '../support/http.js';
import { startTestServer } from '../support/server.js';

// Small quotas, so a test reaches them in a few requests (docs/contract.md, Limits: per-tenant quotas).
const server = await startTestServer({
  env: {
    LATCHKEY_QUOTA_LICENSES_PER_HOUR: '6',
    LATCHKEY_QUOTA_EMAILS_PER_HOUR: '3',
    LATCHKEY_QUOTA_CODES_PER_BATCH: '20',
    LATCHKEY_QUOTA_CODES_PER_DAY: '30',
    LATCHKEY_QUOTA_STORAGE_BYTES_FREE: '3000',
    LATCHKEY_QUOTA_STORAGE_BYTES_PRO: '100000',
  },
});
afterAll(() => server.close());

/** Hourly windows are clock hours: a test that straddles one would see its count reset midway. */
beforeEach(async () => {
  const left = 3_600_000 - (Date.now() % 3_600_000);
  if (left < 20_000) await new Promise((r) => setTimeout(r, left + 500));
});

const createLicense = (t: Tenant, body: Record<string, unknown> = {}) => t.call('POST', '/v1/licenses', { apiKey: t.dev.apiKey, body: { app_id: t.app.id, ...body } });
const provision = (t: Tenant, body: Record<string, unknown> = {}) =>
  t.call('POST', '/v1/marketplace/licenses', {
    apiKey: t.dev.apiKey,
    body: { app_id: t.app.id, channel: 'gumroad', marketplace_order_id: `order_${Math.random().toString(16).slice(2)}`, ...body },
  });

/** How many rows of `table` match. */
const rowsOf = async (table: string, where: Record<string, string>) =>
  Number((await server.database.db(table).where(where).count<{ count: string | number }[]>('* as count'))[0]!.count);

const statuses = (responses: ApiResponse[]) => responses.map((r) => r.status).sort();

function expectRetryAfter(res: ApiResponse, atMost: number): void {
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(atMost);
}

describe('licenses minted per hour', () => {
  it('10 concurrent creations against a quota of 6: exactly 6 licenses, the rest 429 LICENSE_QUOTA_EXCEEDED with Retry-After; every route counts; other tenants unaffected', async () => {
    const a = await tenant(server);
    const b = await tenant(server);
    const answers = await Promise.all(Array.from({ length: 10 }, () => createLicense(a)));
    expect(statuses(answers)).toEqual([...Array(6).fill(201), ...Array(4).fill(429)]);
    const refused = answers.find((r) => r.status === 429)!;
    expectError(refused, 429, 'LICENSE_QUOTA_EXCEEDED');
    expect(refused.body.detail).toMatch(/6 licenses minted this hour/);
    expectRetryAfter(refused, 3600);
    expect(await rowsOf('licenses', { developer_id: a.dev.id })).toBe(6);

    // Marketplace provisioning mints licenses too: the same quota, nothing half-made.
    const viaMarketplace = await provision(a);
    expectError(viaMarketplace, 429, 'LICENSE_QUOTA_EXCEEDED');
    expectRetryAfter(viaMarketplace, 3600);

    // Another tenant has its own hour.
    expect((await createLicense(b)).status).toBe(201);
    expect((await provision(b)).status).toBe(201);
  });
});

describe('redemption codes per batch and per day', () => {
  it('a batch over the per-batch quota is 403 REDEMPTION_BATCH_TOO_LARGE; concurrent batches never pass the daily quota: 429 REDEMPTION_CODE_QUOTA_EXCEEDED with Retry-After', async () => {
    const t = await tenant(server);
    const tooLarge = await t.call('POST', `/v1/apps/${t.app.id}/redemption-batches`, { apiKey: t.dev.apiKey, body: { channel: 'appsumo', quantity: 21 } });
    expectError(tooLarge, 403, 'REDEMPTION_BATCH_TOO_LARGE');
    expect(tooLarge.body.detail).toMatch(/at most 20 codes/);

    const batch = (quantity: number) => t.call('POST', `/v1/apps/${t.app.id}/redemption-batches`, { apiKey: t.dev.apiKey, body: { channel: 'appsumo', quantity } });
    // 20 + 20 > 30: whichever commits second is refused, whole.
    const [first, second] = await Promise.all([batch(20), batch(20)]);
    expect(statuses([first!, second!])).toEqual([201, 429]);
    const refused = [first!, second!].find((r) => r.status === 429)!;
    expectError(refused, 429, 'REDEMPTION_CODE_QUOTA_EXCEEDED');
    expect(refused.body.detail).toMatch(/10 left/);
    expectRetryAfter(refused, 86_400);

    expect((await createBatch(t, { quantity: 10 })).codes).toHaveLength(10);
    expectError(await batch(1), 429, 'REDEMPTION_CODE_QUOTA_EXCEEDED');
    expect(await rowsOf('redemption_codes', { developer_id: t.dev.id })).toBe(30);
    // Another tenant has its own day.
    expect((await createBatch(await tenant(server), { quantity: 20 })).codes).toHaveLength(20);
  });
});

describe('delivery emails per hour', () => {
  it('provisioning with a customer email past the email quota is 429 EMAIL_QUOTA_EXCEEDED and keeps nothing; without an email it still works', async () => {
    const t = await tenant(server);
    const o = { server, call: t.call, dev: t.dev, app: t.app };
    expect((await settled(o, (await uploadBuild(o, { data: 'email quota build', name: 'tool.bin' })).id)).status).toBe('READY');
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => provision(t, { customer_email: `buyer${i}@example.com` })));
    expect(statuses(answers)).toEqual([201, 201, 201, 429, 429]);
    const refused = answers.find((r) => r.status === 429)!;
    expectError(refused, 429, 'EMAIL_QUOTA_EXCEEDED');
    expectRetryAfter(refused, 3600);
    expect(await rowsOf('email_outbox', { developer_id: t.dev.id, kind: 'license_delivery' })).toBe(3);
    // The refused sales left no license behind (their transaction rolled back, counts included).
    expect(await rowsOf('licenses', { developer_id: t.dev.id })).toBe(3);
    expect((await provision(t)).status).toBe(201);
  });
});

/** Starts a resumable upload of `bytes` to `o`'s app. */
const startUpload = (o: Owner, bytes: Buffer) =>
  o.call('POST', `/v1/apps/${o.app.id}/uploads`, {
    token: o.dev.accessToken,
    body: { filename: 'big.bin', size_bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex'), platform: 'cross_platform' },
  });

/** Sends all of `bytes` as the upload's one chunk; answers the status. */
const sendAll = async (o: Owner, uploadId: string, bytes: Buffer) =>
  (
    await fetch(`${server.url}/v1/apps/${o.app.id}/uploads/${uploadId}?offset=0`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${o.dev.accessToken}`, 'content-type': 'application/octet-stream' },
      body: new Uint8Array(bytes),
    })
  ).status;

describe('storage bytes per plan', () => {
  it("two concurrent uploads that together pass the free plan's bytes: one 201, one 403 STORAGE_QUOTA_EXCEEDED; Pro has more room", async () => {
    const o = await owner(server);
    const artifact = (tag: string) => ({ data: `${tag}:`.padEnd(2000, 'x'), name: 'tool.bin' });
    const answers = await Promise.all([
      upload(o, { file: artifact('one'), fields: { platform: 'cross_platform' } }),
      upload(o, { file: artifact('two'), fields: { platform: 'cross_platform' } }),
    ]);
    expect(statuses(answers)).toEqual([201, 403]);
    const refused = answers.find((r) => r.status === 403)!;
    expectError(refused, 403, 'STORAGE_QUOTA_EXCEEDED');
    expect(refused.body.detail).toMatch(/free plan's 3000 bytes/);
    expect(await rowsOf('builds', { developer_id: o.dev.id })).toBe(1);

    const pro = await tenant(server);
    const po = { server, call: pro.call, dev: pro.dev, app: pro.app };
    await uploadBuild(po, artifact('pro one'));
    await uploadBuild(po, artifact('pro two'));
  });

  it('counts an open upload session at its declared size, so chunks never completed cannot take space past the plan; completing it counts the build once', async () => {
    const o = await owner(server);
    const bytes = Buffer.from('session:'.padEnd(2000, 'y'));
    const held = await startUpload(o, bytes);
    expect(held.status).toBe(201);
    // 2000 of the free plan's 3000 bytes are held: neither a second session nor an upload fits beside it.
    expectError(await startUpload(o, bytes), 403, 'STORAGE_QUOTA_EXCEEDED');
    expectError(await upload(o, { file: { data: 'x'.repeat(1500), name: 'tool.bin' }, fields: { platform: 'cross_platform' } }), 403, 'STORAGE_QUOTA_EXCEEDED');
    expect(await rowsOf('upload_sessions', { developer_id: o.dev.id })).toBe(1);

    // Deleting the session gives its bytes back.
    expect((await o.call('DELETE', `/v1/apps/${o.app.id}/uploads/${held.body.id}`, { token: o.dev.accessToken })).status).toBe(204);
    const session = await startUpload(o, bytes);
    expect(session.status).toBe(201);
    expect(await sendAll(o, session.body.id, bytes)).toBe(200);
    // The build replaces the session's hold rather than adding to it.
    const completed = await o.call('POST', `/v1/apps/${o.app.id}/uploads/${session.body.id}/complete`, { token: o.dev.accessToken });
    expect(completed.status, JSON.stringify(completed.body)).toBe(201);
    expect(await rowsOf('builds', { developer_id: o.dev.id })).toBe(1);
  });

  /** A READY Windows build of a new app of `o`'s, and how to replace its package with a signed one holding `program`. */
  async function signableBuild(o: Parameters<typeof otherApp>[0]) {
    const windows = await otherApp(o, { platforms: ['win-x64'], protection_level: 'none' });
    const build = await readyBuild(windows, { platform: 'win-x64' });
    const replace = (program: string) =>
      upload(windows, {
        method: 'PUT',
        path: `/v1/apps/${windows.app.id}/builds/${build.id}/signed-package`,
        file: { data: new Uint8Array(peFile({ program, signature: 'pkcs7' })), name: 'signed.exe' },
        fileField: 'package',
      });
    return { windows, build, replace };
  }

  it('counts a signed package by what it adds over the package it replaces', async () => {
    const { windows, build, replace } = await signableBuild(await owner(server));
    const refused = await replace('x'.repeat(3500));
    expectError(refused, 403, 'STORAGE_QUOTA_EXCEEDED');
    expect((await windows.call('GET', `/v1/apps/${windows.app.id}/builds/${build.id}`, { token: windows.dev.accessToken })).body.signed_package_at).toBeNull();
    expect((await replace('a small program')).status).toBe(200);
  });

  it('after a downgrade leaves an account over its plan, a signed package no larger than the one it replaces is taken; a larger one is not', async () => {
    const pro = await tenant(server);
    const { replace } = await signableBuild({ server, call: pro.call, dev: pro.dev, app: pro.app });
    expect((await replace('a'.repeat(3500))).status).toBe(200);
    await setPlan(pro.call, server.adminToken, pro.dev.id, 'free');
    // Over the free plan's 3000 bytes now: re-signing in place adds nothing, so it is not refused.
    expect((await replace('b'.repeat(3500))).status).toBe(200);
    expectError(await replace('c'.repeat(3600)), 403, 'STORAGE_QUOTA_EXCEEDED');
  });

  it('completing an upload session is 403 STORAGE_QUOTA_EXCEEDED when a downgrade since it started leaves no room, and the session stays to complete later', async () => {
    const pro = await tenant(server);
    const o = { server, call: pro.call, dev: pro.dev, app: pro.app };
    const bytes = Buffer.from('downgraded:'.padEnd(5000, 'z'));
    const session = await startUpload(o, bytes);
    expect(session.status).toBe(201);
    expect(await sendAll(o, session.body.id, bytes)).toBe(200);
    await setPlan(o.call, server.adminToken, o.dev.id, 'free');
    const complete = () => o.call('POST', `/v1/apps/${o.app.id}/uploads/${session.body.id}/complete`, { token: o.dev.accessToken });
    expectError(await complete(), 403, 'STORAGE_QUOTA_EXCEEDED');
    expect(await rowsOf('builds', { developer_id: o.dev.id })).toBe(0);
    await setPlan(o.call, server.adminToken, o.dev.id, 'pro');
    expect((await complete()).status).toBe(201);
  });
});
