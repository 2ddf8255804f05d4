import { createHash, randomBytes } from 'node:crypto';
import { chromiumForFile, chromiumMissingFor } from '../support/browser.js';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../support/server.js';
import { brokerOf, merchant, readyBuild, type Merchant } from './support.js';

// docs/design.md: hosted pages are tested in headless Chromium (Debian package `chromium`).
const chromiumMissing = chromiumMissingFor('store delivery page tests');

const server = await startTestServer();
const sha256 = (bytes: ArrayBuffer) => createHash('sha256').update(Buffer.from(bytes)).digest('hex');

const browser = chromiumForFile(chromiumMissing);
afterAll(() => server.close());

/** A merchant whose app (named to need escaping) targets three platforms: a Linux build, and a build for every OS. */
async function storeWithBuilds(appBody: Record<string, unknown> = {}) {
  const m = await merchant(server, { name: 'Notes <i>Pro</i>', platforms: ['linux-x64', 'win-x64', 'mac-arm64'], protection_level: 'none', ...appBody });
  const linux = await readyBuild(m, 'linux-x64');
  const everyOs = await readyBuild(m, 'cross_platform');
  const b = brokerOf(m);
  const grant = await b.send(b.event());
  expect(grant.body.action).toBe('granted');
  return { m, b, linux, everyOs, url: grant.body.delivery_url as string, key: grant.body.license_key as string };
}

const get = (url: string, headers: Record<string, string> = {}, method = 'GET') => fetch(url, { method, headers, redirect: 'manual' });

describe.skipIf(chromiumMissing)('GET /d/<token> in headless Chromium', () => {
  it('offers the current build of each platform, downloads through the token, and never shows the key', async () => {
    const s = await storeWithBuilds();
    const page = await browser().newPage();
    const consoleErrors: string[] = [];
    page.on('console', (msg) => msg.type() === 'error' && consoleErrors.push(msg.text()));
    const res = await page.goto(s.url);
    expect(res!.status()).toBe(200);
    const headers = res!.headers();
    expect(headers['content-security-policy']).toMatch(/default-src 'none'/);
    expect(headers['referrer-policy']).toBe('no-referrer');
    expect(headers['cache-control']).toBe('no-store');
    expect(await page.textContent('h1')).toBe('Download Notes <i>Pro</i>');
    expect(await page.content()).not.toContain(s.key);

    const offers = await page.$$eval('#downloads li', (items) =>
      items.map((li) => ({ platform: li.getAttribute('data-platform'), href: li.querySelector('a')?.getAttribute('href') })),
    );
    expect(offers.map((o) => o.platform)).toEqual(['linux-x64', 'win-x64', 'mac-arm64']);
    const token = new URL(s.url).pathname.split('/')[2];
    expect(offers.map((o) => o.href)).toEqual([`/d/${token}/builds/${s.linux.id}`, `/d/${token}/builds/${s.everyOs.id}`, `/d/${token}/builds/${s.everyOs.id}`]);
    // Two builds offered: 20 downloads in all.
    expect(await page.textContent('#allowance')).toBe('20 of 20 downloads left.');

    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#downloads li[data-platform="linux-x64"] a')]);
    const saved = await download.path();
    expect(saved).toBeTruthy();
    const { readFile } = await import('node:fs/promises');
    expect(
      createHash('sha256')
        .update(await readFile(saved!))
        .digest('hex'),
    ).toBe(s.linux.sha256);
    await page.reload();
    expect(await page.textContent('#allowance')).toBe('19 of 20 downloads left.');
    expect(consoleErrors).toEqual([]);
    await page.close();
  });
});

describe('GET /d/<token> over HTTP', () => {
  it('counts downloads against 10 per build offered, pooled; exhausted answers 403 with a clear message', async () => {
    const s = await storeWithBuilds();
    const base = new URL(s.url);
    const link = (buildId: string) => `${base.origin}${base.pathname}/builds/${buildId}`;
    // HEAD counts nothing; a range counts its share of a download (here the last 1024 of 2048 bytes: half of one).
    expect((await get(link(s.linux.id), {}, 'HEAD')).status).toBe(200);
    expect((await get(link(s.linux.id), { range: 'bytes=1024-' })).status).toBe(206);
    expect(await (await get(s.url)).text()).toContain('19 of 20 downloads left.');
    for (let i = 0; i < 19; i++) {
      const res = await get(link(i % 2 ? s.linux.id : s.everyOs.id));
      expect(res.status).toBe(200);
      expect(sha256(await res.arrayBuffer())).toBe(i % 2 ? s.linux.sha256 : s.everyOs.sha256);
    }
    // Half a download left: the whole file does not fit, its second half does.
    const refused = await get(link(s.linux.id));
    expect(refused.status).toBe(403);
    expect((await get(link(s.linux.id), { range: 'bytes=1024-' })).status).toBe(206);
    expect(refused.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await refused.text()).toContain('All 20 downloads of this license are used');
    expect((await get(link(s.linux.id), { range: 'bytes=0-0' })).status).toBe(403);
    const page = await (await get(s.url)).text();
    expect(page).toContain('id="limit-reached"');
    expect(page).not.toContain('href="/d/');

    // A new current build is one more build offered: 10 more downloads.
    await readyBuild(s.m, 'linux-x64');
    const more = await (await get(s.url)).text();
    expect(more).toContain('10 of 30 downloads left.');
  });

  it('lets a developer-set download limit replace the allowance', async () => {
    const s = await storeWithBuilds({ download_limit: 3 });
    const link = `${s.url}/builds/${s.linux.id}`;
    for (let i = 0; i < 3; i++) expect((await get(link)).status).toBe(200);
    expect((await get(link)).status).toBe(403);
  });

  it('answers 403 while the license is revoked, 404 for an unknown token or a build it does not offer', async () => {
    const s = await storeWithBuilds();
    await s.b.send(s.b.event({ entitled: false }));
    const inactive = await get(s.url);
    expect(inactive.status).toBe(403);
    expect(await inactive.text()).toContain('not active');
    expect((await get(`${s.url}/builds/${s.linux.id}`)).status).toBe(403);
    expect((await s.b.send(s.b.event())).body).toMatchObject({ action: 'reactivated', delivery_url: s.url });
    expect((await get(s.url)).status).toBe(200);
    expect((await get(`${server.url}/d/${randomBytes(32).toString('base64url')}`)).status).toBe(404);
    const other: Merchant = await merchant(server, { protection_level: 'none' });
    const foreign = await readyBuild(other, 'linux-x64');
    expect((await get(`${s.url}/builds/${foreign.id}`)).status).toBe(404);
  });
});
