import http from 'node:http';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';

// The least a server can do to serve an object from S3: any GET (the bench sends Latchkey's signed
// link to both) answers one bare GetObject of S3_KEY, its body piped to the response with its
// length. No link check, no database, no Range.
const client = new S3Client({ endpoint: process.env.S3_ENDPOINT, region: 'us-east-1', forcePathStyle: true });

const server = http.createServer(async (req, res) => {
  try {
    if (req.method !== 'GET') {
      res.writeHead(404);
      return res.end();
    }
    const object = await client.send(new GetObjectCommand({ Bucket: process.env.S3_BUCKET, Key: process.env.S3_KEY }));
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': object.ContentLength! });
    await pipeline(object.Body as Readable, res);
  } catch (err) {
    // The load generator ends its rounds by closing connections mid-answer: routine, not a failure.
    if ((err as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE') return;
    console.error(err);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
});
server.listen(Number(process.env.PORT), process.env.HOST);
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
