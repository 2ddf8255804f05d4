import { generateKeyPairSync, sign } from 'node:crypto';
import { DOCUMENT_TYPES, assembleJws, signingInput, verifyRuntimeToken } from '@latchkey/runtime-sdk/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLicense, randomFingerprint } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { HOUR_MS, tenant, type Tenant } from './world.js';

let server: TestServer;
let t: Tenant;
beforeAll(async () => {
  server = await startTestServer();
  t = await tenant(server, { app: { offline_grace_hours: 24 } });
});
afterAll(() => server.close());

const activate = (licenseKey: string, device: string) => t.call('POST', '/v1/licenses/activate', { body: { license_key: licenseKey, device_fingerprint: device, build_id: null } });
const refresh = (body: Record<string, unknown>) => t.call('POST', '/v1/licenses/refresh', { body });

async function activated() {
  const lic = await createLicense(t.call, t.dev, { app_id: t.app.id, features: { tier: 'gold' } });
  const device = randomFingerprint();
  const res = await activate(lic.license_key, device);
  expect(res.status).toBe(200);
  return { lic, device, token: res.body.token as string };
}

describe('token refresh', () => {
  it('answers like activation, by token or by key and fingerprint', async () => {
    const { lic, device, token } = await activated();
    const jwks = (await t.call('GET', '/v1/public/keys')).body;
    server.clock.advance(HOUR_MS);
    try {
      for (const body of [{ token }, { license_key: lic.license_key, device_fingerprint: device }]) {
        const res = await refresh(body);
        expect(res.status).toBe(200);
        expect(Object.keys(res.body).sort()).toEqual(['expires_at', 'policy', 'token']);
        expect(res.body.policy).toEqual({ device_limit: 2, offline_grace_hours: 24 });
        const nowSeconds = Math.floor(server.clock.now().getTime() / 1000);
        const claims = verifyRuntimeToken(res.body.token, jwks, { appId: t.app.id, device, nowSeconds });
        expect(claims).toMatchObject({ sub: lic.license_id, features: { tier: 'gold' } });
        expect(claims.iat).toBeGreaterThanOrEqual(nowSeconds - 5);
        expect(claims.exp - claims.iat).toBe(24 * 3600);
      }
    } finally {
      server.clock.advance(-HOUR_MS);
    }
  });

  it('accepts a genuine token past its offline grace, so an app can come back online', async () => {
    const { device, token } = await activated();
    server.clock.advance(30 * 24 * HOUR_MS);
    try {
      const res = await refresh({ token, app_version: '3.0.0' });
      expect(res.status).toBe(200);
      expect(new Date(res.body.expires_at).getTime()).toBeGreaterThan(server.clock.now().getTime());
      const jwks = (await t.call('GET', '/v1/public/keys')).body;
      expect(() => verifyRuntimeToken(res.body.token, jwks, { appId: t.app.id, device, nowSeconds: Math.floor(server.clock.now().getTime() / 1000) })).not.toThrow();
    } finally {
      server.clock.advance(-30 * 24 * HOUR_MS);
    }
  });

  it('fails once the license is revoked, immediately, by token and by key', async () => {
    const { lic, device, token } = await activated();
    await t.call('POST', `/v1/licenses/${lic.license_id}/revoke`, { apiKey: t.dev.apiKey });
    for (const body of [{ token }, { license_key: lic.license_key, device_fingerprint: device }]) {
      const res = await refresh(body);
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ error_code: 'INVALID_LICENSE_KEY', status_code: 401 });
    }
  });

  it('fails with DEVICE_NOT_ACTIVATED once the devices were reset, until the device activates again', async () => {
    const { lic, device, token } = await activated();
    await t.call('POST', `/v1/licenses/${lic.license_id}/reset-devices`, { apiKey: t.dev.apiKey });
    for (const body of [{ token }, { license_key: lic.license_key, device_fingerprint: device }]) {
      const res = await refresh(body);
      expect(res.status).toBe(403);
      expect(res.body.error_code).toBe('DEVICE_NOT_ACTIVATED');
    }
    expect((await activate(lic.license_key, device)).status).toBe(200);
    expect((await refresh({ token })).status).toBe(200);
  });

  it('refuses a device never activated on the license', async () => {
    const { lic } = await activated();
    const res = await refresh({ license_key: lic.license_key, device_fingerprint: randomFingerprint() });
    expect(res.status).toBe(403);
    expect(res.body.error_code).toBe('DEVICE_NOT_ACTIVATED');
  });

  it('refuses tokens this authority did not sign, and changes nothing', async () => {
    const { lic, device, token } = await activated();
    const [header, claims] = token.split('.');
    const tampered = JSON.parse(Buffer.from(claims!, 'base64url').toString());
    tampered.sub = 'lic_someone_else';
    const foreign = generateKeyPairSync('ed25519').privateKey;
    const forgedInput = signingInput({ alg: 'EdDSA', kid: JSON.parse(Buffer.from(header!, 'base64url').toString()).kid, typ: DOCUMENT_TYPES.runtimeToken }, tampered);
    for (const bad of [
      'not-a-token',
      `${header}.${Buffer.from(JSON.stringify(tampered)).toString('base64url')}.${token.split('.')[2]}`,
      assembleJws(forgedInput, sign(null, Buffer.from(forgedInput), foreign)),
      `${Buffer.from(JSON.stringify({ alg: 'none', typ: DOCUMENT_TYPES.runtimeToken })).toString('base64url')}.${claims}.AAAA`,
    ]) {
      const res = await refresh({ token: bad });
      expect(res.status).toBe(401);
      expect(res.body.error_code).toBe('INVALID_RUNTIME_TOKEN');
    }
    const devices = (await t.call('GET', `/v1/licenses/${lic.license_id}`, { apiKey: t.dev.apiKey })).body.devices;
    expect(devices.map((d: any) => d.fingerprint_hash)).toEqual([device]);
  });

  it.each([
    ['an empty body', {}],
    ['a key without fingerprint', { license_key: 'ABCD-EFGH-JKMN-PQRS' }],
    ['a fingerprint without key', { device_fingerprint: 'a'.repeat(64) }],
    ['a malformed fingerprint', { license_key: 'ABCD-EFGH-JKMN-PQRS', device_fingerprint: 'xyz' }],
    ['an empty token', { token: '' }],
  ])('refuses %s with 400', async (_name, body) => {
    const res = await refresh(body);
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('VALIDATION_FAILED');
  });
});

describe('signing key rotation', () => {
  it('keeps accepting tokens signed by a key that is still published, and signs with the first', async () => {
    const pkcs8 = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
    const [oldKey, newKey] = [pkcs8(), pkcs8()];
    const before = await startTestServer({ env: { LATCHKEY_SIGNING_KEYS: oldKey } });
    const after = await startTestServer({ database: before.database, env: { LATCHKEY_SIGNING_KEYS: `${newKey},${oldKey}` } });
    try {
      const w = await tenant(before);
      const lic = await createLicense(w.call, w.dev, { app_id: w.app.id });
      const device = randomFingerprint();
      const old = await client(before.url)('POST', '/v1/licenses/activate', { body: { license_key: lic.license_key, device_fingerprint: device } });
      expect(old.status).toBe(200);

      const jwks = (await client(after.url)('GET', '/v1/public/keys')).body;
      expect(jwks.keys).toHaveLength(2);
      const renewed = await client(after.url)('POST', '/v1/licenses/refresh', { body: { token: old.body.token } });
      expect(renewed.status).toBe(200);
      const kidOf = (jws: string) => JSON.parse(Buffer.from(jws.split('.')[0]!, 'base64url').toString()).kid;
      expect(kidOf(old.body.token)).toBe(jwks.keys[1].kid);
      expect(kidOf(renewed.body.token)).toBe(jwks.keys[0].kid);
      for (const token of [old.body.token, renewed.body.token]) {
        expect(() => verifyRuntimeToken(token, jwks, { appId: w.app.id, device })).not.toThrow();
      }
    } finally {
      await after.close();
      await before.close();
    }
  });
});
