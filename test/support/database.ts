import pg from 'pg';
import { inject } from 'vitest';
import { randomHex } from '../../server/crypto/secrets.js';
import { createDb, type Db } from '../../server/db/knex.js';
import { withDatabase } from './global-setup.js';

export interface TestDatabase {
  url: string;
  db: Db;
  drop(): Promise<void>;
}

/** A fresh, migrated database cloned from the run's template. */
export function createTestDatabase(): Promise<TestDatabase> {
  return createDatabase(inject('templateDb'));
}

/** A fresh database without a table: what a server's migrations find on a new installation. */
export function createEmptyDatabase(): Promise<TestDatabase> {
  return createDatabase('template0');
}

async function createDatabase(template: string): Promise<TestDatabase> {
  const adminUrl = inject('pgAdminUrl');
  const name = `latchkey_t_${randomHex(6)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  // Concurrent clones of one template can collide on its lock; a short retry settles it.
  for (let attempt = 0; ; attempt++) {
    try {
      await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
      break;
    } catch (err) {
      if (attempt >= 20 || (err as { code?: string }).code !== '55006') throw err;
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
    }
  }
  await admin.end();
  const url = withDatabase(adminUrl, name);
  const db = createDb(url);
  return {
    url,
    db,
    async drop() {
      await db.destroy();
      const a = new pg.Client({ connectionString: adminUrl });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    },
  };
}
