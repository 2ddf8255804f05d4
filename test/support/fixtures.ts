import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { Call } from './http.js';

export interface TestDeveloper {
  id: string;
  email: string;
  password: string;
  accessToken: string;
  refreshToken: string;
  apiKey: string;
}

/** Registers a developer, logs in and creates an API key (scope `admin`). */
export async function registerDeveloper(call: Call, overrides: { email?: string; company_name?: string } = {}): Promise<TestDeveloper> {
  const email = overrides.email ?? `dev-${randomBytes(5).toString('hex')}@example.com`;
  const password = `pw-${randomBytes(8).toString('hex')}`;
  const reg = await call('POST', '/v1/auth/register', { body: { email, password, company_name: overrides.company_name ?? 'Acme Software' } });
  expect(reg.status).toBe(201);
  const login = await call('POST', '/v1/auth/login', { body: { email, password } });
  expect(login.status).toBe(200);
  // Changing API keys takes a signed-in session and the password again.
  const key = await call('POST', '/v1/auth/api-keys/rotate', { token: login.body.access_token, body: { password } });
  expect(key.status).toBe(200);
  return {
    id: reg.body.id,
    email,
    password,
    accessToken: login.body.access_token,
    refreshToken: login.body.refresh_token,
    apiKey: key.body.api_key,
  };
}

export async function createApp(call: Call, dev: TestDeveloper, body: Record<string, unknown> = {}) {
  const res = await call('POST', '/v1/apps', { token: dev.accessToken, body: { name: 'Notes Pro', platforms: ['linux-x64', 'win-x64'], ...body } });
  expect(res.status).toBe(201);
  return res.body as { id: string; fingerprint_salt: string } & Record<string, unknown>;
}

export async function setPlan(call: Call, adminToken: string, developerId: string, plan: 'free' | 'pro') {
  const res = await call('PUT', `/v1/admin/developers/${developerId}/plan`, { token: adminToken, body: { plan } });
  expect(res.status).toBe(200);
}

/** A device fingerprint as the runtime SDK sends it: a salted SHA-256, 64 lower-case hex characters. */
export function randomFingerprint(): string {
  return randomBytes(32).toString('hex');
}

export async function createLicense(call: Call, dev: TestDeveloper, body: Record<string, unknown>) {
  const res = await call('POST', '/v1/licenses', { apiKey: dev.apiKey, body });
  expect(res.status).toBe(201);
  return res.body as { license_id: string; license_key: string } & Record<string, unknown>;
}
