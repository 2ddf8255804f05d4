import { serveBaseline } from './serve.js';

// The query Latchkey's list runs (the page and, by a window function, the total) through the
// index apps_by_developer, without authentication, rate limiting or a framework: one round trip
// to PostgreSQL per request.
const developerId = process.env.BENCH_DEVELOPER_ID;

serveBaseline(async ({ pool }) => {
  const { rows } = await pool.query('SELECT *, count(*) OVER () AS total FROM apps WHERE developer_id = $1 ORDER BY created_at, id LIMIT 20 OFFSET 0', [developerId]);
  return rows;
});
