import { verifyRuntimeToken, type JwkSet, type RuntimeTokenClaims } from '@latchkey/runtime-sdk/protocol';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { createLicense, randomFingerprint } from '../support/fixtures.js';
import type { ApiResponse } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tenant, type Tenant } from './world.js';

const MINUTE_MS = 60_000;

let server: TestServer;
let t: Tenant;
let jwks: JwkSet;
beforeAll(async () => {
  server = await startTestServer();
  t = await tenant(server);
  jwks = (await t.call('GET', '/v1/public/keys')).body;
});
afterAll(() => server.close());
// Each test moves the server's clock as it needs; the next starts from real time again.
afterEach(() => {
  server.clock.offsetMs = 0;
});

const floating = (seats: number, extra: Record<string, unknown> = {}) =>
  createLicense(t.call, t.dev, { app_id: t.app.id, seat_model: 'floating', max_concurrent: seats, ...extra });
const activate = (licenseKey: string, device: string) => t.call('POST', '/v1/licenses/activate', { body: { license_key: licenseKey, device_fingerprint: device, build_id: null } });
const heartbeat = (token: string) => t.call('POST', '/v1/licenses/refresh', { body: { token } });
const checkin = (token: string) => t.call('POST', '/v1/licenses/checkin', { body: { token } });

function claimsOf(res: ApiResponse, device: string): RuntimeTokenClaims {
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return verifyRuntimeToken(res.body.token, jwks, { appId: t.app.id, device });
}

/** A 409 NO_SEAT_AVAILABLE: the standard error body plus when the first seat frees by itself. */
function expectNoSeat(res: ApiResponse, earliestExpiry: Date): void {
  expect(res.status, JSON.stringify(res.body)).toBe(409);
  expect(Object.keys(res.body).sort()).toEqual(['detail', 'earliest_expiry', 'error_code', 'request_id', 'status_code']);
  expect(res.body).toMatchObject({ error_code: 'NO_SEAT_AVAILABLE', status_code: 409, earliest_expiry: earliestExpiry.toISOString() });
}

/** Activates a new device on the license; its token's end is its lease's end. */
async function checkedOut(licenseKey: string) {
  const device = randomFingerprint();
  const res = await activate(licenseKey, device);
  const claims = claimsOf(res, device);
  return { device, token: res.body.token as string, leaseEnd: new Date(res.body.expires_at), claims };
}

describe('floating licenses: settings', () => {
  it('are created and read with seat_model, max_concurrent and lease_ttl_minutes (default 15)', async () => {
    const lic = await floating(10);
    expect(lic).toMatchObject({ seat_model: 'floating', max_concurrent: 10, lease_ttl_minutes: 15, device_limit: 10 });
    const read = await t.call('GET', `/v1/licenses/${lic.license_id}`, { apiKey: t.dev.apiKey });
    expect(read.body).toMatchObject({ seat_model: 'floating', max_concurrent: 10, lease_ttl_minutes: 15 });
    expect((await floating(3, { lease_ttl_minutes: 60 })).lease_ttl_minutes).toBe(60);
    const nodeLocked = await createLicense(t.call, t.dev, { app_id: t.app.id, device_limit: 3 });
    expect(nodeLocked).toMatchObject({ seat_model: 'node_locked', max_concurrent: null, lease_ttl_minutes: null, device_limit: 3 });
  });

  it("sets a floating license's seats and lease TTL; refuses a node-locked license, someone else's and bad values", async () => {
    const lic = await floating(1);
    const held = await checkedOut(lic.license_key);
    const other = randomFingerprint();
    expectNoSeat(await activate(lic.license_key, other), held.leaseEnd);
    const set = (id: string, body: unknown) => t.call('PUT', `/v1/licenses/${id}/seats`, { apiKey: t.dev.apiKey, body });
    const res = await set(lic.license_id, { max_concurrent: 2, lease_ttl_minutes: 30 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ seat_model: 'floating', max_concurrent: 2, device_limit: 2, lease_ttl_minutes: 30 });
    const second = claimsOf(await activate(lic.license_key, other), other);
    expect(second.exp - second.iat).toBe(30 * 60);
    expect((await set(lic.license_id, { max_concurrent: 3 })).body).toMatchObject({ max_concurrent: 3, lease_ttl_minutes: 30 });

    const nodeLocked = await createLicense(t.call, t.dev, { app_id: t.app.id });
    expectError(await set(nodeLocked.license_id, { max_concurrent: 2 }), 409, 'LICENSE_NOT_FLOATING');
    expectError(await set('lic_000000000000000000000000', { max_concurrent: 2 }), 404, 'LICENSE_NOT_FOUND');
    for (const body of [{}, { max_concurrent: 0 }, { max_concurrent: 2, lease_ttl_minutes: 2 }, { max_concurrent: 2, device_limit: 2 }]) {
      expectError(await set(lic.license_id, body), 400, 'VALIDATION_FAILED');
    }
  });

  it('refuses inconsistent settings with 400', async () => {
    for (const body of [
      { seat_model: 'floating' },
      { seat_model: 'floating', max_concurrent: 5, device_limit: 5 },
      { seat_model: 'floating', max_concurrent: 5, license_type: 'trial' },
      { seat_model: 'floating', max_concurrent: 0 },
      { seat_model: 'floating', max_concurrent: 5, lease_ttl_minutes: 2 },
      { seat_model: 'floating', max_concurrent: 5, lease_ttl_minutes: 1441 },
      { seat_model: 'concurrent', max_concurrent: 5 },
      { max_concurrent: 5 },
      { lease_ttl_minutes: 30 },
    ]) {
      expectError(await t.call('POST', '/v1/licenses', { apiKey: t.dev.apiKey, body: { app_id: t.app.id, ...body } }), 400, 'VALIDATION_FAILED');
    }
  });
});

describe('floating licenses: seats', () => {
  it('grants exactly max_concurrent of 50 parallel checkouts; the others get 409 with the earliest expiry', async () => {
    const lic = await floating(10);
    const devices = Array.from({ length: 50 }, () => randomFingerprint());
    const answers = await Promise.all(devices.map((device) => activate(lic.license_key, device)));
    const granted = answers.filter((res) => res.status === 200);
    expect(granted).toHaveLength(10);
    const earliest = new Date(Math.min(...granted.map((res) => new Date(res.body.expires_at).getTime())));
    for (const res of answers.filter((r) => r.status !== 200)) expectNoSeat(res, earliest);
    // The seats are leases, not devices: the ten that run are the devices on record.
    const read = await t.call('GET', `/v1/licenses/${lic.license_id}`, { apiKey: t.dev.apiKey });
    expect(read.body.devices).toHaveLength(10);
  });

  it("signs a token that lives as long as the lease: the offline grace is the lease TTL, not the app's hours", async () => {
    const lic = await floating(2, { lease_ttl_minutes: 20 });
    const { claims, leaseEnd } = await checkedOut(lic.license_key);
    expect(claims.exp - claims.iat).toBe(20 * 60);
    expect(claims.exp * 1000).toBe(leaseEnd.getTime());
    expect(claims.policy).toEqual({ device_limit: 2, offline_grace_hours: 72, seat_model: 'floating', lease_ttl_minutes: 20 });
  });

  it("frees a crashed app's seat when its lease expires", async () => {
    const lic = await floating(2);
    const crashed = await checkedOut(lic.license_key);
    server.clock.advance(5 * MINUTE_MS);
    const running = await checkedOut(lic.license_key);
    expectNoSeat(await activate(lic.license_key, randomFingerprint()), crashed.leaseEnd);
    server.clock.advance(10 * MINUTE_MS + 1_000);
    await checkedOut(lic.license_key);
    // The crashed device comes back to find its seat taken; the running device's lease frees first now.
    expectNoSeat(await heartbeat(crashed.token), running.leaseEnd);
  });

  it('keeps a seat while the app heartbeats (refresh renews the lease)', async () => {
    const lic = await floating(1);
    const held = await checkedOut(lic.license_key);
    server.clock.advance(10 * MINUTE_MS);
    const renewed = claimsOf(await heartbeat(held.token), held.device);
    expect(renewed.exp * 1000).toBeGreaterThan(held.leaseEnd.getTime());
    server.clock.advance(10 * MINUTE_MS);
    // Past the first lease's end, before the renewed one's: the seat is still held.
    expect(server.clock.now().getTime()).toBeGreaterThan(held.leaseEnd.getTime());
    expectNoSeat(await activate(lic.license_key, randomFingerprint()), new Date(renewed.exp * 1000));
    claimsOf(await heartbeat(held.token), held.device);
  });

  it('frees the seat at check-in, idempotently, for another device', async () => {
    const lic = await floating(1);
    const held = await checkedOut(lic.license_key);
    const other = randomFingerprint();
    expectNoSeat(await activate(lic.license_key, other), held.leaseEnd);
    expect((await checkin(held.token)).status).toBe(204);
    expect((await checkin(held.token)).status).toBe(204);
    claimsOf(await activate(lic.license_key, other), other);
    expect((await heartbeat(held.token)).status).toBe(409);
  });

  it('frees every seat when the developer resets the devices', async () => {
    const lic = await floating(1);
    const held = await checkedOut(lic.license_key);
    expect((await t.call('POST', `/v1/licenses/${lic.license_id}/reset-devices`, { apiKey: t.dev.apiKey })).status).toBe(200);
    expectError(await heartbeat(held.token), 403, 'DEVICE_NOT_ACTIVATED');
    await checkedOut(lic.license_key);
  });

  it('frees the seat of a device that deactivates itself from the app', async () => {
    const lic = await floating(1);
    const held = await checkedOut(lic.license_key);
    expect((await t.call('POST', '/v1/licenses/deactivate', { body: { token: held.token } })).body).toMatchObject({ deactivated: true });
    await checkedOut(lic.license_key);
  });

  it('leaves node-locked licenses as they were: grace in hours, no lease, check-in changes nothing', async () => {
    const lic = await createLicense(t.call, t.dev, { app_id: t.app.id, device_limit: 1 });
    const held = await checkedOut(lic.license_key);
    expect(held.claims.policy).toEqual({ device_limit: 1, offline_grace_hours: 72 });
    expect(held.claims.exp - held.claims.iat).toBe(72 * 3600);
    expect((await checkin(held.token)).status).toBe(204);
    claimsOf(await heartbeat(held.token), held.device);
    expectError(await activate(lic.license_key, randomFingerprint()), 403, 'DEVICE_LIMIT_EXCEEDED');
  });

  it('refuses a check-in without a genuine token', async () => {
    expectError(await t.call('POST', '/v1/licenses/checkin', { body: {} }), 400, 'VALIDATION_FAILED');
    expectError(await checkin('not.a.token'), 401, 'INVALID_RUNTIME_TOKEN');
  });
});
