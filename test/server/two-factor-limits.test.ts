import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { registerDeveloper, type TestDeveloper } from '../support/fixtures.js';
import { client, type Call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { enableTwoFactor, loginChallenge, nextTotpCode, otherCode, verifyTwoFactor } from '../support/two-factor.js';

let server: TestServer;
let call: Call;
beforeAll(async () => {
  server = await startTestServer();
  call = client(server.url);
});
afterAll(() => server.close());

const HOUR_MS = 3600_000;

/** The 2FA lockout notices queued for the developer, from the email outbox. */
const lockoutEmails = (dev: TestDeveloper) =>
  server.database.db('email_outbox').where({ developer_id: dev.id, kind: 'two_factor_locked' }).select('recipient', 'subject', 'text_body');

describe('a login challenge', () => {
  it('takes 5 codes: the 6th is refused even when right, and the login starts again', async () => {
    const dev = await registerDeveloper(call);
    const { secret } = await enableTwoFactor(call, server, dev);
    const challenge = await loginChallenge(call, dev);
    const code = await nextTotpCode(server, secret);
    for (let i = 0; i < 5; i++) expectError(await verifyTwoFactor(call, challenge, otherCode(code)), 401, 'INVALID_TWO_FACTOR_CODE');
    const sixth = await verifyTwoFactor(call, challenge, code);
    expectError(sixth, 401, 'INVALID_CREDENTIALS');
    expect(sixth.body.detail).toMatch(/log in again/);
    // The right code was not spent by the refused attempt: a new login takes it.
    expect((await verifyTwoFactor(call, await loginChallenge(call, dev), code)).status).toBe(200);
  });

  it('counts concurrent guesses each: of 8 sent at once, 5 are checked', async () => {
    const dev = await registerDeveloper(call);
    const { secret } = await enableTwoFactor(call, server, dev);
    const challenge = await loginChallenge(call, dev);
    const code = await nextTotpCode(server, secret);
    const results = await Promise.all(Array.from({ length: 8 }, () => verifyTwoFactor(call, challenge, otherCode(code))));
    const codes = results.map((r) => r.body.error_code).sort();
    expect(codes).toEqual([...Array(3).fill('INVALID_CREDENTIALS'), ...Array(5).fill('INVALID_TWO_FACTOR_CODE')]);
    expectError(await verifyTwoFactor(call, challenge, code), 401, 'INVALID_CREDENTIALS');
  });
});

describe('an account', () => {
  it('locks second-factor checks after 20 wrong codes in an hour, sent at once or not, and emails the owner once', async () => {
    const dev = await registerDeveloper(call);
    const { secret, backupCodes } = await enableTwoFactor(call, server, dev);
    const code = await nextTotpCode(server, secret);
    // Four logins, five wrong codes each, all five sent at once.
    for (let login = 0; login < 4; login++) {
      const challenge = await loginChallenge(call, dev);
      const results = await Promise.all(Array.from({ length: 5 }, () => verifyTwoFactor(call, challenge, otherCode(code))));
      for (const res of results) expectError(res, 401, 'INVALID_TWO_FACTOR_CODE');
    }

    const locked = await verifyTwoFactor(call, await loginChallenge(call, dev), code);
    expectError(locked, 429, 'TWO_FACTOR_LOCKED');
    const retryAfter = Number(locked.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(HOUR_MS / 1000 - 60);
    expect(retryAfter).toBeLessThanOrEqual(HOUR_MS / 1000);
    // Backup codes and the other routes that check a code are locked too.
    expectError(await verifyTwoFactor(call, await loginChallenge(call, dev), backupCodes[0]!), 429, 'TWO_FACTOR_LOCKED');
    expectError(await call('POST', '/v1/auth/2fa/disable', { token: dev.accessToken, body: { password: dev.password, code } }), 429, 'TWO_FACTOR_LOCKED');

    const emails = await lockoutEmails(dev);
    expect(emails).toHaveLength(1);
    expect(emails[0]).toMatchObject({ recipient: dev.email, subject: expect.stringMatching(/two-factor sign-in locked/) });
    expect(emails[0].text_body).toContain('20 wrong two-factor codes');
    expect(emails[0].text_body).toContain(`${server.url}/reset-password`);

    // An hour later the lock has ended, and a code works again; the lockout was noticed once.
    server.clock.advance(HOUR_MS);
    expect((await verifyTwoFactor(call, await loginChallenge(call, dev), await nextTotpCode(server, secret))).status).toBe(200);
    expect(await lockoutEmails(dev)).toHaveLength(1);
  });

  it('counts only wrong codes: successes and refused challenges leave the count alone', async () => {
    const dev = await registerDeveloper(call);
    const { secret } = await enableTwoFactor(call, server, dev);
    for (let i = 0; i < 25; i++) {
      const challenge = await loginChallenge(call, dev);
      expect((await verifyTwoFactor(call, challenge, await nextTotpCode(server, secret))).status).toBe(200);
      // A challenge verified again is refused as used, which is no wrong code either.
      expectError(await verifyTwoFactor(call, challenge, await nextTotpCode(server, secret)), 401, 'INVALID_CREDENTIALS');
    }
    expect(await lockoutEmails(dev)).toHaveLength(0);
  });
});

describe('a TOTP code', () => {
  it('is accepted once by any check of the account: used to sign in, it cannot turn 2FA off, nor sign in again', async () => {
    const dev = await registerDeveloper(call);
    const { secret } = await enableTwoFactor(call, server, dev);
    const code = await nextTotpCode(server, secret);
    expect((await verifyTwoFactor(call, await loginChallenge(call, dev), code)).status).toBe(200);
    expectError(await call('POST', '/v1/auth/2fa/disable', { token: dev.accessToken, body: { password: dev.password, code } }), 401, 'INVALID_TWO_FACTOR_CODE');
    expectError(await verifyTwoFactor(call, await loginChallenge(call, dev), code), 401, 'INVALID_TWO_FACTOR_CODE');
  });
});
