import type { Knex } from 'knex';

/** One schema change: what each file of migrations/ exports, and what migrate.ts runs in order. */
export interface Migration {
  name: string;
  up(db: Knex): Promise<void>;
  down(db: Knex): Promise<void>;
}
