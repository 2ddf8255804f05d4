/**
 * Issue 23, the buyer pages: every hosted page a buyer (or a developer resetting a password) meets,
 * driven in headless Chromium at a phone's width (390 px) and a laptop's (1280 px). Each page names
 * the app and its seller where it knows them, fits the width (no horizontal scroll), logs no console
 * error, and has no serious or critical axe-core violation; each form is submitted with every field
 * and its result read back over the API; the delivery and redemption pages work from the keyboard
 * alone. Screenshots of each page at both widths go to test/portal/screenshots/ (git-ignored; CI
 * keeps them as artifacts).
 */
import { randomBytes } from 'node:crypto';
import type { Browser, BrowserContext, Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settled, uploadBuild } from '../builds/support.js';
import { checkoutHelpers } from '../commerce/checkout.js';
import { brokerOf, PRODUCT_KEY, type Merchant } from '../entitlements/support.js';
import { chromiumMissingFor, chromiumWithClipboard, inspectPage, openPageRecordingErrors } from '../support/browser.js';
import { connectAccount } from '../support/connect-account.js';
import { newSessionId, startFakeStripe } from '../support/fake-stripe.js';
import { createApp, createLicense, randomFingerprint, registerDeveloper, setPlan } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { startTestServer } from '../support/server.js';

const chromiumMissing = chromiumMissingFor('buyer page tests');

const WINDOWS_UA = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';

/** Needs escaping, and is long enough to wrap on a phone. */
const COMPANY = 'Northwind <Tools> & Sons, Makers of Remarkably Long Company Names Ltd';
const APP_NAME = 'Notes <b>Pro</b> & "Co"';

const stripe = await startFakeStripe();
const server = await startTestServer({ env: stripe.env });
const call = client(server.url);
const { deliver, checkoutCompleted } = checkoutHelpers(call, stripe, server.adminToken);

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

/**
 * One seller (its company name needing escaping) with one app that sells by checkout, by code and
 * through the entitlement webhook, shipping Linux and Windows builds and a build for every OS.
 */
async function sellerWorld() {
  const dev = await registerDeveloper(call, { company_name: COMPANY });
  await setPlan(call, server.adminToken, dev.id, 'pro');
  const account = await connectAccount(call.baseUrl, stripe, dev.accessToken);
  const priceId = `price_${randomBytes(8).toString('hex')}`;
  stripe.addPrice(account, { id: priceId });
  const app = await createApp(call, dev, {
    name: APP_NAME,
    platforms: ['linux-x64', 'win-x64', 'mac-arm64'],
    price_id: priceId,
    product_key: PRODUCT_KEY,
    protection_level: 'none',
  });
  const owner = { server, call, dev, app };
  for (const platform of ['linux-x64', 'win-x64', 'cross_platform']) {
    const uploaded = await uploadBuild(owner, { data: new Uint8Array(randomBytes(2048)), name: `notes-${platform}.bin` }, { platform, version: '2.4.1' });
    expect((await settled(owner, uploaded.id)).status).toBe('READY');
  }
  return { dev, account, priceId, app };
}
type World = Awaited<ReturnType<typeof sellerWorld>>;

let world: World;
beforeAll(async () => {
  world = await sellerWorld();
});

async function openPage(ctx: BrowserContext = context) {
  const { page, consoleErrors } = await openPageRecordingErrors(ctx);
  return { page, errors: consoleErrors };
}

/** Chromium logs a 4xx document's status as a console error: the refusal pages answer those on purpose. */
const pageErrors = (errors: string[]) => errors.filter((m) => !/the server responded with a status of 4\d\d/.test(m));

/** The product line every page that knows the app shows above its heading. */
async function expectProduct(page: Page) {
  expect(await page.textContent('#product-name')).toBe(APP_NAME);
  expect(await page.textContent('#seller-name')).toBe(COMPANY);
}

async function submit(page: Page, button: string): Promise<Response> {
  const [response] = await Promise.all([page.waitForNavigation(), page.click(button)]);
  return response!;
}

const licensesOf = async (w: World) => (await call('GET', `/v1/licenses?app_id=${w.app.id}`, { apiKey: w.dev.apiKey })).body as Record<string, any>[];

describe.skipIf(chromiumMissing)('buyer pages at 390 px and 1280 px', () => {
  it('checkout delivery: the pending page, then the key with its copy button and the Linux build first for a Linux visitor', async () => {
    const sessionId = newSessionId();
    stripe.addSession(world.account, { id: sessionId, price_id: world.priceId, email: 'checkout.buyer@example.com' });
    const { page, errors } = await openPage();
    const url = `${server.url}/download?session_id=${sessionId}&app_id=${world.app.id}`;
    expect((await page.goto(url))!.status()).toBe(200);
    expect(await page.textContent('#pending')).toMatch(/being prepared/);
    await expectProduct(page);
    await inspectPage(page, 'delivery-pending');

    expect((await deliver(checkoutCompleted(world.account, sessionId))).body.outcome).toBe('fulfilled');
    expect((await page.goto(url))!.status()).toBe(200);
    await expectProduct(page);
    const [license] = (await licensesOf(world)).filter((l) => l.email === 'checkout.buyer@example.com');
    expect(await page.textContent('#license-key')).toBe(license!.license_key);
    // Headless Chromium on Linux: its own build first, the two others (Windows, every OS for the Mac) below.
    expect(await page.getAttribute('#download', 'data-platform')).toBe('linux-x64');
    expect(await page.$$eval('#other-platforms li', (items) => items.map((li) => li.getAttribute('data-platform')))).toEqual(['win-x64', 'mac-arm64']);
    expect(await page.textContent('body')).toMatch(/Getting started/);
    await page.click('#copy-key');
    await page.waitForFunction(() => document.getElementById('copy-status')?.textContent === 'Copied.', undefined, { timeout: 5_000 });
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(license!.license_key);
    await inspectPage(page, 'delivery');
    expect(pageErrors(errors)).toEqual([]);
    await page.close();
  });

  it('the delivery page from the keyboard alone: focus goes copy, download, other platforms, each with a visible ring; Enter copies', async () => {
    const license = await createLicense(call, world.dev, { app_id: world.app.id, email: 'keyboard.buyer@example.com', license_type: 'trial' });
    const { page, errors } = await openPage();
    await page.goto(`${server.url}/download?app_id=${world.app.id}&email=keyboard.buyer%40example.com`);
    const focused: { id: string; platform: string | null; outline: string }[] = [];
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press('Tab');
      focused.push(
        await page.evaluate(() => {
          const el = document.activeElement as HTMLElement;
          return { id: el.id, platform: el.closest('li')?.getAttribute('data-platform') ?? null, outline: getComputedStyle(el).outlineStyle };
        }),
      );
    }
    expect(focused.map((f) => f.id || f.platform)).toEqual(['copy-key', 'download', 'win-x64', 'mac-arm64']);
    for (const f of focused) expect(f.outline, `focus ring of ${f.id || f.platform}`).toBe('solid');
    await page.focus('#copy-key');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.getElementById('copy-status')?.textContent === 'Copied.', undefined, { timeout: 5_000 });
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(license.license_key);
    expect(pageErrors(errors)).toEqual([]);
    await page.close();
  });

  it('without JavaScript the pending page refreshes itself into the license, with the key and downloads and no copy button that would do nothing', async () => {
    const noScript = await browser.newContext({ javaScriptEnabled: false });
    const page = await noScript.newPage();
    await page.goto(`${server.url}/download?app_id=${world.app.id}&email=nojs.buyer%40example.com`);
    expect(await page.textContent('#pending')).toMatch(/being prepared/);
    const license = await createLicense(call, world.dev, { app_id: world.app.id, email: 'nojs.buyer@example.com', license_type: 'trial' });
    // The meta refresh (every 2 s) brings the key; bounded wait.
    await page.waitForSelector('#license-key', { timeout: 15_000 });
    expect(await page.textContent('#license-key')).toBe(license.license_key);
    expect(await page.isVisible('#license-key')).toBe(true);
    expect(await page.isVisible('#download')).toBe(true);
    expect(await page.isVisible('#copy-key')).toBe(false);
    await noScript.close();
  });

  it('storefront landing: the newest license bought with the address; past the hour only "check your inbox"; an unknown app explains what to do', async () => {
    const license = await createLicense(call, world.dev, { app_id: world.app.id, email: 'store.buyer@example.com', license_type: 'trial' });
    const { page, errors } = await openPage();
    const landing = `${server.url}/download?app_id=${world.app.id}&email=store.buyer%40example.com`;
    expect((await page.goto(landing))!.status()).toBe(200);
    await expectProduct(page);
    expect(await page.textContent('#license-key')).toBe(license.license_key);
    await inspectPage(page, 'storefront-landing');

    await server.database
      .db('licenses')
      .where({ id: license.license_id })
      .update({ created_at: new Date(Date.now() - 2 * 3_600_000) });
    expect((await page.goto(landing))!.status()).toBe(200);
    expect(await page.textContent('#check-inbox')).toMatch(/Check your inbox/);
    await expectProduct(page);
    expect(await page.content()).not.toContain(license.license_key);
    await inspectPage(page, 'storefront-check-inbox');

    expect((await page.goto(`${server.url}/download?app_id=app_nope&session_id=${newSessionId()}`))!.status()).toBe(404);
    expect(await page.textContent('#error-detail')).toMatch(/No such app/);
    expect(await page.textContent('#error-advice')).toMatch(/from your receipt or delivery email.*contact the seller/);
    await inspectPage(page, 'delivery-not-found');
    expect(pageErrors(errors)).toEqual([]);
    await page.close();
  });

  it('redeem: a wrong code says what to do; code and email typed from the keyboard redeem it, and the license read over the API has that address', async () => {
    const batch = (await call('POST', `/v1/apps/${world.app.id}/redemption-batches`, { apiKey: world.dev.apiKey, body: { channel: 'appsumo', quantity: 2 } })).body;
    const { page, errors } = await openPage();
    expect((await page.goto(`${server.url}/redeem`))!.status()).toBe(200);
    await inspectPage(page, 'redeem-form');

    await page.fill('#code', 'LK-AAAAAAAA-AAAA');
    await page.fill('#email', 'code.buyer@example.com');
    expect((await submit(page, '#redeem')).status()).toBe(404);
    expect(await page.textContent('#redeem-error')).toMatch(/Code not found[^]*Copy the code from your receipt/);
    // The values typed are kept.
    expect(await page.inputValue('#email')).toBe('code.buyer@example.com');
    await inspectPage(page, 'redeem-error');

    await page.goto(`${server.url}/redeem`);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('code');
    await page.keyboard.type(batch.codes[0]);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('email');
    await page.keyboard.type('code.buyer@example.com');
    const [result] = await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')]);
    expect(result!.status()).toBe(200);
    await expectProduct(page);
    const redeemed = (await licensesOf(world)).find((l) => l.email === 'code.buyer@example.com');
    expect(redeemed, 'the redeemed license, with the address typed').toBeDefined();
    expect(await page.textContent('#license-key')).toBe(redeemed!.license_key);
    expect(await page.getAttribute('#download', 'data-platform')).toBe('linux-x64');
    await inspectPage(page, 'redeem-result');
    expect(pageErrors(errors)).toEqual([]);
    await page.close();
  });

  it('store delivery page: the visitor’s platform first and the next steps; a revoked license says what to do', async () => {
    const hook = await call('POST', `/v1/apps/${world.app.id}/entitlement-webhook`, { token: world.dev.accessToken });
    expect(hook.status).toBe(201);
    const m: Merchant = {
      server,
      call,
      dev: world.dev,
      app: world.app,
      webhookUrl: hook.body.webhook_url,
      path: new URL(hook.body.webhook_url).pathname,
      secret: hook.body.secret,
    };
    const b = brokerOf(m);
    const grant = await b.send(b.event());
    expect(grant.body.action).toBe('granted');
    const url = grant.body.delivery_url as string;

    const { page, errors } = await openPage();
    expect((await page.goto(url))!.status()).toBe(200);
    await expectProduct(page);
    expect(await page.$$eval('#downloads li', (items) => items.map((li) => li.getAttribute('data-platform')))).toEqual(['linux-x64', 'win-x64', 'mac-arm64']);
    expect(await page.textContent('#next-steps')).toMatch(/key from your delivery email/);
    await inspectPage(page, 'store-delivery');

    const windows = await browser.newContext({ userAgent: WINDOWS_UA });
    const windowsPage = await windows.newPage();
    await windowsPage.goto(url);
    expect(await windowsPage.$$eval('#downloads li', (items) => items.map((li) => li.getAttribute('data-platform')))).toEqual(['win-x64', 'linux-x64', 'mac-arm64']);
    expect(await windowsPage.getAttribute('#downloads li:first-child a', 'class')).toBe('button');
    await windows.close();

    expect((await b.send(b.event({ entitled: false }))).status).toBe(200);
    expect((await page.goto(url))!.status()).toBe(403);
    expect(await page.textContent('#inactive')).toMatch(/contact the seller/);
    await inspectPage(page, 'store-delivery-unavailable');
    expect(pageErrors(errors)).toEqual([]);
    await page.close();
  });

  it('offline activation: the file uploaded activates the device (read back over the API); a second device is refused with what to do', async () => {
    const license = await createLicense(call, world.dev, { app_id: world.app.id, device_limit: 1 });
    const requestFile = (licenseKey = license.license_key) =>
      Buffer.from(
        JSON.stringify({
          format: 'latchkey-activation-request/1',
          app_id: world.app.id,
          license_key: licenseKey,
          device_fingerprint: randomFingerprint(),
          device_key: randomBytes(32).toString('base64url'),
          build_id: null,
          created_at: new Date().toISOString(),
        }),
      );
    const downloads = await browser.newContext({ acceptDownloads: true });
    const { page, errors } = await openPage(downloads);
    expect((await page.goto(`${server.url}/activate-offline`))!.status()).toBe(200);
    await inspectPage(page, 'offline-activation');

    await page.setInputFiles('#request', { name: 'activation-request.json', mimeType: 'application/json', buffer: requestFile() });
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#activate-offline')]);
    expect(download.suggestedFilename()).toBe('license.lic');
    const read = await call('GET', `/v1/licenses/${license.license_id}`, { apiKey: world.dev.apiKey });
    expect(read.body.devices).toHaveLength(1);

    await page.setInputFiles('#request', { name: 'second.json', mimeType: 'application/json', buffer: requestFile() });
    expect((await submit(page, '#activate-offline')).status()).toBe(403);
    expect(await page.textContent('#offline-activation-error')).toMatch(/already active on 1 device[^]*Deactivate the app on a computer you no longer use/);
    // The key was valid: the page names the app it is for.
    await expectProduct(page);
    await inspectPage(page, 'offline-activation-refused');

    // A key that is not the app's: the file's app id alone does not make the page tell the app's name.
    await page.setInputFiles('#request', { name: 'guess.json', mimeType: 'application/json', buffer: requestFile('AAAA-BBBB-CCCC-DDDD') });
    expect((await submit(page, '#activate-offline')).status()).toBe(401);
    expect(await page.textContent('#offline-activation-error')).toMatch(/license key is invalid[^]*Make sure the file was saved by the app you bought/);
    expect(await page.locator('#product').count()).toBe(0);
    expect(pageErrors(errors)).toEqual([]);
    await downloads.close();
  });

  it('password reset: the email form, the link-sent page, and a used link explained', async () => {
    const dev = await registerDeveloper(call);
    const { page, errors } = await openPage();
    expect((await page.goto(`${server.url}/reset-password`))!.status()).toBe(200);
    await inspectPage(page, 'reset-password');
    await page.fill('#email', dev.email);
    expect((await submit(page, '#send-link')).status()).toBe(200);
    expect(await page.textContent('#link-sent')).toMatch(/on its way/);
    await inspectPage(page, 'reset-password-sent');
    const asked = await server.database.db('password_resets').where({ developer_id: dev.id }).count<{ count: string }[]>({ count: '*' });
    expect(Number(asked[0]!.count)).toBe(1);

    expect((await page.goto(`${server.url}/reset-password?token=pr_${'x'.repeat(43)}`))!.status()).toBe(401);
    expect(await page.textContent('#reset-notice')).toBeTruthy();
    await inspectPage(page, 'reset-password-link-refused');
    expect(pageErrors(errors)).toEqual([]);
    await page.close();
  });
});
