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

export async function migrateToLatest(db: Db): Promise<void> {
  await db.migrate.latest({ migrationSource: source });
}
