import { afterAll } from 'vitest';
import type { LicenseClientOptions } from '../../../runtime-sdk/index.js';
import { createTestDatabase } from '../../support/database.js';
import { createApp, registerDeveloper, setPlan, type TestDeveloper } from '../../support/fixtures.js';
import { client, type Call } from '../../support/http.js';
import { startTestServer, type TestServer } from '../../support/server.js';

/** The real authority (Koa + PostgreSQL, its own database) with a Pro developer's app, for SDK suites. */
export interface RealAuthority {
  server: TestServer;
  call: Call;
  dev: TestDeveloper;
  app: { id: string; fingerprint_salt: string } & Record<string, unknown>;
  /** The JWK Set an app pins (`GET /v1/public/keys`). */
  publicKeys: LicenseClientOptions['publicKeys'];
  /** SDK options for the app against this authority, with no background work at start and no retries. */
  sdkOptions: Omit<LicenseClientOptions, 'cacheDir'>;
}

/** Started at the file's top level (or in `beforeAll`); stopped, its database dropped, after the file's tests. */
export async function startRealAuthority(): Promise<RealAuthority> {
  const database = await createTestDatabase();
  const server = await startTestServer({ database });
  afterAll(async () => {
    await server.close();
    await database.drop();
  });
  const call = client(server.url);
  const dev = await registerDeveloper(call);
  await setPlan(call, server.adminToken, dev.id, 'pro');
  const app = await createApp(call, dev);
  const publicKeys = (await call('GET', '/v1/public/keys')).body as LicenseClientOptions['publicKeys'];
  const sdkOptions = {
    appId: app.id,
    serverUrl: server.url,
    publicKeys,
    fingerprintSalt: app.fingerprint_salt,
    appVersion: '2.3.0',
    refreshOnStart: false,
    startupDelayMs: 0,
    retryLimit: 0,
  };
  return { server, call, dev, app, publicKeys, sdkOptions };
}
