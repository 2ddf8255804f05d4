import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';

// s3rver (an S3 protocol server) in a process of its own, on HOST:PORT (0: any free port), with the
// bucket S3_BUCKET made at start; prints `listening <port>` once it answers. Its objects live in
// S3_DIRECTORY (kept: a restart finds them) or a temporary directory removed when it stops.
// Run it with --openssl-legacy-provider: s3rver's ListObjectsV2 continuation tokens are DES-encrypted.
const directory = process.env.S3_DIRECTORY ?? fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-s3-'));
const store = new S3rver({ address: process.env.HOST, port: Number(process.env.PORT), silent: true, directory, configureBuckets: [{ name: process.env.S3_BUCKET! }] });
// s3rver removes a deleted object's parent directories once empty, racing its own concurrent
// requests in them: a listing of, or a write into, a directory another request just removed answers
// 500 InternalError. S3 has no directories, so here a deletion removes the object's files only.
store.store.deleteObject = async (bucket, key) => {
  const resources = ['object', 'object.md5', 'metadata.json'] as const;
  await Promise.all(resources.map((resource) => fs.promises.rm(store.store.getResourcePath(bucket, key, resource), { force: true })));
};
const { port } = await store.run();
process.stdout.write(`listening ${port}\n`);
process.once('SIGTERM', () => {
  store.httpServer.closeAllConnections();
  void store.close().finally(() => {
    if (!process.env.S3_DIRECTORY) fs.rmSync(directory, { recursive: true, force: true });
    process.exit(0);
  });
});
