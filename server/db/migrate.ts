import type { Knex } from 'knex';
import type { Db } from './knex.js';
import type { Migration } from './migration.js';
import { migrations } from './migrations/index.js';

/** Migrations are an explicit ordered list (not a folder scan) so they load the same under tsx, vitest and a bundle. */
const source: Knex.MigrationSource<Migration> = {
  getMigrations: async () => migrations,
  getMigrationName: (m) => m.name,
  getMigration: async (m) => ({ up: m.up, down: m.down }),
};

/** The advisory lock that makes the migrations of instances started together take turns (hashtext('latchkey.migrate')). */
const MIGRATE_LOCK = 'latchkey.migrate';

/**
 * Brings the schema up to date. Instances started at once on one database take turns under an
 * advisory lock held by a transaction beside the migrations' own connection: the first migrates,
 * the others then find nothing left to do. knex's own lock row would instead fail them ("Migration
 * table is already locked"), and two creating its tables at once on a new database collide.
 */
export async function migrateToLatest(db: Db): Promise<void> {
  await db.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [MIGRATE_LOCK]);
    await db.migrate.latest({ migrationSource: source });
  });
}

/** The migrations this database has run and those it has not, by name (`latchkey doctor`). */
export async function migrationStatus(db: Db): Promise<{ applied: string[]; pending: string[] }> {
  const [completed, pending] = (await db.migrate.list({ migrationSource: source })) as [{ name: string }[], Migration[]];
  return { applied: completed.map((m) => m.name), pending: pending.map((m) => m.name) };
}
