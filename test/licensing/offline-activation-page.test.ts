/**
 * Issue 22 item 3, the hosted page: GET /activate-offline is a form for the request file the app
 * saved; POST answers the license file as a download, or the form again with the reason. Driven in
 * headless Chromium (a real file input and download) and over HTTP for the refusals.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyLicenseFile, type JwkSet } from '../../runtime-sdk/protocol.js';
import { chromiumForFile, chromiumMissingFor } from '../support/browser.js';
import { createLicense, randomFingerprint } from '../support/fixtures.js';
import { formData } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tenant, type Tenant } from './world.js';

const chromiumMissing = chromiumMissingFor('offline activation page tests');

let server: TestServer;
let t: Tenant;
let keys: JwkSet;
const browser = chromiumForFile(chromiumMissing);
beforeAll(async () => {
  server = await startTestServer();
  t = await tenant(server);
  keys = (await t.call('GET', '/v1/public/keys')).body as JwkSet;
});
afterAll(() => server.close());

/** A request file as the SDK writes it, for a new device. */
function requestFor(licenseKey: string) {
  const request = {
    format: 'latchkey-activation-request/1',
    app_id: t.app.id,
    license_key: licenseKey,
    device_fingerprint: randomFingerprint(),
    device_key: randomBytes(32).toString('base64url'),
    build_id: null,
    created_at: new Date().toISOString(),
  };
  return { request, text: `${JSON.stringify(request, null, 2)}\n` };
}

const upload = (data: string | Buffer) => t.call('POST', '/activate-offline', { raw: formData({}, { request: { name: 'request.json', data } }) });

describe.skipIf(chromiumMissing)('GET /activate-offline in headless Chromium', () => {
  it('uploads the request file and downloads a license file for that device', async () => {
    const license = await createLicense(t.call, t.dev, { app_id: t.app.id, device_limit: 1 });
    const { request, text } = requestFor(license.license_key);
    const context = await browser().newContext({ acceptDownloads: true });
    const page = await context.newPage();
    const consoleErrors: string[] = [];
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
    const res = await page.goto(`${server.url}/activate-offline`);
    expect(res!.status()).toBe(200);
    expect(res!.headers()['content-security-policy']).toMatch(/form-action 'self'/);
    await page.setInputFiles('#request', { name: 'activation-request.json', mimeType: 'application/json', buffer: Buffer.from(text) });
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#activate-offline')]);
    expect(download.suggestedFilename()).toBe('license.lic');
    const file = fs.readFileSync((await download.path())!, 'utf8');
    const claims = verifyLicenseFile(file, keys, {
      appId: t.app.id,
      device: request.device_fingerprint,
      deviceKey: request.device_key,
      nowSeconds: Math.floor(Date.now() / 1000),
    });
    expect(claims.license_key).toBe(license.license_key);

    // A second computer on the full license: the form again, with the activation's reason.
    await page.goto(`${server.url}/activate-offline`);
    await page.setInputFiles('#request', { name: 'second.json', mimeType: 'application/json', buffer: Buffer.from(requestFor(license.license_key).text) });
    const [refused] = await Promise.all([page.waitForNavigation(), page.click('#activate-offline')]);
    expect(refused!.status()).toBe(403);
    expect(await page.textContent('#offline-activation-error')).toMatch(/already active on 1 device/);
    // Nothing refused by the Content-Security-Policy; Chromium logs the 403 document itself.
    expect(consoleErrors.filter((m) => !/status of 403/.test(m))).toEqual([]);
    await context.close();
  });
});

describe('POST /activate-offline over HTTP', () => {
  it('answers the license file as an attachment', async () => {
    const license = await createLicense(t.call, t.dev, { app_id: t.app.id, device_limit: 1 });
    const res = await upload(requestFor(license.license_key).text);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="license.lic"');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(String(res.body).split('.')).toHaveLength(3);
  });

  it('shows the form again for what is not a request file, a refused activation, and refuses a large file', async () => {
    for (const bad of ['hello', JSON.stringify({ format: 'latchkey-activation-request/9' }), Buffer.from([0xff, 0xfe, 0x00])]) {
      const res = await upload(bad);
      expect(res.status).toBe(400);
      expect(String(res.body)).toMatch(/not an activation request file/);
    }
    const unknown = await upload(requestFor('AAAA-BBBB-CCCC-DDDD').text);
    expect(unknown.status).toBe(401);
    expect(String(unknown.body)).toMatch(/id="offline-activation-error"/);

    const huge = await upload('x'.repeat(100_000));
    expect(huge.status).toBe(413);
    expect(huge.body).toMatchObject({ error_code: 'PAYLOAD_TOO_LARGE', status_code: 413 });
  });
});
