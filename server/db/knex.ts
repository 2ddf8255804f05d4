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

/** Postgres' foreign_key_violation: a referenced row was deleted by a transaction that committed meanwhile. */
export function isForeignKeyViolation(err: unknown): boolean {
  return (err as { code?: string })?.code === '23503';
}

/**
 * A statement with `$1, $2...` parameters sent straight to a pooled pg connection. For the few
 * queries every request runs (API key, rate limit, lists): there, knex's per-query machinery
 * (bindings, runner, events) cost nearly as much CPU as pg itself. In a transaction, `db` is the
 * transaction and its connection is the one used. A `preparedName` (one per distinct `sql`) makes it
 * a prepared statement on each connection: PostgreSQL parses and plans it once, not on every run.
 */
export async function hotQuery<T>(db: Db, sql: string, values: unknown[], preparedName?: string): Promise<T[]> {
  const connection: pg.ClientBase = await db.client.acquireConnection();
  try {
    // pg copies a query config object on every call (it showed in profiles): one only when named.
    const result = preparedName === undefined ? await connection.query(sql, values) : await connection.query({ name: preparedName, text: sql, values });
    return result.rows;
  } finally {
    await db.client.releaseConnection(connection);
  }
}

/**
 * Several statements in one string, sent at once by the simple query protocol: one round trip,
 * answered with one result per statement. The protocol takes no parameters, so `sql` holds no
 * value from a request, only literals its caller made (pg's escapeLiteral). A statement that fails
 * stops the rest: an explicit transaction it was in is rolled back before the connection goes back.
 */
export async function simpleQueryBatch<T extends pg.QueryResultRow>(db: Db, sql: string): Promise<pg.QueryResult<T>[]> {
  const connection: pg.ClientBase = await db.client.acquireConnection();
  try {
    return (await connection.query<T>(sql)) as unknown as pg.QueryResult<T>[];
  } catch (err) {
    await connection.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    await db.client.releaseConnection(connection);
  }
}
