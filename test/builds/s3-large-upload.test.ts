import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { multipartBody } from '../../cli/src/multipart-body.js';
import { freePort } from '../../server/db/embedded.js';
import { createTestDatabase } from '../support/database.js';
import { createApp, registerDeveloper } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { S3_CLIENT_ENV, startS3Server } from '../support/s3-server.js';
import { cleanUpServer, spawnServer, waitForReady } from '../support/server-process.js';

// A 200 MB artifact through the compiled server in a process of its own, stored in an S3 bucket
// (s3rver on 127.0.0.1): uploaded, protected and downloaded while the server's memory stays flat.
// The server's peak resident memory is read from the kernel (VmHWM, reset through clear_refs before
// each step), so the bound holds for the whole step, not for samples of it.

const MIB = 1024 * 1024;
const ARTIFACT_BYTES = 200 * MIB;
/**
 * Well below the artifact, whose bytes a server holding it would add whole: the parts of a multipart
 * upload in flight, the streams' buffers, and what the garbage collector has not yet given back
 * (measured about 80 MiB for 200 MB and for 500 MB alike: flat in the file's size).
 */
const MAX_RSS_GROWTH = 112 * MIB;

const s3 = await startS3Server();
const database = await createTestDatabase();
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-s3-large-'));
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const server = spawnServer({
  PORT: String(port),
  DATABASE_URL: database.url,
  LATCHKEY_DATA_DIR: dataDir,
  PUBLIC_BASE_URL: url,
  LATCHKEY_MASTER_KEY: randomBytes(32).toString('base64'),
  LATCHKEY_SIGNING_KEYS: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
  LATCHKEY_RATE_LIMIT_MULTIPLIER: '1000',
  LOG_LEVEL: 'warn',
  ...s3.env,
  ...S3_CLIENT_ENV,
});
afterAll(async () => {
  await cleanUpServer(server, undefined);
  await database.drop();
  await s3.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});
await waitForReady(server, url);

const pid = server.child.pid!;
const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
/** Runs `step` and answers how far the server's peak resident memory rose above where it stood before. */
async function rssGrowthOf(step: () => Promise<void>): Promise<number> {
  fs.writeFileSync(`/proc/${pid}/clear_refs`, '5'); // VmHWM := VmRSS
  const before = kib('VmRSS');
  await step();
  return kib('VmHWM') - before;
}

const call = client(url);
const dev = await registerDeveloper(call);
const app = await createApp(call, dev);

async function uploadFile(file: string): Promise<string> {
  const { contentType, length, body } = await multipartBody({ fields: { platform: 'cross_platform' }, file: { field: 'artifact', path: file }, onProgress: () => {} });
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}/v1/apps/${app.id}/builds`,
      { method: 'POST', headers: { 'content-type': contentType, 'content-length': String(length), authorization: `Bearer ${dev.accessToken}` } },
      async (res) => {
        const text = Buffer.concat(await res.toArray()).toString();
        if (res.statusCode !== 201) return reject(new Error(`upload answered ${res.statusCode}: ${text}`));
        resolve(JSON.parse(text).id);
      },
    );
    req.on('error', reject);
    pipeline(Readable.fromWeb(body as never), req).catch(reject);
  });
}

async function settled(buildId: string): Promise<Record<string, any>> {
  for (let poll = 0; poll < 1_200; poll++) {
    const build = (await call('GET', `/v1/apps/${app.id}/builds/${buildId}`, { token: dev.accessToken })).body;
    if (build.status === 'READY' || build.status === 'FAILED') return build;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`build ${buildId} not settled after 1,200 polls`);
}

/** Streams a download through SHA-256; answers its status, length and hash. */
function download(target: string, headers: Record<string, string> = {}): Promise<{ status: number; bytes: number; sha256: string; etag: string | undefined }> {
  return new Promise((resolve, reject) => {
    http
      .get(target, { headers }, async (res) => {
        const hash = createHash('sha256');
        let bytes = 0;
        for await (const chunk of res as AsyncIterable<Buffer>) {
          hash.update(chunk);
          bytes += chunk.length;
        }
        resolve({ status: res.statusCode!, bytes, sha256: hash.digest('hex'), etag: res.headers.etag });
      })
      .on('error', reject);
  });
}

describe('a 200 MB artifact in S3 storage', () => {
  it('is uploaded, protected and downloaded (whole and by Range) with the server memory flat', { timeout: 600_000 }, async () => {
    const file = path.join(dataDir, 'big-tool.bin');
    const block = randomBytes(MIB);
    const hash = createHash('sha256');
    await pipeline(
      Readable.from(
        (function* () {
          for (let i = 0; i < ARTIFACT_BYTES / MIB; i++) {
            hash.update(block);
            yield block;
          }
        })(),
      ),
      fs.createWriteStream(file),
    );
    const sha256 = hash.digest('hex');

    // Warm: the SDK's code loaded, the first allocations made, by a small build's round trip.
    const small = path.join(dataDir, 'small.bin');
    fs.writeFileSync(small, block);
    const warm = await settled(await uploadFile(small));
    expect(warm.status).toBe('READY');

    let buildId = '';
    const uploadGrowth = await rssGrowthOf(async () => {
      buildId = await uploadFile(file);
    });
    let build: Record<string, any> = {};
    const protectGrowth = await rssGrowthOf(async () => {
      build = await settled(buildId);
    });
    expect(build, build.failure_reason).toMatchObject({ status: 'READY', artifact_size_bytes: ARTIFACT_BYTES, sha256 });
    expect((await s3.keys()).filter((k) => k.includes(`/builds/${buildId}/`)).length).toBeGreaterThan(0);

    const link = (await call('GET', `/v1/apps/${app.id}/builds/${buildId}/download`, { token: dev.accessToken })).body.download_url as string;
    let whole: Awaited<ReturnType<typeof download>> | undefined;
    const downloadGrowth = await rssGrowthOf(async () => {
      whole = await download(link);
    });
    expect(whole).toEqual({ status: 200, bytes: ARTIFACT_BYTES, sha256, etag: `"${sha256}"` });
    const start = 150 * MIB + 7;
    const part = await download(link, { range: `bytes=${start}-${start + MIB - 1}` });
    expect(part).toMatchObject({ status: 206, bytes: MIB, sha256: createHash('sha256').update(block.subarray(7)).update(block.subarray(0, 7)).digest('hex') });

    process.stderr.write(
      `s3 200 MB: server peak RSS growth upload ${(uploadGrowth / MIB).toFixed(1)} MiB, protect ${(protectGrowth / MIB).toFixed(1)} MiB, download ${(downloadGrowth / MIB).toFixed(1)} MiB\n`,
    );
    expect(uploadGrowth).toBeLessThan(MAX_RSS_GROWTH);
    expect(protectGrowth).toBeLessThan(MAX_RSS_GROWTH);
    expect(downloadGrowth).toBeLessThan(MAX_RSS_GROWTH);
  });
});
