import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { createApp } from '../../server/app.js';
import type { Clock } from '../../server/clock.js';
import { loadConfig, type Env } from '../../server/config.js';
import { MasterKey } from '../../server/crypto/master-key.js';
import { createLogger } from '../../server/http/logging.js';
import { generateSigningKey, Keyring } from '../../server/signing/keyring.js';
import { createTestDatabase, type TestDatabase } from './database.js';

/** System time plus an offset the test can move forward: expiry, windows and TOTP steps on demand. */
export class ShiftableClock implements Clock {
  offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

export interface TestServer {
  url: string;
  database: TestDatabase;
  clock: ShiftableClock;
  adminToken: string;
  close(): Promise<void>;
}

export interface TestServerOptions {
  env?: Env;
  /** Share another server's database: several processes behind one load balancer. */
  database?: TestDatabase;
  /** Real SPEC.md rate limits instead of the relaxed default that lets a test file run freely. */
  realRateLimits?: boolean;
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const database = options.database ?? (await createTestDatabase());
  const adminToken = randomBytes(24).toString('hex');
  const config = loadConfig({
    PORT: '0',
    DATABASE_URL: database.url,
    LATCHKEY_ADMIN_TOKEN: adminToken,
    LATCHKEY_RATE_LIMIT_MULTIPLIER: options.realRateLimits ? '1' : '1000',
    LOG_LEVEL: 'silent',
    ...options.env,
  });
  const clock = new ShiftableClock();
  const { app } = createApp({
    config,
    db: database.db,
    clock,
    log: createLogger(config.logLevel),
    // LATCHKEY_MASTER_KEY in `env` for servers that must accept each other's tokens (several processes).
    masterKey: new MasterKey(config.masterKey ?? randomBytes(32)),
    // LATCHKEY_SIGNING_KEYS in `env` when a test needs known keys (rotation, several processes).
    keyring: new Keyring(config.signingKeys ?? [generateSigningKey()]),
  });
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    database,
    clock,
    adminToken,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (!options.database) await database.drop();
    },
  };
}
