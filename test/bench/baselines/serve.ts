import http from 'node:http';
import pg from 'pg';

export interface BaselineRequest {
  pool: pg.Pool;
  /** The request path, for a baseline that answers more than one operation. */
  path: string;
  /** The raw request body ('' for a GET). */
  body: string;
  headers: http.IncomingHttpHeaders;
}

/**
 * A bare `node:http` server that answers every request with the handler's result as JSON: the
 * least a service can do for the same database work, and what Latchkey is measured against.
 * Its pool has the size of Latchkey's (10), so neither side gets more database connections.
 */
export function serveBaseline(handler: (req: BaselineRequest) => Promise<unknown>): void {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    try {
      const json = JSON.stringify(await handler({ pool, path: req.url ?? '/', body, headers: req.headers }));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
      res.end(json);
    } catch (err) {
      console.error(err);
      res.writeHead(500);
      res.end();
    }
  });
  server.listen(Number(process.env.PORT), process.env.HOST);
  process.once('SIGTERM', () => {
    server.closeAllConnections();
    server.close();
    pool.end().then(() => process.exit(0));
  });
}
