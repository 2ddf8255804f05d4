import knexFactory, { type Knex } from 'knex';
import pg from 'pg';

// bigint columns (counters, byte sizes) fit comfortably in a JS number for this service's ranges.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Db = Knex;

export function createDb(connectionString: string, pool: { min?: number; max?: number } = {}): Db {
  return knexFactory({
    client: 'pg',
    connection: { connectionString, application_name: 'latchkey' },
    pool: { min: pool.min ?? 0, max: pool.max ?? 10 },
  });
}

/** Postgres' unique_violation, optionally on a named constraint or index. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}
