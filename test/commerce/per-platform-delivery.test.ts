import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { settled, uploadBuild } from '../builds/support.js';
import { newSessionId, startFakeStripe } from '../support/fake-stripe.js';
import { client } from '../support/http.js';
import { startTestServer } from '../support/server.js';
import { checkoutHelpers } from './checkout.js';

// Issue 21, "Delivery: the right build for the right machine": every delivery surface offers one
// download per platform the app ships, whatever was uploaded last.

const stripe = await startFakeStripe();
const server = await startTestServer({ env: stripe.env });
const call = client(server.url);
const db = server.database.db;
const { deliver, seller, checkoutCompleted } = checkoutHelpers(call, stripe, server.adminToken);
afterAll(async () => {
  await server.close();
  await stripe.close();
});

const WINDOWS_UA = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const LINUX_UA = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';

type Seller = Awaited<ReturnType<typeof seller>>;

async function platformBuild(s: Seller, platform: string) {
  const owner = { server, call, dev: s.dev, app: s.app };
  const build = await settled(owner, (await uploadBuild(owner, { data: new Uint8Array(randomBytes(2048)), name: `tool-${platform}.bin` }, { platform })).id);
  expect(build.status).toBe('READY');
  return build as { id: string; platform: string };
}

/** A Pro seller whose app ships Windows and Linux, the Linux build uploaded last (what every surface used to hand out). */
async function twoPlatformSeller() {
  const s = await seller({ platforms: ['win-x64', 'linux-x64'], protection_level: 'none' });
  const win = await platformBuild(s, 'win-x64');
  const linux = await platformBuild(s, 'linux-x64');
  return { ...s, win, linux };
}

const buildOf = (url: string) => decodeURIComponent(new URL(url).pathname.replace('/v1/downloads/', ''));

/** The per-platform list of an answer, as platform → build id. */
const byPlatform = (downloads: { platform: string; download_url: string; build_id: string }[]) => Object.fromEntries(downloads.map((d) => [d.platform, d.build_id]));

/** The build ids the delivery email of a license links to. */
async function emailedBuilds(licenseId: string): Promise<string[]> {
  const [email] = await db('email_outbox').where({ license_id: licenseId, kind: 'license_delivery' }).select('text_body');
  expect(email, 'a delivery email is queued').toBeDefined();
  return [...(email.text_body as string).matchAll(/\/v1\/downloads\/([^?\s]+)/g)].map((m) => decodeURIComponent(m[1]!)).sort();
}

/** A paid checkout session of `s`, fulfilled; answers the page's URL and the license. */
async function paidSession(s: Seller) {
  const sessionId = newSessionId();
  stripe.addSession(s.account, { id: sessionId, price_id: s.priceId, email: 'buyer@example.com' });
  expect((await deliver(checkoutCompleted(s.account, sessionId))).body.outcome).toBe('fulfilled');
  const license = await db('licenses').where({ app_id: s.app.id }).first('id', 'license_key');
  return { sessionId, license, url: `/download?session_id=${sessionId}&app_id=${s.app.id}` };
}

/** The hosted page's main download button and its "other platforms" links, as build ids. */
function pageDownloads(html: string) {
  const main = /<a [^>]*id="download"[^>]*>/.exec(html)?.[0] ?? '';
  const attr = (tag: string, name: string) => new RegExp(`${name}="([^"]+)"`).exec(tag)?.[1]?.replaceAll('&amp;', '&');
  const others = /<ul id="other-platforms"[^>]*>([\s\S]*?)<\/ul>/.exec(html)?.[1] ?? '';
  const hrefs = [...others.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!.replaceAll('&amp;', '&'));
  return { platform: attr(main, 'data-platform'), href: attr(main, 'href'), others: hrefs };
}

describe('one download per platform on every delivery surface', () => {
  it('the hosted delivery page puts the Windows build first for a Windows visitor, Linux under other platforms; the fulfilment email lists both', async () => {
    const s = await twoPlatformSeller();
    const { url, license } = await paidSession(s);

    const windows = await call('GET', url, { headers: { 'user-agent': WINDOWS_UA } });
    expect(windows.status).toBe(200);
    const seen = pageDownloads(windows.body);
    expect(seen.platform).toBe('win-x64');
    expect(buildOf(seen.href!)).toBe(s.win.id);
    expect(seen.others.map(buildOf)).toEqual([s.linux.id]);
    expect(windows.body).toMatch(/<h3>Other platforms<\/h3>/);
    // The Windows link downloads the Windows package.
    expect((await fetch(seen.href!)).status).toBe(200);

    const linux = pageDownloads((await call('GET', url, { headers: { 'user-agent': LINUX_UA } })).body);
    expect(buildOf(linux.href!)).toBe(s.linux.id);
    expect(linux.others.map(buildOf)).toEqual([s.win.id]);

    expect(await emailedBuilds(license.id)).toEqual([s.win.id, s.linux.id].sort());
  });

  it('the checkout entitlement answer lists the build of each platform beside the single link', async () => {
    const s = await twoPlatformSeller();
    const { sessionId } = await paidSession(s);
    const res = await call('GET', `/v1/public/checkout-session/${sessionId}/entitlement?app_id=${s.app.id}`);
    expect(res.status).toBe(200);
    expect(byPlatform(res.body.downloads)).toEqual({ 'win-x64': s.win.id, 'linux-x64': s.linux.id });
    expect(buildOf(res.body.download_url)).toBe(s.linux.id);
  });

  it('marketplace provisioning answers both platforms and its delivery email lists both', async () => {
    const s = await twoPlatformSeller();
    const res = await call('POST', '/v1/marketplace/licenses', {
      apiKey: s.dev.apiKey,
      body: { app_id: s.app.id, channel: 'own_store', marketplace_order_id: `order-${randomBytes(4).toString('hex')}`, customer_email: 'buyer@example.com' },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(byPlatform(res.body.downloads)).toEqual({ 'win-x64': s.win.id, 'linux-x64': s.linux.id });
    for (const d of res.body.downloads) {
      expect(buildOf(d.download_url)).toBe(d.build_id);
      expect((await fetch(d.download_url)).status).toBe(200);
    }
    // The single field is kept for existing clients.
    expect(buildOf(res.body.download_url)).toBe(s.linux.id);
    expect(await emailedBuilds(res.body.license_id)).toEqual([s.win.id, s.linux.id].sort());
  });

  it('redeeming a code answers both platforms, with or without an address, and the delivery email lists both', async () => {
    const s = await twoPlatformSeller();
    const batch = await call('POST', `/v1/apps/${s.app.id}/redemption-batches`, { apiKey: s.dev.apiKey, body: { channel: 'appsumo', quantity: 2 } });
    expect(batch.status, JSON.stringify(batch.body)).toBe(201);
    const [withEmail, withoutEmail] = batch.body.codes as string[];

    const emailed = await call('POST', '/v1/public/redeem', { body: { code: withEmail, email: 'redeemer@example.com' } });
    expect(emailed.status, JSON.stringify(emailed.body)).toBe(201);
    expect(byPlatform(emailed.body.downloads)).toEqual({ 'win-x64': s.win.id, 'linux-x64': s.linux.id });
    const license = await db('licenses').where({ license_key: emailed.body.license_key }).first('id');
    expect(await emailedBuilds(license.id)).toEqual([s.win.id, s.linux.id].sort());

    const plain = await call('POST', '/v1/public/redeem', { body: { code: withoutEmail } });
    expect(plain.status).toBe(201);
    expect(byPlatform(plain.body.downloads)).toEqual({ 'win-x64': s.win.id, 'linux-x64': s.linux.id });
  });
});

describe('contract rules (issue 21)', () => {
  it('Hosted pages: refreshing the delivery page shows the same link', async () => {
    const s = await twoPlatformSeller();
    const { url } = await paidSession(s);
    const first = pageDownloads((await call('GET', url, { headers: { 'user-agent': WINDOWS_UA } })).body);
    // A refresh an hour later (well inside the link's 7 days) shows the very same URLs.
    server.clock.advance(3_600_000);
    const again = pageDownloads((await call('GET', url, { headers: { 'user-agent': WINDOWS_UA } })).body);
    expect(again.href).toBeDefined();
    expect(again.href).toBe(first.href);
    expect(again.others).toEqual(first.others);
  });

  it('Storefront: the delivery page of a storefront redirect shows the license key, the same key and links on a refresh', async () => {
    const s = await twoPlatformSeller();
    const sold = await call('POST', '/v1/marketplace/licenses', {
      apiKey: s.dev.apiKey,
      body: { app_id: s.app.id, channel: 'own_store', marketplace_order_id: `order-${randomBytes(4).toString('hex')}`, customer_email: 'Store.Buyer@example.com' },
    });
    expect(sold.status).toBe(201);
    const url = `/download?app_id=${s.app.id}&email=${encodeURIComponent('store.buyer@example.com')}`;
    const page = await call('GET', url, { headers: { 'user-agent': WINDOWS_UA } });
    expect(page.status).toBe(200);
    expect(page.body).toContain(`<span class="key" id="license-key">${sold.body.license_key}</span>`);
    expect(page.body).toMatch(/id="copy-key"/);
    expect(buildOf(pageDownloads(page.body).href!)).toBe(s.win.id);
    server.clock.advance(60_000);
    const again = await call('GET', url, { headers: { 'user-agent': WINDOWS_UA } });
    expect(again.body).toContain(sold.body.license_key);
    expect(pageDownloads(again.body)).toEqual(pageDownloads(page.body));
    // The confirmation email went out once, at provisioning.
    expect(await db('email_outbox').where({ license_id: sold.body.license_id, kind: 'license_delivery' }).select('id')).toHaveLength(1);

    // An address with no license of the app gets the page that waits for the order, and no key.
    const stranger = await call('GET', `/download?app_id=${s.app.id}&email=stranger@example.com`);
    expect(stranger.status).toBe(200);
    expect(stranger.body).toMatch(/id="pending"/);
    expect(stranger.body).not.toContain(sold.body.license_key);

    // An address is no secret: an hour after the sale the page no longer shows the key to whoever names it, and says where it went.
    await db('licenses')
      .where({ id: sold.body.license_id })
      .update({ created_at: db.raw("now() - interval '61 minutes'") });
    const later = await call('GET', url, { headers: { 'user-agent': WINDOWS_UA } });
    expect(later.status).toBe(200);
    expect(later.body).toMatch(/id="check-inbox"/);
    expect(later.body).not.toContain(sold.body.license_key);
    expect(await db('email_outbox').where({ license_id: sold.body.license_id, kind: 'license_delivery' }).select('id')).toHaveLength(1);
  });
});
