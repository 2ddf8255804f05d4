import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';

// The least a server can do with an artifact: `POST /upload` streams the request body to a file as
// is (no multipart parsing, no hash, no database), `GET /download` streams that file back with its
// length. Latchkey is measured against it on the same bytes.
const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'latchkey-bench-baseline-'));
const file = path.join(dir, 'artifact');
const CHUNK = 1024 * 1024;

const server = http.createServer(async (req, res) => {
  try {
    if (req.method === 'POST' && req.url === '/upload') {
      await pipeline(req, createWriteStream(file, { highWaterMark: CHUNK }));
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end('{}');
    } else if (req.method === 'GET' && req.url === '/download') {
      const { size } = await fs.stat(file);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
      await pipeline(createReadStream(file, { highWaterMark: CHUNK }), res);
    } else {
      res.writeHead(404);
      res.end();
    }
  } catch (err) {
    console.error(err);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
});
server.listen(Number(process.env.PORT), process.env.HOST);
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close();
  fs.rm(dir, { recursive: true, force: true }).then(() => process.exit(0));
});
