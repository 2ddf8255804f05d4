import { afterAll, describe, expect, it } from 'vitest';
import { tenant } from '../licensing/world.js';
import { expectError } from '../support/assertions.js';
import { setPlan } from '../support/fixtures.js';
import { startTestServer } from '../support/server.js';
import { batchesOf, CODE_FORMAT, createBatch, readyBuild, redeem } from './support.js';

const server = await startTestServer();
const db = server.database.db;
afterAll(() => server.close());

const HOUR_MS = 3_600_000;
const feesOf = (licenseId: string) => db('license_fees').where({ license_id: licenseId }).select('amount_cents', 'source');
const licensesOf = async (t: Awaited<ReturnType<typeof tenant>>) =>
  (await t.call('GET', `/v1/licenses?app_id=${t.app.id}`, { apiKey: t.dev.apiKey })).body as Record<string, any>[];

describe('POST /v1/public/redeem', () => {
  it("mints the batch's license, bills the fee once, records email and time on the code, and answers the key and a download", async () => {
    const t = await tenant(server);
    const build = await readyBuild(server, t);
    const batch = await createBatch(t, {
      channel: 'appsumo',
      quantity: 2,
      device_limit: 4,
      license_expiry_days: 365,
      license_type: 'subscription',
      features: { tier: 'pro', beta: true },
    });
    const res = await redeem(t, batch.codes[0]!, 'redeemer@example.com');
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ app_name: 'Notes Pro', customer_email: 'redeemer@example.com', note: null });
    expect(new URL(res.body.download_url).pathname).toBe(`/v1/downloads/${build.id}`);
    expect((await fetch(res.body.download_url)).status).toBe(200);

    const [license, ...others] = await licensesOf(t);
    expect(others).toEqual([]);
    expect(license).toMatchObject({
      license_key: res.body.license_key,
      source: 'appsumo',
      device_limit: 4,
      license_type: 'subscription',
      features: { tier: 'pro', beta: true },
      email: 'redeemer@example.com',
      status: 'ACTIVE',
    });
    const days = (Date.parse(license!.expires_at) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(364.9);
    expect(days).toBeLessThan(365.1);
    expect(await feesOf(license!.license_id)).toEqual([{ amount_cents: 400, source: 'appsumo' }]);

    const code = await db('redemption_codes').where({ license_id: license!.license_id }).first('redeemed_email', 'redeemed_at', 'status');
    expect(code).toMatchObject({ redeemed_email: 'redeemer@example.com', status: 'redeemed' });
    expect(Math.abs(code.redeemed_at.getTime() - Date.now())).toBeLessThan(60_000);

    const emails = await db('email_outbox').where({ license_id: license!.license_id, kind: 'license_delivery' }).select('recipient', 'text_body');
    expect(emails).toHaveLength(1);
    expect(emails[0]).toMatchObject({ recipient: 'redeemer@example.com' });
    expect(emails[0]!.text_body).toContain(res.body.license_key);

    // The second code was untouched and is still redeemable once.
    expect((await batchesOf(t))[0]!.counts).toEqual({ available: 1, redeemed: 1, revoked: 0, expired: 0 });
  });

  it('without an email sends nothing and without a READY build answers a null download with a note; a perpetual batch license has no expiry', async () => {
    const t = await tenant(server);
    const batch = await createBatch(t, { quantity: 1 });
    const res = await redeem(t, batch.codes[0]!);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ download_url: null, download_expires_at: null, customer_email: null });
    expect(res.body.note).toMatch(/no build/i);
    const [license] = await licensesOf(t);
    expect(license).toMatchObject({ license_type: 'perpetual', expires_at: null, device_limit: 2, email: null, features: {} });
    expect(await db('email_outbox').where({ license_id: license!.license_id })).toEqual([]);
  });

  it('bills no fee for a trial batch, which the free plan may create; paid batches need Pro', async () => {
    const t = await tenant(server, { plan: 'free' });
    expectError(await t.call('POST', `/v1/apps/${t.app.id}/redemption-batches`, { apiKey: t.dev.apiKey, body: { channel: 'appsumo', quantity: 1 } }), 403, 'PLAN_REQUIRED');
    const batch = await createBatch(t, { quantity: 1, license_type: 'trial' });
    const res = await redeem(t, batch.codes[0]!);
    expect(res.status).toBe(201);
    const [license] = await licensesOf(t);
    expect(license!.license_type).toBe('trial');
    expect(await feesOf(license!.license_id)).toEqual([]);
  });

  it('keeps a paid code Available while its seller has no active Pro, with or without an email; a trial code still redeems', async () => {
    const t = await tenant(server);
    const paid = await createBatch(t, { quantity: 1 });
    const trial = await createBatch(t, { quantity: 1, license_type: 'trial' });
    await setPlan(t.call, server.adminToken, t.dev.id, 'free');
    for (const email of [undefined, 'buyer@example.com']) {
      const refused = await redeem(t, paid.codes[0]!, email);
      expectError(refused, 409, 'REDEMPTION_UNAVAILABLE');
      expect(refused.body.detail).toMatch(/seller's account is not active/);
    }
    expect((await redeem(t, trial.codes[0]!)).status).toBe(201);
    expect((await batchesOf(t)).map((b) => b.counts.available)).toEqual([1, 0]);
    expect(await db('license_fees').where({ developer_id: t.dev.id })).toEqual([]);

    // Pro again: the same code redeems.
    await setPlan(t.call, server.adminToken, t.dev.id, 'pro');
    expect((await redeem(t, paid.codes[0]!)).status).toBe(201);
  });

  it('forgives case, spaces, missing dashes and a missing prefix', async () => {
    const t = await tenant(server);
    const batch = await createBatch(t, { quantity: 4 });
    const [a, b, c, d] = batch.codes as [string, string, string, string];
    const variants = [a.toLowerCase(), `  ${b.replaceAll('-', ' ')}  `, c.replaceAll('-', ''), d.slice(3).toLowerCase()];
    for (const variant of variants) expect((await redeem(t, variant)).status, variant).toBe(201);
    expect(await licensesOf(t)).toHaveLength(4);
  });

  it('answers each failure with its message: not found (typo, wrong format) 404, already redeemed 409, revoked 410, expired 410', async () => {
    const t = await tenant(server);
    const batch = await createBatch(t, { quantity: 3 });
    const [used, revoked] = batch.codes as [string, string];
    expect((await redeem(t, used)).status).toBe(201);
    expect((await t.call('POST', `/v1/redemption-codes/${revoked}/revoke`, { apiKey: t.dev.apiKey })).status).toBe(200);

    const typo = `${used.slice(0, -1)}${used.endsWith('A') ? 'B' : 'A'}`;
    for (const wrong of [typo, 'LK-1234', 'not a code', '']) {
      const res = await redeem(t, wrong);
      expectError(res, 404, 'REDEMPTION_CODE_NOT_FOUND');
      expect(res.body.detail).toMatch(/not found.*typos.*LK-XXXXXXXX-XXXX/i);
    }
    const again = await redeem(t, used);
    expectError(again, 409, 'REDEMPTION_CODE_ALREADY_REDEEMED');
    expect(again.body.detail).toMatch(/already been redeemed/);
    const gone = await redeem(t, revoked);
    expectError(gone, 410, 'REDEMPTION_CODE_REVOKED');
    expect(gone.body.detail).toMatch(/revoked/);
    expect(await licensesOf(t)).toHaveLength(1);
  });

  it('gives exactly one license when the same code is redeemed concurrently', async () => {
    const t = await tenant(server);
    const batch = await createBatch(t, { quantity: 1 });
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => redeem(t, batch.codes[0]!, `racer${i}@example.com`)));
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    for (const loser of answers.filter((a) => a.status !== 201)) expectError(loser, 409, 'REDEMPTION_CODE_ALREADY_REDEEMED');
    const licenses = await licensesOf(t);
    expect(licenses).toHaveLength(1);
    expect(await feesOf(licenses[0]!.license_id)).toHaveLength(1);
  });

  it('answers 400 naming the field for a malformed body', async () => {
    const t = await tenant(server);
    const batch = await createBatch(t, { quantity: 1 });
    const badEmail = await redeem(t, batch.codes[0]!, 'nope');
    expectError(badEmail, 400, 'VALIDATION_FAILED');
    expect(badEmail.body.detail).toContain('body.email');
    const noCode = await t.call('POST', '/v1/public/redeem', { body: { email: 'a@example.com' } });
    expectError(noCode, 400, 'VALIDATION_FAILED');
    expect(noCode.body.detail).toContain('body.code');
    expect((await batchesOf(t))[0]!.counts.available).toBe(1);
  });
});

describe('redemption batches', () => {
  it('generates unique codes of the form LK-<8>-<4>, stored only as hashes, and never shows them again', async () => {
    const t = await tenant(server);
    const batch = await createBatch(t, { quantity: 50, label: 'Launch week', channel: 'stacksocial' });
    expect(batch.codes).toHaveLength(50);
    for (const code of batch.codes) expect(code).toMatch(CODE_FORMAT);
    expect(new Set(batch.codes).size).toBe(50);
    expect(batch).toMatchObject({ quantity: 50, label: 'Launch week', channel: 'stacksocial', license_type: 'perpetual', license_expiry_days: 0, device_limit: 2 });

    const stored = JSON.stringify(await db('redemption_codes').where({ batch_id: batch.id }));
    const listed = JSON.stringify(await batchesOf(t));
    for (const code of batch.codes) {
      expect(stored).not.toContain(code);
      expect(listed).not.toContain(code);
    }
    expect((await batchesOf(t)).map((b) => [b.id, b.counts])).toEqual([[batch.id, { available: 50, redeemed: 0, revoked: 0, expired: 0 }]]);
  });

  it('exports the codes as CSV with Accept: text/csv', async () => {
    const t = await tenant(server);
    const res = await fetch(`${server.url}/v1/apps/${t.app.id}/redemption-batches`, {
      method: 'POST',
      headers: { 'x-api-key': t.dev.apiKey, 'content-type': 'application/json', accept: 'text/csv' },
      body: JSON.stringify({ channel: 'appsumo', quantity: 5, label: '=HYPERLINK("x"), "quoted"' }),
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="redemption-codes-.+\.csv"$/);
    const lines = (await res.text()).trimEnd().split('\r\n');
    expect(lines[0]).toBe('code,batch_id,channel,label');
    expect(lines).toHaveLength(6);
    const [batch] = await batchesOf(t);
    for (const line of lines.slice(1)) {
      const [code, batchId, channel] = line.split(',');
      expect(code).toMatch(CODE_FORMAT);
      expect(batchId).toBe(batch!.id);
      expect(channel).toBe('appsumo');
      // A formula-looking label is neutralised and quoted.
      expect(line.endsWith(`,"'=HYPERLINK(""x""), ""quoted"""`)).toBe(true);
    }
    // The exported codes work.
    expect((await redeem(t, lines[1]!.split(',')[0]!)).status).toBe(201);
  });

  it('revokes one code (again: same answer), refuses a redeemed one, and Revoke All revokes only the available codes', async () => {
    const t = await tenant(server);
    const batch = await createBatch(t, { quantity: 6 });
    const [redeemed, revokedOne] = batch.codes as [string, string];
    expect((await redeem(t, redeemed)).status).toBe(201);

    const revoke = (code: string) => t.call('POST', `/v1/redemption-codes/${encodeURIComponent(code)}/revoke`, { apiKey: t.dev.apiKey });
    const first = await revoke(revokedOne.toLowerCase());
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ code: revokedOne, batch_id: batch.id, status: 'revoked' });
    expect((await revoke(revokedOne)).body).toEqual(first.body);
    expectError(await revoke(redeemed), 409, 'REDEMPTION_CODE_NOT_REVOCABLE');
    expectError(await revoke('LK-22222222-2222'), 404, 'REDEMPTION_CODE_NOT_FOUND');

    const all = await t.call('POST', `/v1/redemption-batches/${batch.id}/revoke-all`, { apiKey: t.dev.apiKey });
    expect(all.body).toEqual({ batch_id: batch.id, revoked: 4 });
    expect((await t.call('POST', `/v1/redemption-batches/${batch.id}/revoke-all`, { apiKey: t.dev.apiKey })).body.revoked).toBe(0);
    expect((await batchesOf(t))[0]!.counts).toEqual({ available: 0, redeemed: 1, revoked: 5, expired: 0 });
    for (const code of batch.codes.slice(1)) expectError(await redeem(t, code), 410, 'REDEMPTION_CODE_REVOKED');
  });

  it("answers 404 for another developer's app, batch and code, and changes nothing", async () => {
    const owner = await tenant(server);
    const other = await tenant(server);
    const batch = await createBatch(owner, { quantity: 2 });
    const as = { apiKey: other.dev.apiKey };
    expectError(await other.call('POST', `/v1/apps/${owner.app.id}/redemption-batches`, { ...as, body: { channel: 'x', quantity: 1 } }), 404, 'APP_NOT_FOUND');
    expectError(await other.call('GET', `/v1/apps/${owner.app.id}/redemption-batches`, as), 404, 'APP_NOT_FOUND');
    expectError(await other.call('POST', `/v1/redemption-batches/${batch.id}/revoke-all`, as), 404, 'REDEMPTION_BATCH_NOT_FOUND');
    expectError(await other.call('POST', `/v1/redemption-codes/${batch.codes[0]}/revoke`, as), 404, 'REDEMPTION_CODE_NOT_FOUND');
    expect((await batchesOf(owner))[0]!.counts).toEqual({ available: 2, redeemed: 0, revoked: 0, expired: 0 });
    expectError(await other.call('GET', `/v1/apps/${owner.app.id}/redemption-batches`), 401, 'UNAUTHORIZED');
  });

  it.each([
    ['quantity', { quantity: 0 }],
    ['quantity', { quantity: 10_001 }],
    ['quantity', { quantity: undefined }],
    ['channel', { channel: undefined }],
    ['license_type', { license_type: 'lifetime' }],
    ['license_expiry_days', { license_expiry_days: -1 }],
    ['codes_expire_at', { codes_expire_at: '2001-01-01T00:00:00Z' }],
    ['codes_expire_at', { codes_expire_at: '9999-12-31T23:00:00-02:00' }],
    ['features', { features: 'pro' }],
  ])('answers 400 naming %s', async (field, change) => {
    const t = await tenant(server);
    const res = await t.call('POST', `/v1/apps/${t.app.id}/redemption-batches`, { apiKey: t.dev.apiKey, body: { channel: 'appsumo', quantity: 1, ...change } });
    expectError(res, 400, 'VALIDATION_FAILED');
    expect(res.body.detail).toContain(`body.${field}`);
  });
});

// Last: it moves the server's clock forward.
describe('code expiry', () => {
  it('counts unredeemed codes past codes_expire_at as expired and answers 410 with the expired message', async () => {
    const t = await tenant(server);
    const batch = await createBatch(t, { quantity: 3, codes_expire_at: new Date(server.clock.now().getTime() + HOUR_MS).toISOString() });
    expect((await redeem(t, batch.codes[0]!)).status).toBe(201);
    server.clock.advance(2 * HOUR_MS);
    const res = await redeem(t, batch.codes[1]!);
    expectError(res, 410, 'REDEMPTION_CODE_EXPIRED');
    expect(res.body.detail).toMatch(/expired/);
    expect((await batchesOf(t))[0]!.counts).toEqual({ available: 0, redeemed: 1, revoked: 0, expired: 2 });
    // Revoke All leaves expired codes alone; revoking one is refused.
    expect((await t.call('POST', `/v1/redemption-batches/${batch.id}/revoke-all`, { apiKey: t.dev.apiKey })).body.revoked).toBe(0);
    expectError(await t.call('POST', `/v1/redemption-codes/${batch.codes[2]}/revoke`, { apiKey: t.dev.apiKey }), 409, 'REDEMPTION_CODE_NOT_REVOCABLE');
  });
});
