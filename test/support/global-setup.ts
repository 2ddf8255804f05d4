import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { randomHex } from '../../server/crypto/secrets.js';
import { startEmbeddedPostgres, type EmbeddedCluster } from '../../server/db/embedded.js';
import { createDb } from '../../server/db/knex.js';
import { migrateToLatest } from '../../server/db/migrate.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    templateDb: string;
  }
}

/**
 * One PostgreSQL for the run (the machine's when DATABASE_URL is set, else an embedded one) and
 * one migrated template database; each test file clones the template, so files run in parallel.
 */
export default async function setup(project: TestProject) {
  let cluster: EmbeddedCluster | undefined;
  let tmp: string | undefined;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-test-pg-'));
    cluster = await startEmbeddedPostgres(tmp, () => {});
    adminUrl = cluster.url;
  }
  const templateDb = `latchkey_tpl_${randomHex(6)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${templateDb}`);
  const db = createDb(withDatabase(adminUrl, templateDb));
  await migrateToLatest(db);
  await db.destroy();

  project.provide('pgAdminUrl', adminUrl);
  project.provide('templateDb', templateDb);

  return async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${templateDb} WITH (FORCE)`);
    await admin.end();
    await cluster?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  };
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}
