import { createHash, randomBytes } from 'node:crypto';
import type { Browser, BrowserContext } from 'playwright-core';
import { chromiumMissingFor, chromiumWithClipboard, openPageRecordingErrors } from '../support/browser.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { newSessionId, startFakeStripe } from '../support/fake-stripe.js';
import { createLicense } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { startTestServer } from '../support/server.js';
import { checkoutHelpers } from './checkout.js';

// docs/design.md: hosted pages are tested in headless Chromium (Debian package `chromium`; .ci/run installs it).
const chromiumMissing = chromiumMissingFor('delivery page tests');

const stripe = await startFakeStripe();
const server = await startTestServer({ env: stripe.env });
const call = client(server.url);
const db = server.database.db;
const { deliver, seller, checkoutCompleted, readyBuild } = checkoutHelpers(call, stripe, server.adminToken);

let browser: Browser;
let context: BrowserContext;
beforeAll(async () => {
  if (chromiumMissing) return;
  ({ browser, context } = await chromiumWithClipboard(server.url));
});
afterAll(async () => {
  await browser?.close();
  await server.close();
  await stripe.close();
});

/** A paid session of a seller whose app (named to need escaping) has a READY build; not notified yet. */
async function sale() {
  const s = await seller({ name: 'Notes <b>Pro</b> & "Co"' });
  const build = await readyBuild(server, s, randomBytes(8192));
  const sessionId = newSessionId();
  stripe.addSession(s.account, { id: sessionId, price_id: s.priceId, email: 'buyer@example.com' });
  const fulfil = async () => expect((await deliver(checkoutCompleted(s.account, sessionId))).body.outcome).toBe('fulfilled');
  return { ...s, build, sessionId, fulfil, url: `${server.url}/download?session_id=${sessionId}&app_id=${s.app.id}` };
}

const openPage = () => openPageRecordingErrors(context);

describe.skipIf(chromiumMissing)('GET /download in headless Chromium', () => {
  it('shows the pending page until fulfilment, then refreshes itself into the license', async () => {
    const s = await sale();
    const { page } = await openPage();
    const res = await page.goto(s.url);
    expect(res!.status()).toBe(200);
    expect(await page.textContent('#pending')).toMatch(/being prepared/);
    // With JavaScript the page checks in the background; the meta refresh is for browsers without it.
    expect(await page.locator('meta[http-equiv="refresh"]').count()).toBe(0);
    expect(await page.$eval('noscript', (n) => n.textContent)).toBe('<meta http-equiv="refresh" content="2">');
    await s.fulfil();
    // The page's own refresh (every 2 s) brings the key; bounded wait.
    await page.waitForSelector('#license-key', { timeout: 15_000 });
    const license = await db('licenses').where({ app_id: s.app.id }).first('license_key');
    expect(await page.textContent('#license-key')).toBe(license.license_key);
    await page.close();
  });

  it('shows the key, copies it, downloads the build, and a refresh shows the same key and build', async () => {
    const s = await sale();
    await s.fulfil();
    const license = await db('licenses').where({ app_id: s.app.id }).first('license_key');
    const { page, consoleErrors } = await openPage();
    const res = await page.goto(s.url);
    expect(res!.status()).toBe(200);
    const headers = res!.headers();
    expect(headers['content-type']).toMatch(/^text\/html/);
    expect(headers['referrer-policy']).toBe('no-referrer');
    expect(headers['cache-control']).toBe('no-store');
    expect(headers['content-security-policy']).toMatch(/default-src 'none'/);
    expect(headers['content-security-policy']).not.toMatch(/unsafe-inline/);

    expect(await page.textContent('#license-key')).toBe(license.license_key);
    // The app's name is shown as text, never as markup.
    expect(await page.textContent('h1')).toBe('Thank you for buying Notes <b>Pro</b> & "Co"');
    expect(await page.textContent('body')).toMatch(/Getting started/);

    await page.click('#copy-key');
    await page.waitForFunction(() => document.getElementById('copy-status')?.textContent === 'Copied.', undefined, { timeout: 5_000 });
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(license.license_key);

    const href = await page.getAttribute('#download', 'href');
    const download = await fetch(href!);
    expect(download.status).toBe(200);
    expect(
      createHash('sha256')
        .update(Buffer.from(await download.arrayBuffer()))
        .digest('hex'),
    ).toBe(s.build.sha256);

    await page.reload();
    expect(await page.textContent('#license-key')).toBe(license.license_key);
    const again = await page.getAttribute('#download', 'href');
    expect(new URL(again!).pathname).toBe(`/v1/downloads/${s.build.id}`);
    expect(consoleErrors).toEqual([]);
    await page.close();
  });

  // docs/contract.md "Storefront redirect" (issue 21, rule 4): the page shows the key, a refresh the same key.
  it("for a storefront address shows the key of that address's license, waits for a stranger's, and emails the license once", async () => {
    const s = await seller();
    await readyBuild(server, s, randomBytes(1024));
    const license = await createLicense(call, s.dev, { app_id: s.app.id, email: 'Store.Buyer@example.com', license_type: 'trial' });
    const { page } = await openPage();
    for (const email of ['store.buyer@example.com', 'store.buyer@example.com']) {
      const res = await page.goto(`${server.url}/download?app_id=${s.app.id}&email=${encodeURIComponent(email)}`);
      expect(res!.status()).toBe(200);
      expect(await page.textContent('#license-key')).toBe(license.license_key);
    }
    const res = await page.goto(`${server.url}/download?app_id=${s.app.id}&email=stranger@example.com`);
    expect(res!.status()).toBe(200);
    expect(await page.textContent('#pending')).toMatch(/being prepared/);
    expect(await page.content()).not.toContain(license.license_key);
    const emails = await db('email_outbox').where({ app_id: s.app.id, kind: 'license_delivery' }).select('recipient', 'license_id');
    expect(emails).toEqual([{ recipient: 'Store.Buyer@example.com', license_id: license.license_id }]);
    await page.close();
  });
});

describe('GET /download, invalid queries', () => {
  it.each([
    ['no app_id', `session_id=${newSessionId()}`],
    ['both session_id and email', `app_id=app_1&session_id=${newSessionId()}&email=a@example.com`],
    ['neither session_id nor email', 'app_id=app_1'],
    ['an unsubstituted session placeholder', 'app_id=app_1&session_id={CHECKOUT_SESSION_ID}'],
    ['a malformed email', 'app_id=app_1&email=not-an-address'],
  ])('answers 400 with the standard JSON error body for %s', async (_name, query) => {
    expectError(await call('GET', `/download?${query}`), 400, 'VALIDATION_FAILED');
  });

  it("never shows a processor checkout's license by its buyer's address: only its session id shows it", async () => {
    const s = await sale();
    await s.fulfil();
    const license = await db('licenses').where({ app_id: s.app.id }).first('license_key');
    const byAddress = await fetch(`${server.url}/download?app_id=${s.app.id}&email=buyer%40example.com`);
    expect(byAddress.status).toBe(200);
    const page = await byAddress.text();
    expect(page).toMatch(/being prepared/);
    expect(page).not.toContain(license.license_key);
    expect(await (await fetch(s.url)).text()).toContain(license.license_key);
  });

  it('answers a 404 HTML page for an unknown app', async () => {
    const res = await call('GET', `/download?app_id=app_nope&session_id=${newSessionId()}`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.body).toMatch(/No such app/);
  });
});
