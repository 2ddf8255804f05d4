import fs from 'node:fs';
import path from 'node:path';
import { createApp } from './app.js';
import { systemClock } from './clock.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { MasterKey } from './crypto/master-key.js';
import { randomSecret } from './crypto/secrets.js';
import { DataDirLockedError, lockDataDir } from './db/data-dir-lock.js';
import { EmbeddedPostgresError, startEmbeddedPostgres, type EmbeddedCluster } from './db/embedded.js';
import { createDb } from './db/knex.js';
import { migrateToLatest } from './db/migrate.js';
import { closeServer, createHttpServer } from './http/http-server.js';
import { createLogger } from './http/logging.js';
import { loadKeyring } from './signing/load.js';
import { tightenDataDir } from './storage/data-dir.js';
import { sweepScratch } from './storage/scratch.js';

/** The configured master key, or in embedded mode one generated once into the data directory. */
function resolveMasterKey(config: Config): MasterKey {
  if (config.masterKey) return new MasterKey(config.masterKey);
  if (config.databaseUrl) {
    throw new ConfigError('LATCHKEY_MASTER_KEY is required when DATABASE_URL is set (32 bytes, base64)');
  }
  const file = path.join(config.dataDir, 'master.key');
  if (!fs.existsSync(file)) fs.writeFileSync(file, randomSecret(32), { mode: 0o600 });
  return new MasterKey(Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64url'));
}

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const log = createLogger(config.logLevel);
  const unlock = lockDataDir(config.dataDir);
  let cluster: EmbeddedCluster | undefined;
  const cleanups: (() => Promise<void> | void)[] = [unlock];
  try {
    const loose = tightenDataDir(config.dataDir);
    if (loose.length > 0) log.warn({ files: loose }, 'could not make these private to the server (0600/0700): check their owner');
    // Under the lock and before any job runs: nothing in the scratch space is in use.
    const swept = await sweepScratch(config.dataDir);
    if (swept > 0) log.info({ swept }, 'removed scratch directories that interrupted work left behind');
    const masterKey = resolveMasterKey(config);
    const keyring = loadKeyring(config);
    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      log.info({ dir: config.dataDir }, 'starting embedded PostgreSQL');
      cluster = await startEmbeddedPostgres(config.dataDir, (line) => log.debug({ component: 'postgres' }, line), {
        notice: (message) => log.warn({ component: 'postgres' }, message),
      });
      cleanups.unshift(() => cluster!.stop());
      databaseUrl = cluster.url;
    }
    const db = createDb(databaseUrl);
    cleanups.unshift(() => db.destroy());
    await migrateToLatest(db);

    const { handler, rateLimiter, jobs, listener, quotas, storage, uploads } = createApp({ config, db, clock: systemClock, log, masterKey, keyring });
    // The per-tenant quotas the database enforces by itself take this process's configuration.
    await quotas.applyLimits();
    void listener.start();
    cleanups.unshift(() => listener.stop());
    // Header and body limits before authentication; body time judged per route (uploads: idle only).
    const server = createHttpServer(config.requestLimits, handler).listen(config.port, config.host);
    await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
    cleanups.unshift(() => closeServer(server));
    log.info({ url: `http://${config.host}:${config.port}`, embedded: Boolean(cluster) }, 'latchkey is listening');

    if (config.runJobs) {
      jobs.start();
      cleanups.unshift(() => jobs.stop());
    }

    const sweeper = setInterval(() => {
      rateLimiter.sweep().catch((err) => log.warn({ err }, 'rate-limit sweep failed'));
      // Uploads a crash cut off; a day is far longer than any upload takes.
      storage.sweepStaged(86_400_000).catch((err) => log.warn({ err }, 'staging sweep failed'));
      // Resumable uploads nobody finished within their day, with their chunks.
      uploads.sweepExpired(1000).catch((err) => log.warn({ err }, 'upload session sweep failed'));
    }, 300_000);
    sweeper.unref();
    cleanups.unshift(() => clearInterval(sweeper));
  } catch (err) {
    await shutdown(cleanups);
    throw err;
  }

  let stopping = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'shutting down');
      shutdown(cleanups).then(
        () => process.exit(0),
        (err) => {
          log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
    });
  }
}

/** Runs cleanups newest first: stop accepting requests, close the pool, stop PostgreSQL, unlock. */
async function shutdown(cleanups: (() => Promise<void> | void)[]): Promise<void> {
  for (const cleanup of cleanups) await cleanup();
}

main().catch((err) => {
  // Operator mistakes get their message alone; anything else keeps its stack for the bug report.
  const expected = err instanceof ConfigError || err instanceof DataDirLockedError || err instanceof EmbeddedPostgresError;
  console.error(expected ? err.message : err);
  process.exit(1);
});
