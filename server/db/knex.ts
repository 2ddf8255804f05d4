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

/**
 * A statement with `$1, $2...` parameters sent straight to a pooled pg connection. For the few
 * queries every request runs (API key, rate limit, lists): there, knex's per-query machinery
 * (bindings, runner, events) cost nearly as much CPU as pg itself. In a transaction, `db` is the
 * transaction and its connection is the one used.
 */
export async function hotQuery<T>(db: Db, sql: string, values: unknown[]): Promise<T[]> {
  const connection: pg.ClientBase = await db.client.acquireConnection();
  try {
    return (await connection.query(sql, values)).rows;
  } finally {
    await db.client.releaseConnection(connection);
  }
}
