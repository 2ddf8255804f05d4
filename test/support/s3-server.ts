import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

/**
 * The AWS SDK's environment for s3rver: its one account (requests signed with any other key are
 * refused, InvalidAccessKeyId), and no notice that later SDK versions will need Node 22.
 */
export const S3_CLIENT_ENV = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };

/** A real S3 protocol server (s3rver) on 127.0.0.1, its objects in a temporary directory. */
export interface S3Server {
  endpoint: string;
  bucket: string;
  /** A Latchkey server's settings for storing in this bucket (credentials aside: `S3_CLIENT_ENV`). */
  env: { LATCHKEY_STORAGE: 's3'; LATCHKEY_S3_BUCKET: string; LATCHKEY_S3_ENDPOINT: string; LATCHKEY_S3_FORCE_PATH_STYLE: 'true' };
  /** Every key in the bucket (under `prefix`), sorted. */
  keys(prefix?: string): Promise<string[]>;
  /** Stops answering (connections refused) until `resume`; the objects stay. */
  pause(): Promise<void>;
  resume(): Promise<void>;
  close(): Promise<void>;
}

export async function startS3Server(bucket = 'latchkey-test'): Promise<S3Server> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-s3-'));
  const listen = async (port: number) => {
    const server = new S3rver({ address: '127.0.0.1', port, silent: true, directory });
    const address = await server.run();
    return { server, port: address.port };
  };
  const first = await listen(0);
  const { port } = first;
  let { server } = first;
  let running = true;
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: S3_CLIENT_ENV.AWS_ACCESS_KEY_ID, secretAccessKey: S3_CLIENT_ENV.AWS_SECRET_ACCESS_KEY },
  });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  return {
    endpoint,
    bucket,
    env: { LATCHKEY_STORAGE: 's3', LATCHKEY_S3_BUCKET: bucket, LATCHKEY_S3_ENDPOINT: endpoint, LATCHKEY_S3_FORCE_PATH_STYLE: 'true' },
    async keys(prefix = '') {
      const keys: string[] = [];
      let token: string | undefined;
      for (let page = 0; page < 1000; page++) {
        const answer = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
        keys.push(...(answer.Contents ?? []).map((o) => o.Key!));
        if (!answer.IsTruncated) break;
        token = answer.NextContinuationToken;
      }
      return keys.sort();
    },
    async pause() {
      const closed = server.close();
      server.httpServer.closeAllConnections();
      await closed;
      running = false;
    },
    async resume() {
      ({ server } = await listen(port));
      running = true;
    },
    async close() {
      client.destroy();
      if (running) {
        const closed = server.close();
        server.httpServer.closeAllConnections();
        await closed;
      }
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}
