import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../support/server.js';
import { brokerOf, merchant, readyBuild } from './support.js';

// Issue 18 item 4: the store delivery page's allowance is counted in bytes served, so no mix of
// Range, If-Range, several ranges or HEAD serves more than the allowance's worth of files.
const server = await startTestServer();
afterAll(() => server.close());

const SIZE = 4096;

/** A store license whose app allows `limit` downloads, with one READY Linux build of `size` bytes. */
async function storeWithLimit(limit: number, size = SIZE) {
  const m = await merchant(server, { platforms: ['linux-x64'], protection_level: 'none', download_limit: limit });
  const build = await readyBuild(m, 'linux-x64', randomBytes(size));
  const b = brokerOf(m);
  const grant = await b.send(b.event());
  expect(grant.body.action).toBe('granted');
  return { link: `${grant.body.delivery_url as string}/builds/${build.id}`, build, db: m.server.database.db };
}

/** Status and body length of one request. */
async function fetchBytes(url: string, headers: Record<string, string> = {}, method = 'GET') {
  const res = await fetch(url, { method, headers });
  return { status: res.status, bytes: res.status < 300 ? (await res.arrayBuffer()).byteLength : (await res.arrayBuffer(), 0) };
}

describe('store delivery download allowance, counted in bytes', () => {
  it('counts a Range with a stale If-Range (the whole file answered) and several ranges: never more than the allowance', async () => {
    const s = await storeWithLimit(2);
    const mixes: Record<string, string>[] = [
      { range: 'bytes=1-', 'if-range': '"not-the-etag"' },
      { range: 'bytes=0-10,20-30' },
      { range: 'bytes=1-', 'if-range': `"${s.build.sha256}"` },
      { range: 'bytes=100-' },
      { range: 'bytes=-2000' },
      { range: 'bytes=1-', 'if-range': 'Wed, 21 Oct 2015 07:28:00 GMT' },
      {},
    ];
    let served = 0;
    const statuses: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (const headers of mixes) {
        const res = await fetchBytes(s.link, headers);
        statuses.push(res.status);
        served += res.bytes;
      }
    }
    expect(served).toBeLessThanOrEqual(2 * SIZE);
    expect(statuses).toContain(403);
    // Once used up, even a one-byte range and a HEAD are refused.
    expect((await fetchBytes(s.link, { range: 'bytes=0-0' })).status).toBe(403);
    expect((await fetchBytes(s.link, {}, 'HEAD')).status).toBe(403);
  });

  it('lets a stale If-Range serve the whole file once per download allowed', async () => {
    const s = await storeWithLimit(1);
    const stale = { range: 'bytes=1-', 'if-range': '"stale"' };
    expect(await fetchBytes(s.link, stale)).toEqual({ status: 200, bytes: SIZE });
    expect((await fetchBytes(s.link, stale)).status).toBe(403);
  });

  it('counts concurrent range requests one after another: together they serve at most the allowance', async () => {
    const s = await storeWithLimit(1);
    const results = await Promise.all(Array.from({ length: 12 }, () => fetchBytes(s.link, { range: 'bytes=1-' })));
    const served = results.reduce((sum, r) => sum + r.bytes, 0);
    expect(served).toBeLessThanOrEqual(SIZE);
    expect(results.filter((r) => r.status === 206)).toHaveLength(1);
    expect(results.filter((r) => r.status === 403)).toHaveLength(11);
  });

  it('lets a download resume where it stopped within the allowance: the two halves are one download', async () => {
    const s = await storeWithLimit(1);
    expect(await fetchBytes(s.link, { range: `bytes=0-${SIZE / 2 - 1}` })).toEqual({ status: 206, bytes: SIZE / 2 });
    expect(await fetchBytes(s.link, { range: `bytes=${SIZE / 2}-`, 'if-range': `"${s.build.sha256}"` })).toEqual({ status: 206, bytes: SIZE / 2 });
    expect((await fetchBytes(s.link, { range: 'bytes=0-0' })).status).toBe(403);
  });

  it('counts a download the client leaves early for the bytes that left the server, not the whole file', async () => {
    const big = 32 * 1024 * 1024;
    const s = await storeWithLimit(1, big);
    const aborted = new AbortController();
    const res = await fetch(s.link, { signal: aborted.signal });
    expect(res.status).toBe(200);
    aborted.abort();
    // The server gives back what it never sent once it sees the client gone.
    let served = big;
    for (let i = 0; i < 100 && served >= big; i++) {
      await new Promise((r) => setTimeout(r, 50));
      const row = await s.db('store_license_downloads').where({ build_id: s.build.id }).first();
      served = Number(row.bytes_served);
    }
    expect(served).toBeLessThan(big);
    // What is left of the allowance still serves the rest of the file.
    const rest = await fetchBytes(s.link, { range: `bytes=${served}-`, 'if-range': `"${s.build.sha256}"` });
    expect(rest).toEqual({ status: 206, bytes: big - served });
  });
});
