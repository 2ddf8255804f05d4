import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../../server/app.js';
import type { Clock } from '../../server/clock.js';
import { loadConfig, type Env } from '../../server/config.js';
import { MasterKey } from '../../server/crypto/master-key.js';
import { createHttpServer, guardRequestBodies } from '../../server/http/http-server.js';
import { createLogger } from '../../server/http/logging.js';
import { generateSigningKey, Keyring } from '../../server/signing/keyring.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { closeNow, listenOnLoopback } from './local-http.js';

/**
 * One cache of the pinned Node runtimes for every test server (and test/packaging): each platform's
 * runtime is downloaded once per machine, not once per server.
 */
export const NODE_RUNTIMES_DIR = path.resolve(import.meta.dirname, '../.artifacts/node-runtimes');

/** System time plus an offset the test can move forward: expiry, windows and TOTP steps on demand. */
export class ShiftableClock implements Clock {
  offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
  /**
   * Moves the clock just past the start of the next fixed window of `windowMs`. Rate windows are
   * aligned to the clock, so counts start from zero and nearly a whole window lies ahead: a test's
   * attempts cannot straddle two windows, however slow the machine.
   */
  enterFreshWindow(windowMs: number): void {
    this.advance(windowMs - (this.now().getTime() % windowMs) + 1000);
  }
}

export interface TestServer {
  url: string;
  database: TestDatabase;
  clock: ShiftableClock;
  adminToken: string;
  /** LATCHKEY_DATA_DIR: stored artifacts are under `storage/`. */
  dataDir: string;
  close(): Promise<void>;
}

export interface TestServerOptions {
  env?: Env;
  /** Share another server's database: several processes behind one load balancer. */
  database?: TestDatabase;
  /** Share another server's data directory (its stored artifacts) too. */
  dataDir?: string;
  /** Real docs/contract.md rate limits instead of the relaxed default that lets a test file run freely. */
  realRateLimits?: boolean;
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const database = options.database ?? (await createTestDatabase());
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-test-data-'));
  const adminToken = randomBytes(24).toString('hex');
  // Listening first gives the port, so PUBLIC_BASE_URL (baked into protected builds, signed links) is right.
  // The production server's header and body limits (server/http/http-server.ts), from `env` when a test sets them.
  const server = createHttpServer(loadConfig({ ...options.env }).requestLimits);
  const url = await listenOnLoopback(server);
  const config = loadConfig({
    PORT: '0',
    DATABASE_URL: database.url,
    LATCHKEY_DATA_DIR: dataDir,
    PUBLIC_BASE_URL: url,
    LATCHKEY_ADMIN_TOKEN: adminToken,
    LATCHKEY_RATE_LIMIT_MULTIPLIER: options.realRateLimits ? '1' : '1000',
    LATCHKEY_NODE_RUNTIMES_DIR: NODE_RUNTIMES_DIR,
    // Errors only: a 500 that happens once in a CI run leaves its cause in the log (TEST_LOG_LEVEL changes it).
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'error',
    // Every test checks that its routes declare the errors their services throw (a 500 naming the drift).
    LATCHKEY_STRICT_ERRORS: 'true',
    ...options.env,
  });
  const clock = new ShiftableClock();
  const { handler, jobs, listener, quotas } = createApp({
    config,
    db: database.db,
    clock,
    log: createLogger(config.logLevel),
    // LATCHKEY_MASTER_KEY in `env` for servers that must accept each other's tokens (several processes).
    masterKey: new MasterKey(config.masterKey ?? randomBytes(32)),
    // LATCHKEY_SIGNING_KEYS in `env` when a test needs known keys (rotation, several processes).
    keyring: new Keyring(config.signingKeys ?? [generateSigningKey()]),
  });
  // Like main.ts: the per-tenant quotas the database enforces take this server's configuration.
  await quotas.applyLimits();
  server.on('request', guardRequestBodies(handler, config.requestLimits));
  // Until the listener is fresh, API keys are looked up every time: waiting makes every test see the cache.
  await listener.start();
  // Like main.ts: builds become READY; LATCHKEY_RUN_JOBS=false leaves jobs to another server (or none).
  if (config.runJobs) jobs.start();
  return {
    url,
    database,
    clock,
    adminToken,
    dataDir,
    async close() {
      await jobs.stop();
      await closeNow(server);
      await listener.stop();
      if (!options.database) await database.drop();
      if (!options.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
