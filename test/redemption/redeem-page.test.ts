import type { Browser, BrowserContext, Page } from 'playwright-core';
import { chromiumMissingFor, chromiumWithClipboard, openPageRecordingErrors } from '../support/browser.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tenant } from '../licensing/world.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { batchesOf, createBatch, readyBuild } from './support.js';

// docs/design.md: hosted pages are tested in headless Chromium (Debian package `chromium`).
const chromiumMissing = chromiumMissingFor('redemption page tests');

const server = await startTestServer();
// docs/contract.md's limits, for the rate-limit message.
const limitedServer = await startTestServer({ realRateLimits: true });

let browser: Browser;
let context: BrowserContext;
beforeAll(async () => {
  if (chromiumMissing) return;
  ({ browser, context } = await chromiumWithClipboard(server.url));
});
afterAll(async () => {
  await browser?.close();
  await server.close();
  await limitedServer.close();
});

const openPage = (ctx: BrowserContext = context) => openPageRecordingErrors(ctx);

async function submit(page: Page, fields: { code?: string; email?: string }) {
  if (fields.code !== undefined) await page.fill('#code', fields.code);
  if (fields.email !== undefined) await page.fill('#email', fields.email);
  const [response] = await Promise.all([page.waitForNavigation(), page.click('#redeem')]);
  return response!;
}

async function sellerWithCodes(s: TestServer, quantity: number) {
  const t = await tenant(s, { app: { name: 'Notes <b>Pro</b> & "Co"' } });
  const build = await readyBuild(s, t);
  const batch = await createBatch(t, { quantity });
  return { t, build, batch };
}

describe.skipIf(chromiumMissing)('GET /redeem in headless Chromium', () => {
  it('prefills the code, redeems it, shows the key with a working copy button and download, and emails the address given', async () => {
    const { t, build, batch } = await sellerWithCodes(server, 1);
    const { page, consoleErrors } = await openPage();
    const res = await page.goto(`${server.url}/redeem?code=${encodeURIComponent(batch.codes[0]!.toLowerCase())}`);
    expect(res!.status()).toBe(200);
    const headers = res!.headers();
    expect(headers['content-type']).toMatch(/^text\/html/);
    expect(headers['content-security-policy']).toMatch(/default-src 'none'/);
    expect(headers['content-security-policy']).toMatch(/form-action 'self'/);
    expect(headers['content-security-policy']).not.toMatch(/unsafe-inline/);
    expect(headers['cache-control']).toBe('no-store');
    expect(await page.inputValue('#code')).toBe(batch.codes[0]!.toLowerCase());

    const result = await submit(page, { email: 'page.buyer@example.com' });
    expect(result.status()).toBe(200);
    const [license] = (await t.call('GET', `/v1/licenses?app_id=${t.app.id}`, { apiKey: t.dev.apiKey })).body;
    expect(await page.textContent('#license-key')).toBe(license.license_key);
    expect(license.email).toBe('page.buyer@example.com');
    // The app's name is text, never markup.
    expect(await page.textContent('h1')).toBe('Your Notes <b>Pro</b> & "Co" license');
    expect(await page.textContent('body')).toMatch(/A copy was sent by email to page\.buyer@example\.com/);

    await page.click('#copy-key');
    await page.waitForFunction(() => document.getElementById('copy-status')?.textContent === 'Copied.', undefined, { timeout: 5_000 });
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(license.license_key);

    const href = await page.getAttribute('#download', 'href');
    expect(new URL(href!).pathname).toBe(`/v1/downloads/${build.id}`);
    expect((await fetch(href!)).status).toBe(200);
    const emails = await server.database.db('email_outbox').where({ license_id: license.license_id }).select('recipient');
    expect(emails).toEqual([{ recipient: 'page.buyer@example.com' }]);
    expect(consoleErrors).toEqual([]);
    await page.close();
  });

  it('works without JavaScript, and shows why a code fails with the form kept', async () => {
    const { t, batch } = await sellerWithCodes(server, 2);
    const noScript = await browser.newContext({ javaScriptEnabled: false });
    try {
      const { page } = await openPage(noScript);
      await page.goto(`${server.url}/redeem`);
      const ok = await submit(page, { code: `  ${batch.codes[0]!.replaceAll('-', '')} ` });
      expect(ok.status()).toBe(200);
      expect(await page.textContent('#license-key')).toMatch(/^[A-Z0-9]{4}(-[A-Z0-9]{4}){3}$/);

      await page.goto(`${server.url}/redeem`);
      const again = await submit(page, { code: batch.codes[0]! });
      expect(again.status()).toBe(409);
      expect(await page.textContent('#redeem-error')).toMatch(/already been redeemed/);

      const typo = await submit(page, { code: 'LK-22222222-2222' });
      expect(typo.status()).toBe(404);
      expect(await page.textContent('#redeem-error')).toMatch(/not found/i);
      expect(await page.inputValue('#code')).toBe('LK-22222222-2222');

      expect((await t.call('POST', `/v1/redemption-codes/${batch.codes[1]}/revoke`, { apiKey: t.dev.apiKey })).status).toBe(200);
      const revoked = await submit(page, { code: batch.codes[1]! });
      expect(revoked.status()).toBe(410);
      expect(await page.textContent('#redeem-error')).toMatch(/revoked/);

      // The browser itself refuses a malformed address (type="email"); a client that posts one anyway gets the form back.
      const badEmail = await fetch(`${server.url}/redeem`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ code: batch.codes[0]!, email: 'not an address' }),
      });
      expect(badEmail.status).toBe(400);
      expect(await badEmail.text()).toMatch(/id="redeem-error"[^]*valid email address/);
      expect((await batchesOf(t))[0]!.counts).toEqual({ available: 0, redeemed: 1, revoked: 1, expired: 0 });
    } finally {
      await noScript.close();
    }
  });

  it('escapes what it echoes', async () => {
    const { page, consoleErrors } = await openPage();
    const hostile = '"><script>window.pwned=1</script><img src=x onerror="window.pwned=1">';
    await page.goto(`${server.url}/redeem?code=${encodeURIComponent(hostile)}`);
    expect(await page.inputValue('#code')).toBe(hostile);
    await submit(page, {});
    expect(await page.textContent('#redeem-error')).toMatch(/not found/i);
    expect(await page.inputValue('#code')).toBe(hostile);
    expect(await page.evaluate(() => (window as { pwned?: number }).pwned)).toBeUndefined();
    expect(await page.locator('img').count()).toBe(0);
    // The only console error is the 404 status of the answer itself: nothing the policy had to block.
    expect(consoleErrors.filter((m) => !m.includes('status of 404'))).toEqual([]);
    await page.close();
  });

  it('shows the rate-limit message after 5 attempts a minute', async () => {
    const { batch } = await sellerWithCodes(limitedServer, 1);
    // Just after a minute starts, so the 6 attempts share one window.
    limitedServer.clock.enterFreshWindow(60_000);
    const { page } = await openPage();
    await page.goto(`${limitedServer.url}/redeem`);
    for (let i = 0; i < 5; i++) expect((await submit(page, { code: 'LK-22222222-2222' })).status()).toBe(404);
    const limited = await submit(page, { code: batch.codes[0]! });
    expect(limited.status()).toBe(429);
    expect(limited.headers()['retry-after']).toBe('60');
    expect(await page.textContent('#redeem-error')).toMatch(/Rate limit exceeded.*retry after 60 seconds/);
    expect(await page.inputValue('#code')).toBe(batch.codes[0]);
    await page.close();
  });
});
