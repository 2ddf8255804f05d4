import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';

// The object store the S3 benches read from: s3rver (an S3 protocol server) on PORT, in a process of
// its own so that neither the server measured nor the load generator pays for it, with the bucket
// S3_BUCKET made at start. Its objects live in a temporary directory, removed when it stops.
const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-bench-s3-'));
const store = new S3rver({ address: process.env.HOST, port: Number(process.env.PORT), silent: true, directory, configureBuckets: [{ name: process.env.S3_BUCKET! }] });
await store.run();
process.once('SIGTERM', () => {
  store.httpServer.closeAllConnections();
  void store.close().finally(() => {
    fs.rmSync(directory, { recursive: true, force: true });
    process.exit(0);
  });
});
