import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY_REVOKED_CHANNEL } from '../../server/accounts/credential-cache.js';
import { LISTENER_APPLICATION_NAME } from '../../server/db/notification-listener.js';
import { expectError } from '../support/assertions.js';
import { registerDeveloper, type TestDeveloper } from '../support/fixtures.js';
import { client, type Call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import * as twoFactor from '../support/two-factor.js';
import { otherCode, secretOf } from '../support/two-factor.js';

let server: TestServer;
let call: Call;
beforeAll(async () => {
  server = await startTestServer();
  call = client(server.url);
});
afterAll(() => server.close());

const ACCESS_TOKEN_TTL_MS = 3600 * 1000;

function newCredentials() {
  return { email: `dev-${randomBytes(5).toString('hex')}@example.com`, password: 'correct horse battery', company_name: 'Acme Software' };
}

const me = (credential: { token?: string; apiKey?: string }) => call('GET', '/v1/auth/me', credential);
const login = (email: string, password: string) => call('POST', '/v1/auth/login', { body: { email, password } });

function expectTokenPair(body: unknown) {
  expect(body).toEqual({
    access_token: expect.any(String),
    refresh_token: expect.stringMatching(/^rt_/),
    token_type: 'bearer',
    expires_in: 3600,
  });
}

describe('registration', () => {
  it('creates an account and answers 201 with id, email, company_name and created_at only', async () => {
    const creds = newCredentials();
    const res = await call('POST', '/v1/auth/register', { body: creds });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: expect.stringMatching(/^dev_/), email: creds.email, company_name: creds.company_name, created_at: expect.any(String) });
    expect(new Date(res.body.created_at).toISOString()).toBe(res.body.created_at);
  });

  it('refuses an email already registered, whatever its letter case, with 409 EMAIL_IN_USE', async () => {
    const creds = newCredentials();
    expect((await call('POST', '/v1/auth/register', { body: creds })).status).toBe(201);
    expectError(await call('POST', '/v1/auth/register', { body: creds }), 409, 'EMAIL_IN_USE');
    expectError(await call('POST', '/v1/auth/register', { body: { ...creds, email: creds.email.toUpperCase() } }), 409, 'EMAIL_IN_USE');
    // The address is matched case-insensitively at login too.
    expect((await login(creds.email.toUpperCase(), creds.password)).status).toBe(200);
  });

  it.each([
    ['a malformed email', { email: 'not-an-email' }],
    ['a password shorter than 10 characters', { password: 'short' }],
    ['an empty company name', { company_name: '' }],
  ])('rejects %s with 400', async (_case, override) => {
    expectError(await call('POST', '/v1/auth/register', { body: { ...newCredentials(), ...override } }), 400, 'VALIDATION_FAILED');
  });
});

describe('login', () => {
  it('answers the token object', async () => {
    const creds = newCredentials();
    await call('POST', '/v1/auth/register', { body: creds });
    const res = await login(creds.email, creds.password);
    expect(res.status).toBe(200);
    expectTokenPair(res.body);
  });

  it('answers 401 INVALID_CREDENTIALS alike for a wrong password and an unknown email', async () => {
    const dev = await registerDeveloper(call);
    const wrongPassword = await login(dev.email, `${dev.password}x`);
    const unknownEmail = await login(`nobody-${randomBytes(4).toString('hex')}@example.com`, dev.password);
    expectError(wrongPassword, 401, 'INVALID_CREDENTIALS');
    expectError(unknownEmail, 401, 'INVALID_CREDENTIALS');
    // Same answer (but for each request's own id), so the endpoint does not reveal which emails have accounts.
    expect({ ...unknownEmail.body, request_id: null }).toEqual({ ...wrongPassword.body, request_id: null });
  });
});

describe('me', () => {
  it('describes the authenticated developer', async () => {
    const dev = await registerDeveloper(call);
    const res = await me({ token: dev.accessToken });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: dev.id, email: dev.email, company_name: 'Acme Software', two_factor_enabled: false });
    expect(new Date(res.body.created_at).toISOString()).toBe(res.body.created_at);
    expect(res.body).not.toHaveProperty('password_hash');
  });
});

describe('access and refresh tokens', () => {
  it('expires an access token after 3600 s; API keys and refresh tokens outlive it', async () => {
    const dev = await registerDeveloper(call);
    expect((await me({ token: dev.accessToken })).status).toBe(200);
    server.clock.advance(ACCESS_TOKEN_TTL_MS + 1000);
    expectError(await me({ token: dev.accessToken }), 401, 'UNAUTHORIZED');
    expect((await me({ apiKey: dev.apiKey })).status).toBe(200);
    const refreshed = await call('POST', '/v1/auth/refresh', { body: { refresh_token: dev.refreshToken } });
    expect(refreshed.status).toBe(200);
    expect((await me({ token: refreshed.body.access_token })).body.id).toBe(dev.id);
  });

  it('rotates the refresh token on every use', async () => {
    const dev = await registerDeveloper(call);
    const res = await call('POST', '/v1/auth/refresh', { body: { refresh_token: dev.refreshToken } });
    expect(res.status).toBe(200);
    expectTokenPair(res.body);
    expect(res.body.refresh_token).not.toBe(dev.refreshToken);
    expect((await me({ token: res.body.access_token })).body.id).toBe(dev.id);
    const again = await call('POST', '/v1/auth/refresh', { body: { refresh_token: res.body.refresh_token } });
    expect(again.status).toBe(200);
  });

  it('revokes the whole family when a rotated refresh token is presented again, and only that family', async () => {
    const dev = await registerDeveloper(call);
    const otherSession = (await login(dev.email, dev.password)).body.refresh_token as string;
    const rotated = await call('POST', '/v1/auth/refresh', { body: { refresh_token: dev.refreshToken } });
    expect(rotated.status).toBe(200);

    expectError(await call('POST', '/v1/auth/refresh', { body: { refresh_token: dev.refreshToken } }), 401, 'INVALID_REFRESH_TOKEN');
    // The reuse looks like theft, so the token handed out by the rotation dies too.
    expectError(await call('POST', '/v1/auth/refresh', { body: { refresh_token: rotated.body.refresh_token } }), 401, 'INVALID_REFRESH_TOKEN');
    expect((await call('POST', '/v1/auth/refresh', { body: { refresh_token: otherSession } })).status).toBe(200);
  });

  it('rejects a made-up refresh token with 401', async () => {
    const forged = `rt_${randomBytes(12).toString('hex')}_${randomBytes(32).toString('base64url')}`;
    expectError(await call('POST', '/v1/auth/refresh', { body: { refresh_token: forged } }), 401, 'INVALID_REFRESH_TOKEN');
    expectError(await call('POST', '/v1/auth/refresh', { body: { refresh_token: 'garbage' } }), 401, 'INVALID_REFRESH_TOKEN');
  });
});

/** A new API key replacing the developer's, as a signed-in session does it: with the password again. */
const rotate = (dev: TestDeveloper) => call('POST', '/v1/auth/api-keys/rotate', { token: dev.accessToken, body: { password: dev.password } });

describe('API keys', () => {
  it('rotating stops the old key at once; the new one works as Bearer and as X-API-Key', async () => {
    const dev = await registerDeveloper(call);
    const res = await rotate(dev);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      api_key: expect.stringMatching(/^lk_[0-9a-f]{24}_[\w-]{43}$/),
      id: expect.stringMatching(/^[0-9a-f]{24}$/),
      prefix: `lk_${res.body.id}`,
      name: 'API key',
      scopes: ['admin'],
      created_at: expect.any(String),
      last_used_at: null,
    });
    expect(res.body.api_key.startsWith(`${res.body.prefix}_`)).toBe(true);
    const newKey = res.body.api_key as string;

    expectError(await me({ token: dev.apiKey }), 401, 'UNAUTHORIZED');
    expectError(await me({ apiKey: dev.apiKey }), 401, 'UNAUTHORIZED');
    expect((await me({ token: newKey })).body.id).toBe(dev.id);
    expect((await me({ apiKey: newKey })).body.id).toBe(dev.id);
  });

  it('leaves exactly one working key after concurrent rotations', async () => {
    const dev = await registerDeveloper(call);
    const results = await Promise.all(Array.from({ length: 5 }, () => rotate(dev)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const working = [];
    for (const { body } of results) if ((await me({ apiKey: body.api_key })).status === 200) working.push(body.api_key);
    expect(working).toHaveLength(1);
  });
});

describe('API keys on several server processes', () => {
  let sibling: TestServer;
  let callSibling: Call;
  beforeAll(async () => {
    sibling = await startTestServer({ database: server.database });
    callSibling = client(sibling.url);
  });
  afterAll(() => sibling.close());

  const keyId = (apiKey: string) => apiKey.split('_')[1]!;
  const meOn = (send: Call, apiKey: string) => send('GET', '/v1/auth/me', { apiKey });

  it('a rotated key stops working at once on every process, though each answers for keys it knows from memory', async () => {
    const dev = await registerDeveloper(call);
    for (const send of [call, callSibling]) expect((await meOn(send, dev.apiKey)).status).toBe(200);
    // Memory answers, not the database: revoked behind the servers' backs (no notification), the key still works.
    const revokeQuietly = (revokedAt: Date | null) =>
      server.database
        .db('api_keys')
        .where({ id: keyId(dev.apiKey) })
        .update({ revoked_at: revokedAt });
    await revokeQuietly(new Date());
    for (const send of [call, callSibling]) expect((await meOn(send, dev.apiKey)).status).toBe(200);
    await revokeQuietly(null);

    // A rotation on one process: by its answer, no process accepts the old key any more.
    const rotated = await rotate(dev);
    expect(rotated.status).toBe(200);
    expectError(await meOn(callSibling, dev.apiKey), 401, 'UNAUTHORIZED');
    expectError(await meOn(call, dev.apiKey), 401, 'UNAUTHORIZED');
    for (const send of [callSibling, call]) expect((await meOn(send, rotated.body.api_key)).body.id).toBe(dev.id);
  });

  it('a process that never confirms holds a rotation up only until it has stopped trusting its memory', async () => {
    // A listener session that hears the revocation and never answers, like a process that hung.
    const silent = new pg.Client({ connectionString: server.database.url, application_name: LISTENER_APPLICATION_NAME });
    await silent.connect();
    try {
      await silent.query(`LISTEN ${API_KEY_REVOKED_CHANNEL}`);
      const dev = await registerDeveloper(call);
      const rotated = await rotate(dev);
      expect(rotated.status).toBe(200);
      for (const send of [call, callSibling]) expectError(await meOn(send, dev.apiKey), 401, 'UNAUTHORIZED');
    } finally {
      await silent.end();
    }
  });
});

describe('two-factor authentication', () => {
  const nextTotpCode = (secret: string) => twoFactor.nextTotpCode(server, secret);
  const enableTwoFactor = (dev: TestDeveloper) => twoFactor.enableTwoFactor(call, server, dev);
  const challenge = (dev: TestDeveloper) => twoFactor.loginChallenge(call, dev);
  const verify = (challengeToken: string, code: string) => twoFactor.verifyTwoFactor(call, challengeToken, code);
  const status = (dev: TestDeveloper) => call('GET', '/v1/auth/2fa/status', { token: dev.accessToken });

  it('setup returns an authenticator URI and 10 backup codes; 2FA stays off until confirmed', async () => {
    const dev = await registerDeveloper(call);
    const res = await call('POST', '/v1/auth/2fa/setup', { token: dev.accessToken, body: { password: dev.password } });
    expect(res.status).toBe(200);
    expect(res.body.provisioning_uri).toMatch(/^otpauth:\/\/totp\//);
    secretOf(res.body.provisioning_uri);
    expect(res.body.backup_codes).toHaveLength(10);
    expect(new Set(res.body.backup_codes).size).toBe(10);
    expect((await status(dev)).body).toEqual({ two_factor_enabled: false, backup_codes_remaining: 0 });
    expectTokenPair((await login(dev.email, dev.password)).body);
  });

  it('confirm needs a setup first and the authenticator code', async () => {
    const dev = await registerDeveloper(call);
    expectError(await call('POST', '/v1/auth/2fa/confirm', { token: dev.accessToken, body: { code: '123456' } }), 409, 'TWO_FACTOR_SETUP_REQUIRED');
    const setup = await call('POST', '/v1/auth/2fa/setup', { token: dev.accessToken, body: { password: dev.password } });
    const wrong = otherCode(await nextTotpCode(secretOf(setup.body.provisioning_uri)));
    const res = await call('POST', '/v1/auth/2fa/confirm', { token: dev.accessToken, body: { code: wrong } });
    expectError(res, 401, 'INVALID_TWO_FACTOR_CODE');
    expect((await status(dev)).body.two_factor_enabled).toBe(false);
  });

  it('once confirmed, login answers a challenge without tokens and verify-2fa completes it with a TOTP code', async () => {
    const dev = await registerDeveloper(call);
    const { secret } = await enableTwoFactor(dev);
    expect((await status(dev)).body).toEqual({ two_factor_enabled: true, backup_codes_remaining: 10 });
    expect((await me({ token: dev.accessToken })).body.two_factor_enabled).toBe(true);

    const challengeToken = await challenge(dev);
    expectError(await me({ token: challengeToken }), 401, 'UNAUTHORIZED'); // a challenge is not a session
    const res = await verify(challengeToken, await nextTotpCode(secret));
    expect(res.status).toBe(200);
    expectTokenPair(res.body);
    expect((await me({ token: res.body.access_token })).body.id).toBe(dev.id);
  });

  it('accepts a TOTP code once: replaying it fails', async () => {
    const dev = await registerDeveloper(call);
    const { secret } = await enableTwoFactor(dev);
    const code = await nextTotpCode(secret);
    expect((await verify(await challenge(dev), code)).status).toBe(200);
    expectError(await verify(await challenge(dev), code), 401, 'INVALID_TWO_FACTOR_CODE');
  });

  it('accepts a backup code once, and status counts what is left', async () => {
    const dev = await registerDeveloper(call);
    const { backupCodes } = await enableTwoFactor(dev);
    const res = await verify(await challenge(dev), backupCodes[0]!);
    expect(res.status).toBe(200);
    expectTokenPair(res.body);
    expect((await status(dev)).body).toEqual({ two_factor_enabled: true, backup_codes_remaining: 9 });
    expectError(await verify(await challenge(dev), backupCodes[0]!), 401, 'INVALID_TWO_FACTOR_CODE');
    expect((await status(dev)).body.backup_codes_remaining).toBe(9);
  });

  it('completes one login per challenge: verifying it again is 401, also when the verifies are sent at once', async () => {
    const dev = await registerDeveloper(call);
    const { backupCodes } = await enableTwoFactor(dev);
    const used = await challenge(dev);
    expect((await verify(used, backupCodes[0]!)).status).toBe(200);
    expectError(await verify(used, backupCodes[1]!), 401, 'INVALID_CREDENTIALS');

    const raced = await challenge(dev);
    const results = await Promise.all(backupCodes.slice(1, 5).map((code) => verify(raced, code)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 401, 401, 401]);
    for (const refused of results.filter((r) => r.status === 401)) expectError(refused, 401, 'INVALID_CREDENTIALS');
    // The refused verifies spent no code: only the two logins' are gone.
    expect((await status(dev)).body.backup_codes_remaining).toBe(8);
  });

  it('keeps a challenge through a wrong code, so the right one still completes it, once', async () => {
    const dev = await registerDeveloper(call);
    const { secret } = await enableTwoFactor(dev);
    const challengeToken = await challenge(dev);
    const code = await nextTotpCode(secret);
    expectError(await verify(challengeToken, otherCode(code)), 401, 'INVALID_TWO_FACTOR_CODE');
    expect((await verify(challengeToken, code)).status).toBe(200);
    expectError(await verify(challengeToken, await nextTotpCode(secret)), 401, 'INVALID_CREDENTIALS');
  });

  it('rejects a made-up challenge token', async () => {
    expectError(await verify('garbage', '123456'), 401, 'INVALID_CREDENTIALS');
  });

  it('refuses setup while 2FA is on with 409', async () => {
    const dev = await registerDeveloper(call);
    await enableTwoFactor(dev);
    expectError(await call('POST', '/v1/auth/2fa/setup', { token: dev.accessToken, body: { password: dev.password } }), 409, 'TWO_FACTOR_ALREADY_ENABLED');
  });

  it('disable needs the password and a code; afterwards login answers tokens again', async () => {
    const dev = await registerDeveloper(call);
    const { secret, backupCodes } = await enableTwoFactor(dev);
    const disable = (body: unknown) => call('POST', '/v1/auth/2fa/disable', { token: dev.accessToken, body });

    expectError(await disable({ password: 'wrong password', code: backupCodes[0] }), 401, 'INVALID_CREDENTIALS');
    expectError(await disable({ password: dev.password }), 400, 'VALIDATION_FAILED');
    const code = await nextTotpCode(secret);
    expectError(await disable({ password: dev.password, code: otherCode(code) }), 401, 'INVALID_TWO_FACTOR_CODE');
    expect((await status(dev)).body).toEqual({ two_factor_enabled: true, backup_codes_remaining: 10 });

    const res = await disable({ password: dev.password, code });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ two_factor_enabled: false, backup_codes_remaining: 0 });
    expectTokenPair((await login(dev.email, dev.password)).body);
    expectError(await disable({ password: dev.password, code: backupCodes[1] }), 409, 'TWO_FACTOR_NOT_ENABLED');
  });
});
