import { createHash } from 'node:crypto';
import { verifyRuntimeToken, type RuntimeTokenClaims } from '@latchkey/runtime-sdk/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLicense, randomFingerprint } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { DAY_MS, HOUR_MS, tenant, type Tenant } from './world.js';

let server: TestServer;
let t: Tenant;
beforeAll(async () => {
  server = await startTestServer();
  t = await tenant(server, { app: { offline_grace_hours: 48 } });
});
afterAll(() => server.close());

const activate = (body: Record<string, unknown>) => t.call('POST', '/v1/licenses/activate', { body });
const devicesOf = async (licenseId: string) => (await t.call('GET', `/v1/licenses/${licenseId}`, { apiKey: t.dev.apiKey })).body.devices as any[];

describe('activation', () => {
  it('answers exactly a signed token, its expiry and the policy; the token verifies with the published keys', async () => {
    const lic = await createLicense(t.call, t.dev, { app_id: t.app.id, features: { tier: 'pro' }, expiry_days: 365 });
    const device = randomFingerprint();
    const res = await activate({ license_key: lic.license_key, device_fingerprint: device, build_id: null });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['expires_at', 'policy', 'token']);
    expect(res.body.policy).toEqual({ device_limit: 2, offline_grace_hours: 48 });

    const jwks = await t.call('GET', '/v1/public/keys');
    expect(jwks.status).toBe(200);
    const claims: RuntimeTokenClaims = verifyRuntimeToken(res.body.token, jwks.body, {
      appId: t.app.id,
      device,
      nowSeconds: Math.floor(server.clock.now().getTime() / 1000),
    });
    expect(claims).toEqual({
      iss: 'latchkey',
      sub: lic.license_id,
      app_id: t.app.id,
      device,
      license_type: 'perpetual',
      features: { tier: 'pro' },
      policy: { device_limit: 2, offline_grace_hours: 48 },
      license_expires_at: Math.floor(new Date(lic.expires_at as string).getTime() / 1000),
      iat: expect.any(Number),
      exp: expect.any(Number),
    });
    expect(claims.exp - claims.iat).toBe(48 * 3600);
    expect(new Date(res.body.expires_at).getTime()).toBe(claims.exp * 1000);
    const header = JSON.parse(Buffer.from(res.body.token.split('.')[0], 'base64url').toString());
    expect(header).toEqual({ alg: 'EdDSA', kid: jwks.body.keys[0].kid, typ: 'latchkey-runtime+jwt' });
  });

  it('accepts a missing build_id and forgives case and spaces in the key', async () => {
    const lic = await createLicense(t.call, t.dev, { app_id: t.app.id });
    const res = await activate({ license_key: `  ${lic.license_key.toLowerCase()} `, device_fingerprint: randomFingerprint() });
    expect(res.status).toBe(200);
  });

  it('records only the fingerprint hash with platform, versions and first/last seen', async () => {
    const lic = await createLicense(t.call, t.dev, { app_id: t.app.id });
    const device = randomFingerprint();
    const body = { license_key: lic.license_key, device_fingerprint: device, build_id: null, platform: 'linux-x64', engine_version: '1.0.0.0.0.178', app_version: '2.1.0' };
    expect((await activate(body)).status).toBe(200);
    server.clock.advance(HOUR_MS);
    // A later launch after an update reports the new installed version; fields it omits stay.
    expect((await activate({ license_key: lic.license_key, device_fingerprint: device, app_version: '2.2.0' })).status).toBe(200);
    server.clock.advance(-HOUR_MS);
    const [row, ...rest] = await devicesOf(lic.license_id);
    expect(rest).toEqual([]);
    expect(row).toEqual({
      fingerprint_hash: device,
      platform: 'linux-x64',
      engine_version: '1.0.0.0.0.178',
      app_version: '2.2.0',
      first_seen_at: expect.any(String),
      last_seen_at: expect.any(String),
    });
    expect(new Date(row.last_seen_at).getTime() - new Date(row.first_seen_at).getTime()).toBeGreaterThanOrEqual(HOUR_MS);
  });

  it('re-activates a known device without taking a slot, and refuses a new one over the limit', async () => {
    const lic = await createLicense(t.call, t.dev, { app_id: t.app.id, device_limit: 2 });
    const [d1, d2, d3] = [randomFingerprint(), randomFingerprint(), randomFingerprint()];
    for (const d of [d1, d2, d1, d2, d1]) {
      expect((await activate({ license_key: lic.license_key, device_fingerprint: d })).status).toBe(200);
    }
    const over = await activate({ license_key: lic.license_key, device_fingerprint: d3 });
    expect(over.status).toBe(403);
    expect(over.body).toMatchObject({ error_code: 'DEVICE_LIMIT_EXCEEDED', status_code: 403 });
    expect((await devicesOf(lic.license_id)).map((d) => d.fingerprint_hash).sort()).toEqual([d1, d2].sort());

    // A reset frees the slots.
    const reset = await t.call('POST', `/v1/licenses/${lic.license_id}/reset-devices`, { apiKey: t.dev.apiKey });
    expect(reset.body).toEqual({ license_id: lic.license_id, devices_removed: 2 });
    expect((await activate({ license_key: lic.license_key, device_fingerprint: d3 })).status).toBe(200);
    expect((await devicesOf(lic.license_id)).map((d) => d.fingerprint_hash)).toEqual([d3]);
  });

  it('refuses unknown and revoked keys with 401 INVALID_LICENSE_KEY', async () => {
    const unknown = await activate({ license_key: 'ABCD-EFGH-JKMN-PQRS', device_fingerprint: randomFingerprint() });
    expect(unknown.status).toBe(401);
    expect(unknown.body).toMatchObject({ error_code: 'INVALID_LICENSE_KEY', status_code: 401 });

    const lic = await createLicense(t.call, t.dev, { app_id: t.app.id });
    const device = randomFingerprint();
    expect((await activate({ license_key: lic.license_key, device_fingerprint: device })).status).toBe(200);
    await t.call('POST', `/v1/licenses/${lic.license_id}/revoke`, { apiKey: t.dev.apiKey });
    const revoked = await activate({ license_key: lic.license_key, device_fingerprint: device });
    expect(revoked.status).toBe(401);
    expect(revoked.body.error_code).toBe('INVALID_LICENSE_KEY');
  });

  it('refuses an expired license with 403 LICENSE_EXPIRED', async () => {
    const lic = await createLicense(t.call, t.dev, { app_id: t.app.id, license_type: 'subscription', expiry_days: 1 });
    const device = randomFingerprint();
    expect((await activate({ license_key: lic.license_key, device_fingerprint: device })).status).toBe(200);
    server.clock.advance(DAY_MS + 1000);
    try {
      const res = await activate({ license_key: lic.license_key, device_fingerprint: device });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ error_code: 'LICENSE_EXPIRED', status_code: 403 });
    } finally {
      server.clock.advance(-(DAY_MS + 1000));
    }
  });

  it('answers 404 BUILD_NOT_FOUND for a build id that names no build of the app', async () => {
    const lic = await createLicense(t.call, t.dev, { app_id: t.app.id });
    const res = await activate({ license_key: lic.license_key, device_fingerprint: randomFingerprint(), build_id: 'bld_000000000000000000000000' });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ error_code: 'BUILD_NOT_FOUND', status_code: 404 });
    expect(await devicesOf(lic.license_id)).toEqual([]);
  });

  it.each([
    ['a key of the wrong shape', { license_key: 'ABCD-EFGH-JKMN' }],
    ['a key with symbols', { license_key: 'ABCD-EFGH-JKMN-PQR$' }],
    ['a key that is not a string', { license_key: 1234 }],
    ['upper-case hex fingerprint', { device_fingerprint: 'A'.repeat(64) }],
    ['a short fingerprint', { device_fingerprint: 'a'.repeat(63) }],
    ['a non-hex fingerprint', { device_fingerprint: 'g'.repeat(64) }],
    ['a raw hardware id', { device_fingerprint: 'VMware-56 4d 7e 1f 2a 3b' }],
    ['a missing fingerprint', { device_fingerprint: undefined }],
    ['an empty build id', { build_id: '' }],
    ['an unknown platform', { platform: 'amiga-m68k' }],
    ['a malformed version', { app_version: 'v 1; drop table' }],
  ])('refuses %s with 400 and records nothing', async (_name, override) => {
    const lic = await createLicense(t.call, t.dev, { app_id: t.app.id });
    const res = await activate({ license_key: lic.license_key, device_fingerprint: randomFingerprint(), build_id: null, ...override });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('VALIDATION_FAILED');
    expect(await devicesOf(lic.license_id)).toEqual([]);
  });

  it('refuses a body that is not JSON', async () => {
    const res = await t.call('POST', '/v1/licenses/activate', { raw: { data: '{"license_key":', contentType: 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('INVALID_JSON');
  });
});

describe('precedence of activation errors', () => {
  it('checks revoked before expired before build before device limit', async () => {
    const lic = await createLicense(t.call, t.dev, { app_id: t.app.id, license_type: 'subscription', expiry_days: 1, device_limit: 1 });
    expect((await activate({ license_key: lic.license_key, device_fingerprint: randomFingerprint() })).status).toBe(200);
    const full = { license_key: lic.license_key, device_fingerprint: randomFingerprint() };

    // Over the device limit and naming an unknown build: the build is reported first.
    expect((await activate(full)).body.error_code).toBe('DEVICE_LIMIT_EXCEEDED');
    expect((await activate({ ...full, build_id: 'bld_x' })).body.error_code).toBe('BUILD_NOT_FOUND');

    // Expired as well: expiry comes first.
    server.clock.advance(DAY_MS + 1000);
    try {
      expect((await activate({ ...full, build_id: 'bld_x' })).body.error_code).toBe('LICENSE_EXPIRED');
      // Revoked as well: 401 before everything.
      await t.call('POST', `/v1/licenses/${lic.license_id}/revoke`, { apiKey: t.dev.apiKey });
      expect((await activate({ ...full, build_id: 'bld_x' })).body.error_code).toBe('INVALID_LICENSE_KEY');
    } finally {
      server.clock.advance(-(DAY_MS + 1000));
    }
  });
});

describe('public keys', () => {
  it('serves a JWK Set of Ed25519 keys with RFC 7638 thumbprints as kid', async () => {
    const res = await t.call('GET', '/v1/public/keys');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=300');
    expect(res.body.keys).toHaveLength(1);
    const [key] = res.body.keys;
    expect(key).toEqual({ kty: 'OKP', crv: 'Ed25519', x: expect.any(String), kid: expect.any(String), alg: 'EdDSA', use: 'sig' });
    const thumbprint = createHash('sha256').update(`{"crv":"Ed25519","kty":"OKP","x":"${key.x}"}`).digest('base64url');
    expect(key.kid).toBe(thumbprint);
  });
});

describe('OpenAPI document', () => {
  it('describes the licensing operations from their schemas', async () => {
    const { paths } = (await t.call('GET', '/v1/openapi.json')).body;
    const activateOp = paths['/v1/licenses/activate'].post;
    expect(activateOp.security).toEqual([]);
    expect(activateOp.requestBody.content['application/json'].schema.required).toEqual(expect.arrayContaining(['license_key', 'device_fingerprint']));
    expect(Object.keys(activateOp.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '403', '404', '429']));
    expect(paths['/v1/licenses/refresh'].post.requestBody.content['application/json'].schema.properties).toHaveProperty('token');
    expect(paths['/v1/licenses'].get.parameters.map((p: { name: string }) => p.name)).toEqual(['limit', 'offset', 'app_id', 'status', 'q']);
    for (const path of ['/v1/licenses/{license_id}', '/v1/licenses/{license_id}/revoke', '/v1/licenses/{license_id}/reset-devices', '/v1/public/keys']) {
      expect(paths).toHaveProperty([path]);
    }
  });
});
