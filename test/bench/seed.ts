import { randomBytes } from 'node:crypto';
import { loadConfig, type TenantQuotas } from '../../server/config.js';
import { formData, type Call } from '../support/http.js';
import { expectStatus } from './lib.js';

export interface SeededDeveloper {
  id: string;
  password: string;
  accessToken: string;
  apiKey: string;
}

/** Registers a developer through the API, logs in and creates an API key. */
export async function seedDeveloper(call: Call): Promise<SeededDeveloper> {
  const email = `bench-${randomBytes(5).toString('hex')}@example.com`;
  const password = `pw-${randomBytes(8).toString('hex')}`;
  const reg = expectStatus(await call('POST', '/v1/auth/register', { body: { email, password, company_name: 'Bench Software' } }), 201, 'register');
  const login = expectStatus(await call('POST', '/v1/auth/login', { body: { email, password } }), 200, 'login');
  const key = expectStatus(await call('POST', '/v1/auth/api-keys/rotate', { token: login.body.access_token, body: { password } }), 200, 'rotate API key');
  return { id: reg.body.id, password, accessToken: login.body.access_token, apiKey: key.body.api_key };
}

export async function seedApp(call: Call, dev: SeededDeveloper, name: string): Promise<{ id: string }> {
  const res = await call('POST', '/v1/apps', { apiKey: dev.apiKey, body: { name, platforms: ['linux-x64', 'win-x64', 'mac-arm64'] } });
  return expectStatus(res, 201, 'create app').body;
}

/** Pro plan, through the operator endpoint: the free plan may create trial licenses only. */
export async function seedProPlan(call: Call, adminToken: string, dev: SeededDeveloper): Promise<void> {
  expectStatus(await call('PUT', `/v1/admin/developers/${dev.id}/plan`, { token: adminToken, body: { plan: 'pro' } }), 200, 'set plan');
}

/** `count` results of `make(i)`, at most `concurrency` requests in flight: a server's accept queue is finite. */
export async function seedMany<T>(count: number, make: (i: number) => Promise<T>, concurrency = 32): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      results[i] = await make(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return results;
}

export async function seedLicense(call: Call, dev: SeededDeveloper, body: Record<string, unknown>): Promise<{ license_id: string; license_key: string }> {
  return expectStatus(await call('POST', '/v1/licenses', { apiKey: dev.apiKey, body }), 201, 'create license').body;
}

/** A Pro developer's app with `count` licenses made from `license(i)` (app_id added): the developer, the app and the keys. */
export async function seedLicensedApp(
  service: { call: Call; adminToken: string },
  appName: string,
  count: number,
  license: (i: number) => Record<string, unknown>,
): Promise<{ dev: SeededDeveloper; app: { id: string }; keys: string[] }> {
  const { call } = service;
  const dev = await seedDeveloper(call);
  await seedProPlan(call, service.adminToken, dev);
  const app = await seedApp(call, dev, appName);
  const keys = await seedMany(count, async (i) => (await seedLicense(call, dev, { app_id: app.id, ...license(i) })).license_key);
  return { dev, app, keys };
}

/** A small build, delivered as uploaded (quick to process), once it is READY. */
export async function seedReadyBuild(call: Call, dev: SeededDeveloper, appId: string, version: string): Promise<{ id: string }> {
  const form = formData({ platform: 'cross_platform', version }, { artifact: { name: 'tool.bin', data: `bench build ${version}` } });
  const { id } = expectStatus(await call('POST', `/v1/apps/${appId}/builds`, { apiKey: dev.apiKey, raw: form }), 201, 'upload build').body;
  for (;;) {
    const build = expectStatus(await call('GET', `/v1/apps/${appId}/builds/${id}`, { apiKey: dev.apiKey }), 200, 'get build').body;
    if (build.status === 'READY') return build;
    if (build.status === 'FAILED') throw new Error(`build failed: ${build.failure_reason}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The per-tenant quotas the bench's Latchkey processes run with: the server's defaults, or what
 * LATCHKEY_QUOTA_* in this environment (which they inherit) sets. A bench's set-up stays within
 * them, as a real tenant must; it never raises them.
 */
export function serverQuotas(): TenantQuotas {
  const quotaEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('LATCHKEY_QUOTA_')));
  return loadConfig(quotaEnv).quotas;
}
