import { afterAll } from 'vitest';
import { createApp, registerDeveloper, setPlan, type TestDeveloper } from '../support/fixtures.js';
import { client, type Call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

export interface Tenant {
  call: Call;
  dev: TestDeveloper;
  app: Awaited<ReturnType<typeof createApp>>;
}

/** A developer (Pro unless told otherwise) with one app: what most licensing tests start from. */
export async function tenant(server: TestServer, options: { plan?: 'free' | 'pro'; app?: Record<string, unknown> } = {}): Promise<Tenant> {
  const call = client(server.url);
  const dev = await registerDeveloper(call);
  if ((options.plan ?? 'pro') === 'pro') await setPlan(call, server.adminToken, dev.id, 'pro');
  const app = await createApp(call, dev, options.app);
  return { call, dev, app };
}

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

/** A test server for the whole file (closed after it) with one tenant on it: the start of most files. */
export async function serverWithTenant(options: Parameters<typeof tenant>[1] = {}): Promise<{ server: TestServer; t: Tenant }> {
  const server = await startTestServer();
  afterAll(() => server.close());
  return { server, t: await tenant(server, options) };
}
