import { createHash, randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { S3_CLIENT_ENV, startS3Server } from '../support/s3-server.js';
import { startTestServer } from '../support/server.js';
import { brokerOf, merchant, readyBuild } from '../entitlements/support.js';
import { owner, settled, upload, uploadBuild, type Owner } from './support.js';

// LATCHKEY_STORAGE=s3 through the HTTP API, against a real S3 protocol server (s3rver) on 127.0.0.1:
// uploads, the protection job, downloads, deletion, presigned redirects, and a bucket that fails.

Object.assign(process.env, S3_CLIENT_ENV); // the AWS SDK's default credential chain reads the keys
const s3 = await startS3Server();
const server = await startTestServer({ env: s3.env });
const presigning = await startTestServer({ env: { ...s3.env, LATCHKEY_S3_PRESIGN: 'true' } });
afterAll(async () => {
  await presigning.close();
  await server.close();
  await s3.close();
});

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const linkFor = async (o: Owner, buildId: string) => {
  const res = await o.call('GET', `/v1/apps/${o.app.id}/builds/${buildId}/download`, { token: o.dev.accessToken });
  expect(res.status).toBe(200);
  return res.body.download_url as string;
};
async function get(url: string, init: RequestInit = {}) {
  const res = await fetch(url, init);
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}
const buildCount = async (o: Owner) => (await o.call('GET', `/v1/apps/${o.app.id}/builds`, { token: o.dev.accessToken })).headers.get('x-total-count');

const o = await owner(server);
const data = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 13) % 256));
const plain = await settled(o, (await uploadBuild(o, { data: new Uint8Array(data), name: 'tool.bin' })).id);
const plainUrl = await linkFor(o, plain.id);

describe('builds stored in an S3 bucket', () => {
  it('are protected by the job from the bucket into the bucket, leaving nothing staged', async () => {
    const build = await settled(o, (await uploadBuild(o, { data: 'console.log("from the bucket")\n', name: 'main.js' })).id);
    expect(build, build.failure_reason).toMatchObject({ status: 'READY', package_format: 'javascript_bundle' });
    const keys = await s3.keys();
    expect(keys.filter((k) => k.includes(`/builds/${build.id}/`))).toHaveLength(2); // the artifact and its package
    expect(keys.filter((k) => k.startsWith('staging/'))).toEqual([]);
    const res = await get(await linkFor(o, build.id));
    expect(res.status).toBe(200);
    expect(sha256(res.body)).toBe(build.sha256);
    expect(res.body.length).toBe(build.protected_size_bytes);
  });

  it('download whole with the SHA-256 as ETag, by Range, conditionally, and by HEAD', async () => {
    expect(plain).toMatchObject({ status: 'READY', sha256: sha256(data) });
    const whole = await get(plainUrl);
    expect(whole.status).toBe(200);
    expect(whole.body.equals(data)).toBe(true);
    expect(whole.headers.get('etag')).toBe(`"${plain.sha256}"`);
    expect(whole.headers.get('content-length')).toBe(String(data.length));
    expect(whole.headers.get('content-disposition')).toBe('attachment; filename="tool.bin"');

    const part = await get(plainUrl, { headers: { range: 'bytes=1000-1999' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 1000-1999/${data.length}`);
    expect(part.body.equals(data.subarray(1000, 2000))).toBe(true);
    const tail = await get(plainUrl, { headers: { range: 'bytes=-10' } });
    expect(tail.body.equals(data.subarray(-10))).toBe(true);
    const outside = await get(plainUrl, { headers: { range: `bytes=${data.length}-` } });
    expect(outside.status).toBe(416);
    expect(outside.headers.get('content-range')).toBe(`bytes */${data.length}`);

    expect((await get(plainUrl, { headers: { 'if-none-match': `"${plain.sha256}"` } })).status).toBe(304);
    const head = await get(plainUrl, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(data.length));
  });

  it('check the signed link before anything is read', async () => {
    const forged = plainUrl.replace(/signature=[\w-]+/, 'signature=' + 'A'.repeat(43));
    const res = await fetch(forged);
    expect(res.status).toBe(403);
    expect((await res.json()).error_code).toBe('DOWNLOAD_LINK_INVALID');
  });

  it('go from the bucket with the build when it is deleted', async () => {
    const build = await settled(o, (await uploadBuild(o, { data: new Uint8Array(data.subarray(0, 5000)), name: 'gone.bin' })).id);
    expect((await s3.keys()).some((k) => k.includes(`/builds/${build.id}/`))).toBe(true);
    expect((await o.call('DELETE', `/v1/apps/${o.app.id}/builds/${build.id}`, { token: o.dev.accessToken })).status).toBe(204);
    expect((await s3.keys()).filter((k) => k.includes(`/builds/${build.id}/`))).toEqual([]);
  });
});

describe('resumable uploads into the bucket', () => {
  it('keep each chunk as an object, join them on completion, and leave no chunk or staged object', async () => {
    const file = Buffer.concat([data, data, data]);
    const session = await o.call('POST', `/v1/apps/${o.app.id}/uploads`, {
      token: o.dev.accessToken,
      body: { filename: 'big-tool.bin', size_bytes: file.length, sha256: sha256(file), platform: 'cross_platform' },
    });
    expect(session.status).toBe(201);
    const put = (offset: number, bytes: Buffer) =>
      fetch(`${server.url}/v1/apps/${o.app.id}/uploads/${session.body.id}?offset=${offset}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${o.dev.accessToken}`, 'content-type': 'application/octet-stream' },
        body: new Uint8Array(bytes),
      });
    expect((await put(0, data)).status).toBe(200);
    // A chunk the bucket cannot take: 503, and the session still stands where it stood. The chunk
    // was read in part: the answer closes the connection, which would otherwise hold the client's
    // next request behind the unread rest until the idle timeout.
    await s3.pause();
    try {
      const refused = await put(data.length, data);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('connection')).toBe('close');
    } finally {
      await s3.resume();
    }
    const where = await o.call('GET', `/v1/apps/${o.app.id}/uploads/${session.body.id}`, { token: o.dev.accessToken });
    expect(where.body.offset).toBe(data.length);
    expect((await put(data.length, file.subarray(data.length))).status).toBe(200);
    expect(await s3.keys(`uploads/${session.body.id}/`)).toHaveLength(2);
    const done = await o.call('POST', `/v1/apps/${o.app.id}/uploads/${session.body.id}/complete`, { token: o.dev.accessToken });
    expect(done.status, JSON.stringify(done.body)).toBe(201);
    const build = await settled(o, done.body.id);
    expect(build).toMatchObject({ status: 'READY', artifact_sha256: sha256(file) });
    expect(await s3.keys(`uploads/${session.body.id}/`)).toEqual([]);
    expect(await s3.keys('staging/')).toEqual([]);
    expect(sha256((await get(await linkFor(o, build.id))).body)).toBe(sha256(file));
  });

  it('keep the acknowledged one of two attempts at one chunk sent at once: each writes a key of its own', async () => {
    const [first, second] = [randomBytes(2 * 1024 * 1024), randomBytes(2 * 1024 * 1024)];
    const session = await o.call('POST', `/v1/apps/${o.app.id}/uploads`, {
      token: o.dev.accessToken,
      body: { filename: 'raced.bin', size_bytes: first.length, sha256: sha256(first), platform: 'cross_platform' },
    });
    expect(session.status).toBe(201);
    const put = (bytes: Buffer) =>
      fetch(`${server.url}/v1/apps/${o.app.id}/uploads/${session.body.id}?offset=0`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${o.dev.accessToken}`, 'content-type': 'application/octet-stream' },
        body: new Uint8Array(bytes),
      });
    const answers = await Promise.all([put(first), put(second)]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    const kept = answers[0]!.status === 200 ? first : second;
    expect(await s3.keys(`uploads/${session.body.id}/`)).toHaveLength(1);
    // What completing finds is the acknowledged chunk, whole: the declared file, or the other one's hash.
    const done = await o.call('POST', `/v1/apps/${o.app.id}/uploads/${session.body.id}/complete`, { token: o.dev.accessToken });
    const received = done.status === 201 ? (await settled(o, done.body.id)).artifact_sha256 : /hash to ([0-9a-f]{64})/.exec(done.body.detail)?.[1];
    expect(received).toBe(sha256(kept));
    expect(await s3.keys(`uploads/${session.body.id}/`)).toEqual([]);
    expect(await s3.keys('staging/')).toEqual([]);
  });
});

describe('a bucket that does not answer', () => {
  it('fails uploads and downloads with 503 STORAGE_UNAVAILABLE, records nothing, and loses nothing', async () => {
    const before = await buildCount(o);
    const keysBefore = await s3.keys();
    await s3.pause();
    try {
      const res = await upload(o, { file: { data: new Uint8Array(data), name: 'tool.bin' }, fields: { platform: 'cross_platform' } });
      expectError(res, 503, 'STORAGE_UNAVAILABLE');
      expect(res.headers.get('retry-after')).toBe('5');
      const download = await fetch(plainUrl);
      expect(download.status).toBe(503);
      expect(await download.json()).toMatchObject({ error_code: 'STORAGE_UNAVAILABLE', status_code: 503 });
      expect(await buildCount(o)).toBe(before);
    } finally {
      await s3.resume();
    }
    expect(await s3.keys()).toEqual(keysBefore);
    const again = await get(plainUrl);
    expect(again.status).toBe(200);
    expect(again.body.equals(data)).toBe(true);
  });

  it('fails completing an upload with 503 and keeps the session, which completes once the bucket is back', async () => {
    const session = await o.call('POST', `/v1/apps/${o.app.id}/uploads`, {
      token: o.dev.accessToken,
      body: { filename: 'outage.bin', size_bytes: data.length, sha256: sha256(data), platform: 'cross_platform' },
    });
    const chunk = await fetch(`${server.url}/v1/apps/${o.app.id}/uploads/${session.body.id}?offset=0`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${o.dev.accessToken}`, 'content-type': 'application/octet-stream' },
      body: new Uint8Array(data),
    });
    expect(chunk.status).toBe(200);
    const complete = () => o.call('POST', `/v1/apps/${o.app.id}/uploads/${session.body.id}/complete`, { token: o.dev.accessToken });
    await s3.pause();
    try {
      // The chunk cannot be read nor the build written: the store's failure is the answer, and the
      // failed read of the chunk is no error left for nobody to handle (the server keeps serving).
      expectError(await complete(), 503, 'STORAGE_UNAVAILABLE');
      expect((await o.call('GET', `/v1/apps/${o.app.id}/uploads/${session.body.id}`, { token: o.dev.accessToken })).body.offset).toBe(data.length);
    } finally {
      await s3.resume();
    }
    const done = await complete();
    expect(done.status, JSON.stringify(done.body)).toBe(201);
    expect((await settled(o, done.body.id)).artifact_sha256).toBe(sha256(data));
  });
});

const p = await owner(presigning);
const presigned = await settled(p, (await uploadBuild(p, { data: new Uint8Array(data), name: 'tool.bin' })).id);
const url = await linkFor(p, presigned.id);

describe('with LATCHKEY_S3_PRESIGN=true', () => {
  it('a checked download answers 302 to a short-lived presigned GET of the object, which serves Range', async () => {
    const res = await fetch(url, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('etag')).toBe(`"${presigned.sha256}"`);
    const location = new URL(res.headers.get('location')!);
    expect(location.origin).toBe(s3.endpoint);
    expect(location.searchParams.get('X-Amz-Expires')).toBe('60');
    expect(location.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    const whole = await get(location.href);
    expect(whole.status).toBe(200);
    expect(whole.body.equals(data)).toBe(true);
    expect(whole.headers.get('content-disposition')).toBe('attachment; filename="tool.bin"');
    const part = await get(url, { headers: { range: 'bytes=5-14' } });
    expect(part.status).toBe(206);
    expect(part.body.equals(data.subarray(5, 15))).toBe(true);
  });

  it('a forged or conditional request is answered by the server, not redirected', async () => {
    const forged = await fetch(url.replace(/signature=[\w-]+/, 'signature=' + 'B'.repeat(43)), { redirect: 'manual' });
    expect(forged.status).toBe(403);
    expect(forged.headers.get('location')).toBeNull();
    const current = await fetch(url, { redirect: 'manual', headers: { 'if-none-match': `"${presigned.sha256}"` } });
    expect(current.status).toBe(304);
    expect(current.headers.get('location')).toBeNull();
  });
});

describe('delivery page downloads from the bucket', () => {
  it.each([
    ['LATCHKEY_S3_PRESIGN=false', server],
    ['LATCHKEY_S3_PRESIGN=true', presigning],
  ] as const)('are streamed by the server and count against the allowance with %s', async (_name, target) => {
    const m = await merchant(target, { platforms: ['linux-x64'], protection_level: 'none' });
    const build = await readyBuild(m, 'linux-x64', Buffer.from(data.subarray(0, 2048)));
    const b = brokerOf(m);
    const page = (await b.send(b.event())).body.delivery_url as string;
    const link = `${page}/builds/${build.id}`;
    const res = await fetch(link, { redirect: 'manual' });
    expect(res.status).toBe(200);
    expect(res.headers.get('location')).toBeNull();
    expect(sha256(Buffer.from(await res.arrayBuffer()))).toBe(build.sha256);
    expect(await (await fetch(page)).text()).toContain('9 of 10 downloads left.');
    // A range counts its share: half of the file, half a download (9.5 left, shown as 9).
    const half = await get(link, { headers: { range: 'bytes=1024-' }, redirect: 'manual' });
    expect(half.status).toBe(206);
    expect(half.body.equals(data.subarray(1024, 2048))).toBe(true);
    for (let i = 0; i < 8; i++) expect((await get(link, { redirect: 'manual' })).status).toBe(200);
    // Half a download left: the whole file is refused before anything is read.
    const refused = await fetch(link, { redirect: 'manual' });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('location')).toBeNull();
  });

  it('never hand out a presigned URL for a metered download, however small the range', async () => {
    // A presigned URL serves the whole object, any range, as often as asked while it lives: a
    // one-byte range answered with one would be a whole download charged as one byte.
    const m = await merchant(presigning, { platforms: ['linux-x64'], protection_level: 'none' });
    const build = await readyBuild(m, 'linux-x64', Buffer.from(data.subarray(0, 2048)));
    const b = brokerOf(m);
    const page = (await b.send(b.event())).body.delivery_url as string;
    const link = `${page}/builds/${build.id}`;
    for (let i = 0; i < 30; i++) {
      const res = await get(link, { headers: { range: 'bytes=0-0' }, redirect: 'manual' });
      expect(res.status).toBe(206);
      expect(res.headers.get('location')).toBeNull();
      expect(res.body.equals(data.subarray(0, 1))).toBe(true);
    }
    // 30 bytes of 2048 were served and counted.
    expect(await (await fetch(page)).text()).toContain('9 of 10 downloads left.');
  });
});
