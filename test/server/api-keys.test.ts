import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { createApp, registerDeveloper, type TestDeveloper } from '../support/fixtures.js';
import { client, type Call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { enableTwoFactor, nextTotpCode, secretOf } from '../support/two-factor.js';

let server: TestServer;
let call: Call;
beforeAll(async () => {
  server = await startTestServer();
  call = client(server.url);
});
afterAll(() => server.close());

/** A new API key of `dev`, made as a signed-in session does it: with the password again. */
async function newKey(dev: TestDeveloper, body: Record<string, unknown>): Promise<{ id: string; api_key: string } & Record<string, any>> {
  const res = await call('POST', '/v1/auth/api-keys', { token: dev.accessToken, body: { password: dev.password, ...body } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

const listKeys = async (dev: TestDeveloper) => {
  const res = await call('GET', '/v1/auth/api-keys', { token: dev.accessToken });
  expect(res.status).toBe(200);
  return res.body as { id: string; prefix: string; name: string; scopes: string[]; last_used_at: string | null }[];
};

const licenseCount = async (dev: TestDeveloper) => Number((await call('GET', '/v1/licenses', { token: dev.accessToken })).headers.get('x-total-count'));

describe('API key scopes', () => {
  it('a read key reads but cannot create a license; a licenses key creates one but cannot read; admin does both', async () => {
    const dev = await registerDeveloper(call);
    const app = await createApp(call, dev);
    const read = await newKey(dev, { name: 'dashboard', scopes: ['read'] });
    const licenses = await newKey(dev, { name: 'storefront', scopes: ['licenses'] });
    const builds = await newKey(dev, { name: 'ci', scopes: ['builds'] });
    const admin = await newKey(dev, { name: 'ops', scopes: ['admin'] });
    const create = (apiKey: string) => call('POST', '/v1/licenses', { apiKey, body: { app_id: app.id, license_type: 'trial' } });

    expect((await call('GET', `/v1/apps/${app.id}`, { apiKey: read.api_key })).status).toBe(200);
    const refused = await create(read.api_key);
    expectError(refused, 403, 'INSUFFICIENT_SCOPE');
    expect(refused.body.detail).toMatch(/`licenses` scope/);
    expectError(await create(builds.api_key), 403, 'INSUFFICIENT_SCOPE');
    expect(await licenseCount(dev)).toBe(0);

    expect((await create(licenses.api_key)).status).toBe(201);
    expectError(await call('GET', '/v1/licenses', { apiKey: licenses.api_key }), 403, 'INSUFFICIENT_SCOPE');
    expectError(await call('PUT', `/v1/apps/${app.id}`, { apiKey: licenses.api_key, body: { name: 'Renamed' } }), 403, 'INSUFFICIENT_SCOPE');
    expect((await create(admin.api_key)).status).toBe(201);
    expect((await call('GET', '/v1/licenses', { apiKey: admin.api_key })).status).toBe(200);
    expect(await licenseCount(dev)).toBe(2);
  });

  it('defaults to admin, what every key could do before scopes, and refuses an unknown scope', async () => {
    const dev = await registerDeveloper(call);
    expect((await newKey(dev, {})).scopes).toEqual(['admin']);
    const res = await call('POST', '/v1/auth/api-keys', { token: dev.accessToken, body: { password: dev.password, scopes: ['everything'] } });
    expectError(res, 400, 'VALIDATION_FAILED');
  });
});

describe('account security through API keys', () => {
  it('an API key cannot turn 2FA on, even with the right code, nor change the password or keys, whatever its scopes', async () => {
    const dev = await registerDeveloper(call);
    // The session starts a setup; the key tries to finish it with the authenticator's right code.
    const setup = await call('POST', '/v1/auth/2fa/setup', { token: dev.accessToken, body: { password: dev.password } });
    expect(setup.status).toBe(200);
    const code = await nextTotpCode(server, secretOf(setup.body.provisioning_uri));
    const key = dev.apiKey;
    const attempts: [string, string, unknown][] = [
      ['POST', '/v1/auth/2fa/confirm', { code }],
      ['POST', '/v1/auth/2fa/setup', { password: dev.password }],
      ['POST', '/v1/auth/password', { password: dev.password, new_password: 'a whole new password' }],
      ['POST', '/v1/auth/api-keys', { password: dev.password }],
      ['POST', '/v1/auth/api-keys/rotate', { password: dev.password }],
      ['POST', `/v1/auth/api-keys/${key.split('_')[1]}/revoke`, { password: dev.password }],
    ];
    for (const [method, path, body] of attempts) {
      for (const credentials of [{ apiKey: key }, { token: key }]) expectError(await call(method, path, { ...credentials, body }), 403, 'SESSION_REQUIRED');
    }
    expect((await call('GET', '/v1/auth/2fa/status', { apiKey: key })).body.two_factor_enabled).toBe(false);
    expect((await call('POST', '/v1/auth/login', { body: { email: dev.email, password: dev.password } })).body.access_token).toBeDefined();
    expect((await listKeys(dev)).map((k) => k.prefix)).toEqual([`lk_${key.split('_')[1]}`]);
    // The session itself finishes the setup with the same code.
    expect((await call('POST', '/v1/auth/2fa/confirm', { token: dev.accessToken, body: { code } })).status).toBe(200);
  });

  it('a session needs the password or a current code in the request to change keys, the password or 2FA', async () => {
    const dev = await registerDeveloper(call);
    for (const [path, body] of [
      ['/v1/auth/api-keys', {}],
      ['/v1/auth/api-keys/rotate', undefined],
      ['/v1/auth/2fa/setup', undefined],
      ['/v1/auth/password', { new_password: 'a whole new password' }],
    ] as const) {
      expectError(await call('POST', path, { token: dev.accessToken, body }), 403, 'REAUTHENTICATION_REQUIRED');
      expectError(await call('POST', path, { token: dev.accessToken, body: { ...body, password: 'not the password' } }), 401, 'INVALID_CREDENTIALS');
    }
    expect(await listKeys(dev)).toHaveLength(1);

    // With 2FA on, a current TOTP code does instead of the password, once.
    const { secret } = await enableTwoFactor(call, server, dev);
    const code = await nextTotpCode(server, secret);
    expect((await call('POST', '/v1/auth/api-keys', { token: dev.accessToken, body: { code, name: 'by code' } })).status).toBe(201);
    expectError(await call('POST', '/v1/auth/api-keys', { token: dev.accessToken, body: { code } }), 401, 'INVALID_TWO_FACTOR_CODE');
    expect((await listKeys(dev)).map((k) => k.name)).toEqual(['API key', 'by code']);
  });
});

describe('the key listing', () => {
  it('shows name, prefix, scopes and the last use, written at most once a minute', async () => {
    const dev = await registerDeveloper(call);
    const key = await newKey(dev, { name: 'reporting', scopes: ['read', 'licenses'] });
    const listed = () => listKeys(dev).then((keys) => keys.find((k) => k.id === key.id)!);
    expect(await listed()).toEqual({
      id: key.id,
      prefix: `lk_${key.id}`,
      name: 'reporting',
      scopes: ['read', 'licenses'],
      created_at: key.created_at,
      last_used_at: null,
    });
    expect(JSON.stringify(await listKeys(dev))).not.toContain(key.api_key.split('_')[2]);

    const use = async () => expect((await call('GET', '/v1/apps', { apiKey: key.api_key })).status).toBe(200);
    const stored = async () => (await server.database.db('api_keys').where({ id: key.id }).first('last_used_at')).last_used_at as Date;
    await use();
    const first = (await listed()).last_used_at!;
    expect(Math.abs(new Date(first).getTime() - server.clock.now().getTime())).toBeLessThan(5_000);
    // Within the minute, uses leave the row alone.
    server.clock.advance(20_000);
    for (let i = 0; i < 5; i++) await use();
    expect((await stored()).toISOString()).toBe(first);
    // A minute after the recorded use, the next use is recorded.
    server.clock.advance(45_000);
    await use();
    expect((await stored()).getTime()).toBeGreaterThan(new Date(first).getTime() + 60_000);
  });

  it('revokes one key at once, leaves the others working, and answers 404 for a key that is not yours', async () => {
    const dev = await registerDeveloper(call);
    const other = await registerDeveloper(call);
    const doomed = await newKey(dev, { name: 'leaked' });
    const revoke = (who: TestDeveloper, id: string) => call('POST', `/v1/auth/api-keys/${id}/revoke`, { token: who.accessToken, body: { password: who.password } });
    expectError(await revoke(other, doomed.id), 404, 'API_KEY_NOT_FOUND');
    expect((await call('GET', '/v1/auth/me', { apiKey: doomed.api_key })).status).toBe(200);
    expect((await revoke(dev, doomed.id)).status).toBe(204);
    expectError(await call('GET', '/v1/auth/me', { apiKey: doomed.api_key }), 401, 'UNAUTHORIZED');
    expect((await call('GET', '/v1/auth/me', { apiKey: dev.apiKey })).status).toBe(200);
    expectError(await revoke(dev, doomed.id), 404, 'API_KEY_NOT_FOUND');
    expect((await listKeys(dev)).map((k) => k.name)).toEqual(['API key']);
  });

  it('holds at most 20 active keys', async () => {
    const dev = await registerDeveloper(call);
    for (let i = 1; i < 20; i++) await newKey(dev, { name: `key ${i}` });
    const res = await call('POST', '/v1/auth/api-keys', { token: dev.accessToken, body: { password: dev.password } });
    expectError(res, 409, 'API_KEY_LIMIT_REACHED');
    expect(Number((await call('GET', '/v1/auth/api-keys?limit=5', { token: dev.accessToken })).headers.get('x-total-count'))).toBe(20);
  });
});
