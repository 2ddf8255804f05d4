import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { EICAR_SIGNATURE } from '../../server/builds/scanning/eicar.js';
import { owner, settled, uploadBuild, type Owner } from './support.js';

let server: TestServer;
let o: Owner;
let build: Record<string, any>;
let bytes: Buffer;
let url: string;

const DAY_MS = 86_400_000;

beforeAll(async () => {
  server = await startTestServer();
  o = await owner(server);
  bytes = Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 7) % 256));
  build = await settled(o, (await uploadBuild(o, { data: new Uint8Array(bytes), name: 'tool.bin' })).id);
  url = (await linkFor(build.id)).body.download_url;
});
afterAll(() => server.close());

const linkFor = (buildId: string) => o.call('GET', `/v1/apps/${o.app.id}/builds/${buildId}/download`, { token: o.dev.accessToken });

async function get(target: string, headers: Record<string, string> = {}, method = 'GET') {
  const res = await fetch(target, { method, headers });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

describe('GET /v1/apps/{app_id}/builds/{build_id}/download', () => {
  it('answers a signed URL valid for 7 days', async () => {
    const before = Date.now();
    const res = await linkFor(build.id);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['download_url', 'expires_at']);
    expect(res.body.download_url).toMatch(new RegExp(`^${server.url}/v1/downloads/${build.id}\\?expires=\\d+&signature=[\\w-]{43}$`));
    const expires = Date.parse(res.body.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 7 * DAY_MS - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 7 * DAY_MS);
  });

  it('is refused for a build that is not READY, and for a missing one', async () => {
    const failed = await settled(o, (await uploadBuild(o, { data: new Uint8Array(EICAR_SIGNATURE), name: 'x.com' })).id);
    expect(failed.status).toBe('FAILED');
    expectError(await linkFor(failed.id), 409, 'BUILD_NOT_READY');
    expectError(await linkFor('bld_missing'), 404, 'BUILD_NOT_FOUND');
  });
});

describe('the signed URL', () => {
  it('serves the package with Content-Length and its SHA-256 as ETag', async () => {
    const res = await get(url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(bytes.length));
    expect(res.headers.get('etag')).toBe(`"${build.sha256}"`);
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="tool.bin"');
    expect(res.body.equals(bytes)).toBe(true);
    expect(createHash('sha256').update(res.body).digest('hex')).toBe(build.sha256);
  });

  it.each([
    ['bytes=0-9', 0, 9],
    ['bytes=99990-', 99_990, 99_999],
    ['bytes=-16', 99_984, 99_999],
    ['bytes=50000-50000', 50_000, 50_000],
    ['bytes=99000-200000', 99_000, 99_999],
  ])('serves Range %s as 206', async (range, start, end) => {
    const res = await get(url, { range });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes ${start}-${end}/${bytes.length}`);
    expect(res.headers.get('content-length')).toBe(String(end - start + 1));
    expect(res.body.equals(bytes.subarray(start, end + 1))).toBe(true);
  });

  it('answers 416 to a range past the end, and the whole file to one it does not parse', async () => {
    const past = await get(url, { range: `bytes=${bytes.length}-` });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe(`bytes */${bytes.length}`);
    expect(JSON.parse(past.body.toString()).error_code).toBe('RANGE_NOT_SATISFIABLE');
    for (const range of ['bytes=0-1,5-6', 'items=0-1', 'bytes=9-2']) {
      const whole = await get(url, { range });
      expect(whole.status).toBe(200);
      expect(whole.body.length).toBe(bytes.length);
    }
  });

  it('answers 304 to If-None-Match with the ETag, and ignores a Range whose If-Range is stale', async () => {
    const etag = `"${build.sha256}"`;
    const notModified = await get(url, { 'if-none-match': etag });
    expect(notModified.status).toBe(304);
    expect(notModified.body.length).toBe(0);
    expect((await get(url, { 'if-none-match': '"other"' })).status).toBe(200);
    expect((await get(url, { range: 'bytes=0-9', 'if-range': etag })).status).toBe(206);
    const stale = await get(url, { range: 'bytes=0-9', 'if-range': '"other"' });
    expect(stale.status).toBe(200);
    expect(stale.body.length).toBe(bytes.length);
  });

  it('answers HEAD with the headers alone', async () => {
    const res = await get(url, {}, 'HEAD');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(bytes.length));
    expect(res.headers.get('etag')).toBe(`"${build.sha256}"`);
    expect(res.body.length).toBe(0);
  });

  it('is a 403, not a file, once tampered with', async () => {
    const other = await settled(o, (await uploadBuild(o, { data: 'other', name: 'other.bin' })).id);
    const u = new URL(url);
    const signature = u.searchParams.get('signature')!;
    const expires = u.searchParams.get('expires')!;
    const tampered = [
      `${u.origin}${u.pathname}?expires=${expires}&signature=${signature.slice(0, -2)}AA`,
      `${u.origin}${u.pathname}?expires=${Number(expires) + 86_400}&signature=${signature}`,
      `${u.origin}/v1/downloads/${other.id}?expires=${expires}&signature=${signature}`,
      `${u.origin}${u.pathname}?expires=${expires}`,
      `${u.origin}${u.pathname}`,
      `${u.origin}${u.pathname}?expires=soon&signature=${signature}`,
    ];
    for (const target of tampered) {
      const res = await o.call('GET', target.slice(server.url.length));
      expectError(res, 403, 'DOWNLOAD_LINK_INVALID');
    }
  });

  it('is a 403 once expired', async () => {
    try {
      server.clock.advance(7 * DAY_MS + 1000);
      expectError(await o.call('GET', url.slice(server.url.length)), 403, 'DOWNLOAD_LINK_EXPIRED');
    } finally {
      server.clock.offsetMs = 0;
    }
    expect((await get(url)).status).toBe(200);
  });

  it('is a 404 once the build is deleted', async () => {
    const gone = await settled(o, (await uploadBuild(o, { data: 'bye', name: 'bye.bin' })).id);
    const link = (await linkFor(gone.id)).body.download_url;
    expect((await o.call('DELETE', `/v1/apps/${o.app.id}/builds/${gone.id}`, { token: o.dev.accessToken })).status).toBe(204);
    expectError(await o.call('GET', link.slice(server.url.length)), 404, 'BUILD_NOT_FOUND');
  });
});
