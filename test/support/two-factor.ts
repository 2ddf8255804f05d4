import { generate } from 'otplib';
import { expect } from 'vitest';
import type { TestDeveloper } from './fixtures.js';
import type { Call } from './http.js';
import type { TestServer } from './server.js';

const TOTP_STEP_MS = 30_000;

/** What an authenticator app shows one step after the last code used, so no code is ever a replay. */
export async function nextTotpCode(server: TestServer, secret: string): Promise<string> {
  server.clock.advance(TOTP_STEP_MS);
  return generate({ secret, epoch: Math.floor(server.clock.now().getTime() / 1000) });
}

/** A well-formed code that is not the given one. */
export const otherCode = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

export function secretOf(provisioningUri: string): string {
  const secret = new URL(provisioningUri).searchParams.get('secret');
  expect(secret).toBeTruthy();
  return secret!;
}

/** Sets up and confirms 2FA with the developer's access token (setup re-authenticates with the password). */
export async function enableTwoFactor(call: Call, server: TestServer, dev: TestDeveloper): Promise<{ secret: string; backupCodes: string[] }> {
  const setup = await call('POST', '/v1/auth/2fa/setup', { token: dev.accessToken, body: { password: dev.password } });
  expect(setup.status, JSON.stringify(setup.body)).toBe(200);
  const secret = secretOf(setup.body.provisioning_uri);
  const confirm = await call('POST', '/v1/auth/2fa/confirm', { token: dev.accessToken, body: { code: await nextTotpCode(server, secret) } });
  expect(confirm.status, JSON.stringify(confirm.body)).toBe(200);
  return { secret, backupCodes: setup.body.backup_codes };
}

/** Logs in with the password: the 2FA challenge token. */
export async function loginChallenge(call: Call, dev: TestDeveloper): Promise<string> {
  const res = await call('POST', '/v1/auth/login', { body: { email: dev.email, password: dev.password } });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ two_factor_required: true, challenge_token: expect.any(String) });
  return res.body.challenge_token;
}

export const verifyTwoFactor = (call: Call, challengeToken: string, code: string) => call('POST', '/v1/auth/login/verify-2fa', { body: { challenge_token: challengeToken, code } });
