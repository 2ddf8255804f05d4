import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * The AWS SDK's environment for s3rver: its one account (requests signed with any other key are
 * refused, InvalidAccessKeyId), and no notice that later SDK versions will need Node 22.
 */
export const S3_CLIENT_ENV = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };

/** A real S3 protocol server (s3rver) on 127.0.0.1, in a process of its own, its objects in a temporary directory. */
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

/** Starts `test/support/s3-store.ts` and answers its process and port once it listens (at most 60 s). */
function startStore(env: Record<string, string>): Promise<{ child: ChildProcess; port: number }> {
  // s3rver encrypts ListObjectsV2 continuation tokens with DES, which OpenSSL 3 keeps in its legacy provider.
  const child = spawn(process.execPath, ['--openssl-legacy-provider', '--import', 'tsx', 'test/support/s3-store.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`s3rver did not start within 60 s:\n${output}`));
    }, 60_000);
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    child.stdout!.on('data', (d: Buffer) => {
      output += d.toString();
      const match = /listening (\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ child, port: Number(match[1]) });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`s3rver exited with ${code}:\n${output}`));
    });
  });
}

async function stopStore(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

export async function startS3Server(bucket = 'latchkey-test'): Promise<S3Server> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-s3-'));
  const storeEnv = { S3_BUCKET: bucket, S3_DIRECTORY: directory };
  const first = await startStore({ ...storeEnv, PORT: '0' });
  const { port } = first;
  let { child } = first;
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: S3_CLIENT_ENV.AWS_ACCESS_KEY_ID, secretAccessKey: S3_CLIENT_ENV.AWS_SECRET_ACCESS_KEY },
  });
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
    pause: () => stopStore(child),
    async resume() {
      ({ child } = await startStore({ ...storeEnv, PORT: String(port) }));
    },
    async close() {
      client.destroy();
      await stopStore(child);
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}
