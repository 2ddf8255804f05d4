import fs from 'node:fs';
import path from 'node:path';
import { generate } from 'otplib';
import type { Page } from 'playwright-core';
import { chromiumForFile, chromiumMissingFor, SCREENSHOTS } from '../support/browser.js';
import { describe, expect, it } from 'vitest';
import { ENGINE_VERSION } from '../../runtime-sdk/engine/version.js';
import { peFile } from '../support/executables.js';
import { createApp, randomFingerprint, registerDeveloper, setPlan, type TestDeveloper } from '../support/fixtures.js';
import { startServerWithStripe } from '../support/stripe-server.js';
import { activatedDevice, readyBuild, report } from '../updates/support.js';
import type { Owner } from '../builds/support.js';
import { drawnChart, openPortalPage, submitSignIn } from './support.js';

// The portal in headless Chromium: every page driven as a developer would, against a real server
// and PostgreSQL. Screenshots of the main steps land in test/portal/screenshots/ (flow-*.png).
const chromiumMissing = chromiumMissingFor('portal browser tests');

const { stripe, server, call } = await startServerWithStripe();
const TOTP_STEP_MS = 30_000;

const browser = chromiumForFile(chromiumMissing);

const newPage = () => openPortalPage(browser(), server.url);

fs.mkdirSync(SCREENSHOTS, { recursive: true });
const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `flow-${name}.png`), fullPage: true });

const signInThroughPage = (page: Page, dev: { email: string; password: string }) => submitSignIn(page, server.url, dev);

async function signedInPage(dev: TestDeveloper) {
  const p = await newPage();
  await signInThroughPage(p.page, dev);
  await p.page.waitForSelector('#nav:not([hidden])');
  return p;
}

async function nextTotp(secret: string) {
  server.clock.advance(TOTP_STEP_MS);
  return generate({ secret, epoch: Math.floor(server.clock.now().getTime() / 1000) });
}

describe.skipIf(chromiumMissing)('the portal in Chromium', { timeout: 60_000 }, () => {
  it('signs in, sets up 2FA with a QR code and backup codes, and signs in again with a TOTP code, then a backup code', async () => {
    const dev = await registerDeveloper(call);
    const { page, errors, close } = await newPage();
    await page.goto(`${server.url}/portal`);
    await page.waitForSelector('#signin-form');
    await shot(page, '01-sign-in');
    // A wrong password: the error is shown next to the form, which keeps what was typed.
    await page.fill('#signin-email', dev.email);
    await page.fill('#signin-password', 'not-the-password');
    await page.click('#signin-submit');
    await expect.poll(() => page.textContent('#signin-error')).toMatch(/\w/);
    expect(await page.inputValue('#signin-email')).toBe(dev.email);
    await page.fill('#signin-password', dev.password);
    await page.click('#signin-submit');
    await page.waitForSelector('#nav:not([hidden])');

    await page.click('a[href="#/settings"]');
    // Setting up 2FA asks for the password again.
    await page.fill('#setup-2fa-password', dev.password);
    await page.click('#setup-2fa');
    await page.waitForSelector('#qr-code path');
    const uri = await page.textContent('#provisioning-uri');
    const secret = new URL(uri!).searchParams.get('secret')!;
    expect(await page.textContent('#totp-secret')).toBe(secret);
    const backupCodes = await page.locator('#backup-codes li').allTextContents();
    expect(backupCodes).toHaveLength(10);
    await shot(page, '02-two-factor-setup');
    // A wrong code is refused in words; the right one turns 2FA on.
    await page.fill('#confirm-2fa-code', '000000');
    await page.click('#confirm-2fa');
    await expect.poll(() => page.textContent('#confirm-2fa-error')).toMatch(/\w/);
    await page.fill('#confirm-2fa-code', await nextTotp(secret));
    await page.click('#confirm-2fa');
    await expect.poll(() => page.textContent('#two-factor-status')).toMatch(/^On\. 10 backup codes left/);

    // API keys: listed with their last use; a read-only key created with the password, shown once; then every key replaced.
    await page.waitForSelector(`#api-keys-table tr[data-api-key-id="${dev.apiKey.split('_')[1]}"]`);
    await page.fill('#api-key-password', dev.password);
    await page.click('#api-key-card summary');
    await page.fill('#new-api-key-name', 'dashboard');
    await page.check('#new-api-key-form input[value="read"]');
    await page.uncheck('#new-api-key-form input[value="admin"]');
    await page.click('#create-api-key');
    await page.waitForSelector('#api-key');
    const readKey = (await page.textContent('#api-key'))!;
    expect((await call('GET', '/v1/auth/me', { apiKey: readKey })).body.id).toBe(dev.id);
    expect((await call('POST', '/v1/apps', { apiKey: readKey, body: { name: 'x', platforms: ['linux-x64'] } })).status).toBe(403);
    expect(await page.locator('#api-keys-table tbody tr').count()).toBe(2);
    await shot(page, '03-settings');
    await page.fill('#api-key-password', dev.password);
    await page.click('#rotate-api-key');
    await page.click('#rotate-api-key-confirm, [data-confirm="yes"]');
    await expect.poll(async () => (await page.textContent('#api-key')) !== readKey).toBe(true);
    const apiKey = (await page.textContent('#api-key'))!;
    expect((await call('GET', '/v1/auth/me', { apiKey })).body.id).toBe(dev.id);
    for (const replaced of [dev.apiKey, readKey]) expect((await call('GET', '/v1/auth/me', { apiKey: replaced })).status).toBe(401);

    await page.click('#sign-out');
    await page.waitForSelector('#signin-form');
    await signInThroughPage(page, dev);
    await page.waitForSelector('#signin-code-form');
    await page.fill('#signin-code', await nextTotp(secret));
    await page.click('#signin-code-submit');
    await page.waitForSelector('#nav:not([hidden])');

    // And with a backup code.
    await page.click('#sign-out');
    await page.waitForSelector('#signin-form');
    await signInThroughPage(page, dev);
    await page.waitForSelector('#signin-code-form');
    await page.fill('#signin-code', backupCodes[0]!);
    await page.click('#signin-code-submit');
    await page.waitForSelector('#nav:not([hidden])');
    expect(errors).toEqual([]);
    await close();
  });

  it('creates an app, changes its settings, uploads a build that becomes READY, releases it, and deletes the app after typing its name', async () => {
    const dev = await registerDeveloper(call);
    const { page, errors, close } = await signedInPage(dev);
    await page.click('a[href="#/apps"]');
    // Refused first (no platform): the error is shown and the name stays.
    await page.fill('#new-app-name', 'Notes <b>Pro</b>');
    const checked = page.locator('#new-app-form input[type=checkbox]:checked');
    while ((await checked.count()) > 0) await checked.first().uncheck();
    await page.click('#new-app-submit');
    await expect.poll(() => page.textContent('#new-app-error')).toMatch(/platforms/);
    expect(await page.inputValue('#new-app-name')).toBe('Notes <b>Pro</b>');
    await page.check('#new-app-form input[value="linux-x64"]');
    await page.click('#new-app-submit');
    await page.waitForSelector('#app-settings-form');
    // Escaped: the name is text, not markup.
    expect(await page.textContent('#app-name')).toBe('Notes <b>Pro</b>');
    expect(await page.locator('#app-name b').count()).toBe(0);
    const appId = (await page.textContent('#app-id'))!;

    await page.fill('#app-grace', '96');
    await page.fill('#app-download-limit', '25');
    await page.fill('#app-product-key', 'notes-pro');
    await page.click('#app-settings-save');
    await expect.poll(() => page.textContent('#app-settings-notice')).toBe('Saved.');
    const app = (await call('GET', `/v1/apps/${appId}`, { token: dev.accessToken })).body;
    expect(app).toMatchObject({ offline_grace_hours: 96, download_limit: 25, product_key: 'notes-pro' });
    // A refused change keeps what was typed and says why.
    await page.fill('#app-price-id', 'prod_123');
    await page.click('#app-settings-save');
    await expect.poll(() => page.textContent('#app-settings-error')).toMatch(/Price ID/);
    expect(await page.inputValue('#app-price-id')).toBe('prod_123');
    await shot(page, '04-app-settings');

    await page.click(`a[href="#/apps/${appId}/builds"]`);
    await page.setInputFiles('#build-file', { name: 'notes.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(512 * 1024, 1) });
    await page.fill('#build-version', '1.2.0');
    await page.click('#build-upload');
    await expect.poll(() => page.textContent('#build-upload-progress-text')).toMatch(/Uploaded/);
    // The list follows the build by itself until READY.
    const row = page.locator('#builds-table tbody tr').first();
    await expect.poll(() => row.getAttribute('data-status'), { timeout: 20_000 }).toBe('READY');
    await row.locator('[data-action=release]').click();
    await expect.poll(() => row.locator('[data-action=unrelease]').count()).toBe(1);
    await shot(page, '05-builds');
    const buildId = (await row.getAttribute('data-build-id'))!;
    expect((await call('GET', `/v1/apps/${appId}/builds/${buildId}`, { token: dev.accessToken })).body.released).toBe(true);
    // Download: the signed link is a plain navigation.
    const [download] = await Promise.all([page.waitForEvent('download'), row.locator('[data-action=download]').click()]);
    expect((await download.path()) && download.suggestedFilename()).toBeTruthy();
    // A second build, deleted after confirming.
    await page.setInputFiles('#build-file', { name: 'extra.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(1024, 3) });
    await page.fill('#build-version', '1.3.0');
    await page.click('#build-upload');
    await expect.poll(() => page.locator('#builds-table tbody tr').count()).toBe(2);
    const extra = page.locator('#builds-table tbody tr').first();
    await expect.poll(() => extra.getAttribute('data-status'), { timeout: 20_000 }).toBe('READY');
    const extraId = (await extra.getAttribute('data-build-id'))!;
    await extra.locator('button:text("Delete")').click();
    await extra.locator('[data-confirm="yes"]').click();
    await expect.poll(() => page.locator('#builds-table tbody tr').count()).toBe(1);
    expect((await call('GET', `/v1/apps/${appId}/builds/${extraId}`, { token: dev.accessToken })).status).toBe(404);

    await page.click(`a[href="#/apps/${appId}/settings"]`);
    await page.waitForSelector('#delete-app-confirm');
    expect(await page.isDisabled('#delete-app')).toBe(true);
    await page.fill('#delete-app-confirm', 'Notes');
    expect(await page.isDisabled('#delete-app')).toBe(true);
    await page.fill('#delete-app-confirm', 'Notes <b>Pro</b>');
    await page.click('#delete-app');
    await page.waitForURL(/#\/apps$/);
    expect((await call('GET', `/v1/apps/${appId}`, { token: dev.accessToken })).status).toBe(404);
    expect(errors).toEqual([]);
    await close();
  });

  it('creates a license, finds it by search and status, opens it and revokes it', async () => {
    const dev = await registerDeveloper(call);
    await setPlan(call, server.adminToken, dev.id, 'pro');
    const app = await createApp(call, dev, { name: 'Ledger' });
    for (let i = 0; i < 22; i++) {
      await call('POST', '/v1/licenses', { token: dev.accessToken, body: { app_id: app.id, email: `buyer${i}@example.com` } });
    }
    const { page, errors, close } = await signedInPage(dev);
    await page.click('a[href="#/licenses"]');
    await page.waitForSelector('#licenses-table');
    expect(await page.textContent('#license-count')).toBe('1–20 of 22');
    await page.click('#page-next');
    await expect.poll(() => page.textContent('#license-count')).toBe('21–22 of 22');

    await page.selectOption('#new-license-app', app.id);
    await page.fill('#new-license-email', 'vip@example.com');
    await page.fill('#new-license-devices', '3');
    await page.click('#new-license-submit');
    await page.waitForSelector('#new-license-key');
    const key = (await page.textContent('#new-license-key'))!;

    await page.fill('#filter-q', 'vip@');
    await page.click('#filter-apply');
    await expect.poll(() => page.textContent('#license-count')).toBe('1–1 of 1');
    await page.fill('#filter-q', key.toLowerCase());
    await page.click('#filter-apply');
    await expect.poll(() => page.locator('#licenses-table tbody tr').count()).toBe(1);
    await shot(page, '06-licenses');
    await page.click(`#licenses-table a:text("${key}")`);
    await page.waitForSelector('#license-detail');
    expect(await page.textContent('#license-key')).toBe(key);

    // [License] the download limit is adjustable in the portal; emptied, it goes back to the default allowance.
    const shownId = page.url().split('/').pop()!;
    await page.fill('#license-download-limit', '40');
    await page.click('#license-download-limit-save');
    await expect.poll(async () => (await call('GET', `/v1/licenses/${shownId}`, { token: dev.accessToken })).body.download_limit).toBe(40);
    await expect.poll(() => page.textContent('#license-detail')).toContain('Download limit40');
    await page.fill('#license-download-limit', '');
    await page.click('#license-download-limit-save');
    await expect.poll(async () => (await call('GET', `/v1/licenses/${shownId}`, { token: dev.accessToken })).body.download_limit).toBeNull();

    await page.click('#revoke-license');
    await page.click('#license-detail [data-confirm="yes"]');
    await expect.poll(() => page.textContent('#license-status')).toBe('REVOKED');
    await shot(page, '07-license-detail');
    const licenseId = page.url().split('/').pop()!;
    expect((await call('GET', `/v1/licenses/${licenseId}`, { token: dev.accessToken })).body.status).toBe('REVOKED');

    await page.goto(`${server.url}/portal#/licenses?status=revoked`);
    await expect.poll(() => page.textContent('#license-count')).toBe('1–1 of 1');
    expect(errors).toEqual([]);
    await close();
  });

  it("shows a license's metered features with their usage, and replaces them with the meters form", async () => {
    const dev = await registerDeveloper(call);
    await setPlan(call, server.adminToken, dev.id, 'pro');
    const app = await createApp(call, dev, { name: 'Metered' });
    const created = await call('POST', '/v1/licenses', { token: dev.accessToken, body: { app_id: app.id, meters: { export: { uses_per_period: 10, period: 'month' } } } });
    const lic = created.body;
    const device = await call('POST', '/v1/licenses/activate', { body: { license_key: lic.license_key, device_fingerprint: 'c'.repeat(64) } });
    const used = await call('POST', '/v1/licenses/consume', { body: { token: device.body.token, feature: 'export', quantity: 4, idempotency_key: 'portal-meter-0001' } });
    expect(used.status).toBe(200);

    const { page, errors, close } = await signedInPage(dev);
    await page.goto(`${server.url}/portal#/licenses/${lic.license_id}`);
    await page.waitForSelector('#meters-table');
    const cells = () => page.locator('#meters-table tbody tr').first().locator('td').allTextContents();
    expect((await cells()).slice(0, 4)).toEqual(['export', '4', '6', '10 per month (UTC)']);

    // Lower the limit, add a lifetime meter; the usage counted stays with its feature.
    await page.fill('#license-meter-rows .meter-row:nth-child(1) .meter-uses', '5');
    await page.click('#license-meter-add');
    await page.fill('#license-meter-rows .meter-row:nth-child(2) .meter-feature', 'render');
    await page.fill('#license-meter-rows .meter-row:nth-child(2) .meter-uses', '3');
    await page.selectOption('#license-meter-rows .meter-row:nth-child(2) .meter-period', 'lifetime');
    await page.click('#license-meters-save');
    await expect.poll(() => page.textContent('#license-meters-notice')).toBe('Meters saved.');
    expect((await cells()).slice(0, 4)).toEqual(['export', '4', '1', '5 per month (UTC)']);
    const meters = (await call('GET', `/v1/licenses/${lic.license_id}`, { token: dev.accessToken })).body.meters;
    expect(meters).toEqual({ export: { uses_per_period: 5, period: 'month' }, render: { uses_per_period: 3, period: 'lifetime' } });

    // A refused value is shown next to the form and changes nothing.
    await page.fill('#license-meter-rows .meter-row:nth-child(2) .meter-feature', 'has space');
    await page.click('#license-meters-save');
    await expect.poll(() => page.textContent('#license-meters-error')).toMatch(/meters/);
    expect((await call('GET', `/v1/licenses/${lic.license_id}`, { token: dev.accessToken })).body.meters).toEqual(meters);
    await shot(page, '07b-license-meters');
    expect(errors).toEqual([]);
    await close();
  });

  it('pushes an update, shows its adoption as a chart, and explains a refused push in words', async () => {
    const dev = await registerDeveloper(call);
    await setPlan(call, server.adminToken, dev.id, 'pro');
    const app = await createApp(call, dev, { name: 'Updater', platforms: ['linux-x64'] });
    const o: Owner = { server, call, dev, app };
    const older = await readyBuild(o, { version: '1.0.0' });
    const build = await readyBuild(o, { version: '1.1.0' });
    const license = (await call('POST', '/v1/licenses', { token: dev.accessToken, body: { app_id: app.id, device_limit: 10 } })).body;
    const devices = [];
    for (let i = 0; i < 5; i++) devices.push(await activatedDevice(o, license));
    const oldEngine = { ...license };
    const fingerprint = (await import('../support/fixtures.js')).randomFingerprint();
    const activate = await call('POST', '/v1/licenses/activate', {
      body: { license_key: oldEngine.license_key, device_fingerprint: fingerprint, build_id: null, platform: 'linux-x64', engine_version: '1.0.0.0.0.100' },
    });
    expect(activate.status, JSON.stringify(activate.body)).toBe(200);
    expect(ENGINE_VERSION).toBeTruthy();

    const { page, errors, close } = await signedInPage(dev);
    await page.goto(`${server.url}/portal#/apps/${app.id}/updates`);
    await page.waitForSelector('#no-push');
    await page.selectOption('#push-target', build.id);
    await page.fill('#push-notes', 'Faster sync <and> fewer bugs');
    await page.click('#push-submit');
    await page.waitForSelector('#adoption-chart');

    for (const d of devices.slice(0, 3)) expect((await report(o, d, 'installed', build.id)).status).toBe(204);
    expect((await report(o, devices[3]!, 'skipped', build.id)).status).toBe(204);
    await page.reload();
    await page.waitForSelector('#adoption-chart');
    const adoption = await drawnChart(page, 'adoption-chart');
    expect(adoption.rows).toEqual([
      ['Installed', '3'],
      ['Skipped', '1'],
      ['Failed', '0'],
      ['Pending', '1'],
      ['Unable (old engine)', '1'],
    ]);
    expect(adoption.label).toContain('Installed 3 (50%)');
    expect(await page.textContent('#active-push')).toContain('Faster sync <and> fewer bugs');
    await shot(page, '08-update-push');

    // Pushing an older build than the active target: refused, in words, next to the form.
    await page.selectOption('#push-target', older.id);
    await page.click('#push-submit');
    await expect.poll(() => page.textContent('#push-error')).toMatch(/older than the target of the active push/);

    await page.click('#clear-push');
    await page.click('#active-push [data-confirm="yes"]');
    await page.waitForSelector('#no-push');
    expect((await call('GET', `/v1/apps/${app.id}/push-update`, { token: dev.accessToken })).body.push).toBeNull();

    // The license page: its devices, a push to it alone (an older build is allowed there), reset devices.
    await page.goto(`${server.url}/portal#/licenses/${license.license_id}`);
    await page.waitForSelector('#devices-table');
    expect(await page.locator('#devices-table tbody tr').count()).toBe(6);
    await page.selectOption('#license-push-target', older.id);
    await page.click('#license-push-submit');
    await page.waitForSelector('#license-adoption-chart');
    expect((await call('GET', `/v1/licenses/${license.license_id}/push-update`, { token: dev.accessToken })).body.push.target_build_id).toBe(older.id);
    await page.click('#reset-devices');
    await page.click('#license-detail [data-confirm="yes"]');
    await expect.poll(() => page.textContent('#license-action-notice')).toBe('6 devices removed.');
    await page.waitForSelector('#no-devices');
    expect(errors).toEqual([]);
    await close();
  });

  it("shows a license's deactivation history: the app's own deactivations and the devices a reset removed", async () => {
    const dev = await registerDeveloper(call);
    await setPlan(call, server.adminToken, dev.id, 'pro');
    const app = await createApp(call, dev, { name: 'Movable', platforms: ['linux-x64'] });
    const license = (await call('POST', '/v1/licenses', { token: dev.accessToken, body: { app_id: app.id, device_limit: 3 } })).body;
    const { randomFingerprint } = await import('../support/fixtures.js');
    const tokens = [];
    for (let i = 0; i < 2; i++) {
      const res = await call('POST', '/v1/licenses/activate', { body: { license_key: license.license_key, device_fingerprint: randomFingerprint() } });
      expect(res.status).toBe(200);
      tokens.push(res.body.token as string);
    }
    const { page, errors, close } = await signedInPage(dev);
    // The app's quota, set on its settings page.
    await page.goto(`${server.url}/portal#/apps/${app.id}`);
    await page.waitForSelector('#app-settings-form');
    expect(await page.inputValue('#app-deactivations')).toBe('3');
    await page.fill('#app-deactivations', '4');
    await page.click('#app-settings-save');
    await expect.poll(() => page.textContent('#app-settings-notice')).toBe('Saved.');
    expect((await call('GET', `/v1/apps/${app.id}`, { token: dev.accessToken })).body.app_deactivations_per_30_days).toBe(4);

    await page.goto(`${server.url}/portal#/licenses/${license.license_id}`);
    await page.waitForSelector('#no-deactivations');
    expect(await page.textContent('#license-deactivations')).toContain('4 per license in any 30 days');

    expect((await call('POST', '/v1/licenses/deactivate', { body: { token: tokens[0] } })).body.deactivated).toBe(true);
    await page.reload();
    await page.waitForSelector('#deactivations-table');
    expect(await page.locator('#deactivations-table tbody tr[data-source="app"]').count()).toBe(1);
    expect(await page.textContent('#deactivations-table tbody')).toContain('By the app');
    expect(await page.locator('#devices-table tbody tr').count()).toBe(1);

    // A reset from the page: the device it removed joins the history at once, as the developer's.
    await page.click('#reset-devices');
    await page.click('#license-detail [data-confirm="yes"]');
    await expect.poll(() => page.locator('#deactivations-table tbody tr[data-source="developer"]').count()).toBe(1);
    expect(await page.textContent('#deactivations-table tbody tr:first-child')).toContain('Reset by you');
    await shot(page, '08b-license-deactivations');
    expect(errors).toEqual([]);
    await close();
  });

  it('[Versioning 3] explains a refused push of an unsigned Windows build, offers Replace with Signed Package, refuses an unsigned package in words, and pushes once signed', async () => {
    const dev = await registerDeveloper(call);
    await setPlan(call, server.adminToken, dev.id, 'pro');
    const app = await createApp(call, dev, { name: 'Signed', platforms: ['win-x64', 'linux-x64'] });
    const o: Owner = { server, call, dev, app };
    const build = await readyBuild(o, { platform: 'win-x64', version: '2.0.0' });
    const linux = await readyBuild(o, { platform: 'linux-x64', version: '2.0.0' });
    const license = (await call('POST', '/v1/licenses', { token: dev.accessToken, body: { app_id: app.id } })).body;
    await activatedDevice(o, license, 'win-x64');
    const { page, errors, close } = await signedInPage(dev);

    await page.goto(`${server.url}/portal#/apps/${app.id}/updates`);
    await page.waitForSelector('#no-push');
    await page.selectOption('#push-target', build.id);
    await page.click('#push-submit');
    await expect.poll(() => page.textContent('#push-error')).toMatch(/Replace with Signed Package/);

    await page.goto(`${server.url}/portal#/apps/${app.id}/builds`);
    const row = page.locator(`#builds-table tr[data-build-id="${build.id}"]`);
    await expect.poll(() => row.textContent()).toContain('Not signed: Replace with Signed Package before pushing');
    // A Linux build takes no signed package: no button.
    expect(await page.locator(`#builds-table tr[data-build-id="${linux.id}"] [data-action=signed-package]`).count()).toBe(0);
    await row.locator('[data-action=signed-package-file]').setInputFiles({ name: 'notes-unsigned.exe', mimeType: 'application/octet-stream', buffer: peFile() });
    await expect.poll(() => row.locator('td:last-child .error').textContent()).toMatch(/no code signature.*Authenticode/);
    expect((await call('GET', `/v1/apps/${app.id}/builds/${build.id}`, { token: dev.accessToken })).body.signed_package_at).toBeNull();
    await row
      .locator('[data-action=signed-package-file]')
      .setInputFiles({ name: 'notes-signed.exe', mimeType: 'application/octet-stream', buffer: peFile({ signature: 'PKCS#7 signed data' }) });
    await expect.poll(() => row.textContent(), { timeout: 15_000 }).toContain('Signed package');
    expect(await row.textContent()).not.toContain('Not signed');

    await page.goto(`${server.url}/portal#/apps/${app.id}/updates`);
    await page.waitForSelector('#no-push');
    await page.selectOption('#push-target', build.id);
    await page.click('#push-submit');
    await page.waitForSelector('#adoption-chart');
    expect((await call('GET', `/v1/apps/${app.id}/push-update`, { token: dev.accessToken })).body.push.target_build_id).toBe(build.id);
    expect(errors).toEqual([]);
    await close();
  });

  it('shows the sales section: connects the processor account and generates a payment link', async () => {
    const dev = await registerDeveloper(call);
    await setPlan(call, server.adminToken, dev.id, 'pro');
    const account = stripe.addAccount();
    const priceId = `price_portal${Date.now()}`;
    stripe.addPrice(account, { id: priceId });
    const app = await createApp(call, dev, { name: 'Seller' });
    const { page, errors, close } = await signedInPage(dev);
    await page.goto(`${server.url}/portal#/apps/${app.id}/sales`);
    // Connect OAuth: the button sends the browser to Stripe's authorize page (the fake approves for
    // `account`), which sends it back through the API's callback to Settings with the result.
    stripe.authorizePage.account = account;
    await page.click('#connect-account');
    await page.waitForURL(/#\/settings\?payments=connected$/);
    await expect.poll(() => page.textContent('#account-result')).toMatch(/connected/);
    expect(await page.textContent('#account-status')).toContain(account);
    await page.goto(`${server.url}/portal#/apps/${app.id}/sales`);
    await expect.poll(() => page.textContent('#account-status')).toContain(account);
    // No Price ID yet: the refusal is shown in words.
    await page.click('#generate-link');
    await expect.poll(() => page.textContent('#payment-link-error')).toMatch(/\w/);
    expect((await call('PUT', `/v1/apps/${app.id}`, { token: dev.accessToken, body: { price_id: priceId } })).status).toBe(200);
    await page.click('#generate-link');
    await page.waitForSelector('#payment-link-url');
    const first = await page.textContent('#payment-link-url');
    await page.click('#generate-link');
    await expect.poll(() => page.textContent('#payment-link-url')).not.toBe(first);
    await shot(page, '09-sales');
    await page.click('#remove-link');
    await page.click('#payment-link [data-confirm="yes"]');
    await page.waitForSelector('#no-payment-link');

    // Redemption codes: generate, save the CSV once, revoke one code, then Revoke All.
    await page.fill('#batch-channel', 'appsumo');
    await page.fill('#batch-quantity', '5');
    await page.fill('#batch-label', '=Launch');
    await page.click('#batch-submit');
    await page.waitForSelector('#batch-download');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#batch-download')]);
    expect(download.suggestedFilename()).toMatch(/^redemption-codes-.+\.csv$/);
    const csv = fs
      .readFileSync((await download.path())!, 'utf8')
      .trim()
      .split(/\r?\n/);
    expect(csv[0]).toBe('code,batch_id,channel,label');
    expect(csv).toHaveLength(6);
    expect(csv[1]).toContain("'=Launch");
    await page.waitForSelector('#batch-downloaded');
    expect(await page.locator('#batch-download').count()).toBe(0);
    const row = page.locator('#batches-table tbody tr').first();
    expect(await row.locator('[data-count=available]').textContent()).toBe('5');
    await page.fill('#revoke-code', csv[1]!.split(',')[0]!);
    await page.click('#revoke-code-submit');
    await expect.poll(() => page.textContent('#revoke-code-notice')).toMatch(/revoked/);
    await expect.poll(() => page.locator('#batches-table tbody tr [data-count=revoked]').first().textContent()).toBe('1');
    // A code that does not exist: refused, in words.
    await page.fill('#revoke-code', 'LK-ZZZZ-ZZZZ-ZZZZ');
    await page.click('#revoke-code-submit');
    await expect.poll(() => page.textContent('#batches-error')).toMatch(/\w/);
    await row.locator('button:text("Revoke all")').click();
    await row.locator('[data-confirm="yes"]').click();
    await expect.poll(() => page.locator('#batches-table tbody tr [data-count=revoked]').first().textContent()).toBe('5');

    // Entitlement webhook: enable (URL and secret shown once), rotate, disable.
    await page.click('#enable-webhook');
    await page.waitForSelector('#webhook-secret');
    expect(await page.textContent('#webhook-url')).toMatch(/\/v1\/entitlement-webhooks\//);
    const secret = await page.textContent('#webhook-secret');
    await expect.poll(() => page.textContent('#webhook-status')).toBe('Enabled');
    await page.click('#rotate-webhook');
    await page.click('#entitlement-webhook [data-confirm="yes"]');
    await expect.poll(async () => `${await page.textContent('#webhook-secret')} ${await page.textContent('#webhook-error')}`).not.toMatch(new RegExp(`^${secret} $`));
    expect(await page.textContent('#webhook-error')).toBe('');
    await shot(page, '10-sales-codes-and-webhook');
    await page.click('#disable-webhook');
    await page.click('#entitlement-webhook [data-confirm="yes"]');
    await expect.poll(() => page.textContent('#webhook-status')).toMatch(/Disabled/);
    expect((await call('GET', `/v1/apps/${app.id}/entitlement-webhook`, { token: dev.accessToken })).body.enabled).toBe(false);
    expect(errors).toEqual([]);
    await close();
  });

  it('[Floating licenses] sets what an app sells, creates a floating license and a floating batch, shows its seats in use and sets its seats', async () => {
    const dev = await registerDeveloper(call);
    await setPlan(call, server.adminToken, dev.id, 'pro');
    const app = await createApp(call, dev, { name: 'Studio', platforms: ['linux-x64'] });
    const read = async (path: string) => (await call('GET', path, { token: dev.accessToken })).body;
    const { page, errors, close } = await signedInPage(dev);

    // The app's sales: floating, 4 seats (the lease TTL left to its default).
    await page.goto(`${server.url}/portal#/apps/${app.id}/settings`);
    await page.waitForSelector('#app-settings-form');
    expect(await page.isVisible('#app-sold-max-concurrent')).toBe(false);
    await page.selectOption('#app-sold-seat-model', 'floating');
    await page.fill('#app-sold-max-concurrent', '4');
    await page.click('#app-settings-save');
    await expect.poll(() => page.textContent('#app-settings-notice')).toBe('Saved.');
    expect(await read(`/v1/apps/${app.id}`)).toMatchObject({ sold_seat_model: 'floating', sold_max_concurrent: 4, sold_lease_ttl_minutes: 15 });
    // The seats alone changed: sent with their model, as the API needs.
    await page.fill('#app-sold-max-concurrent', '6');
    await page.click('#app-settings-save');
    await expect.poll(async () => (await read(`/v1/apps/${app.id}`)).sold_max_concurrent).toBe(6);

    // A floating license from the creation form: its device limit is not asked.
    await page.goto(`${server.url}/portal#/licenses`);
    await page.waitForSelector('#new-license-form');
    await page.selectOption('#new-license-app', app.id);
    await page.selectOption('#new-license-seat-model', 'floating');
    expect(await page.isVisible('#new-license-devices')).toBe(false);
    await page.fill('#new-license-max-concurrent', '2');
    await page.fill('#new-license-lease-ttl', '20');
    await page.click('#new-license-submit');
    await page.waitForSelector('#new-license-key');
    const key = (await page.textContent('#new-license-key'))!;
    const licenseId = (await page.getAttribute('#new-license-key', 'href'))!.split('/').pop()!;
    expect(await read(`/v1/licenses/${licenseId}`)).toMatchObject({ license_key: key, seat_model: 'floating', max_concurrent: 2, lease_ttl_minutes: 20 });
    const activated = await call('POST', '/v1/licenses/activate', { body: { license_key: key, device_fingerprint: randomFingerprint(), build_id: null } });
    expect(activated.status).toBe(200);

    await page.goto(`${server.url}/portal#/licenses?app_id=${app.id}`);
    await expect.poll(() => page.textContent(`#licenses-table tr[data-license-id="${licenseId}"] [data-seats]`)).toBe('floating, 2 seats');
    await page.click(`#licenses-table a:text("${key}")`);
    await page.waitForSelector('#license-seats-form');
    expect(await page.textContent('#license-seat-model')).toBe('Floating');
    expect(await page.textContent('#license-seats-in-use')).toBe('1 of 2');
    await page.fill('#license-max-concurrent', '3');
    await page.fill('#license-lease-ttl', '30');
    await page.click('#license-seats-save');
    await expect.poll(() => page.textContent('#license-seats-in-use')).toBe('1 of 3');
    expect(await read(`/v1/licenses/${licenseId}`)).toMatchObject({ max_concurrent: 3, lease_ttl_minutes: 30, seats_in_use: 1 });
    await shot(page, '11-floating-license');

    // A batch of floating codes from the sales tab.
    await page.goto(`${server.url}/portal#/apps/${app.id}/sales`);
    await page.waitForSelector('#batch-form');
    await page.fill('#batch-channel', 'appsumo');
    await page.fill('#batch-quantity', '1');
    await page.selectOption('#batch-seat-model', 'floating');
    await page.fill('#batch-max-concurrent', '5');
    await page.click('#batch-submit');
    await page.waitForSelector('#batch-download');
    const [batch] = await read(`/v1/apps/${app.id}/redemption-batches`);
    expect(batch).toMatchObject({ seat_model: 'floating', max_concurrent: 5, lease_ttl_minutes: 15 });
    await expect.poll(() => page.textContent(`#batches-table tr[data-batch-id="${batch.id}"] [data-seats]`)).toBe('floating, 5 seats');
    expect(errors).toEqual([]);
    await close();
  });

  it('shows the dashboard with activations, licenses sold and fees owed', async () => {
    const dev = await registerDeveloper(call);
    await setPlan(call, server.adminToken, dev.id, 'pro');
    const app = await createApp(call, dev, { name: 'Metrics', platforms: ['linux-x64'] });
    const o: Owner = { server, call, dev, app };
    const license = (await call('POST', '/v1/licenses', { token: dev.accessToken, body: { app_id: app.id, device_limit: 5 } })).body;
    for (let i = 0; i < 3; i++) await activatedDevice(o, license);
    // A sold license: a redeemed code is charged the platform fee.
    const batch = await call('POST', `/v1/apps/${app.id}/redemption-batches`, { token: dev.accessToken, body: { channel: 'appsumo', quantity: 2 } });
    expect(batch.status, JSON.stringify(batch.body)).toBe(201);
    const redeemed = await call('POST', '/v1/public/redeem', { body: { code: batch.body.codes[0] } });
    expect(redeemed.status, JSON.stringify(redeemed.body)).toBeLessThan(300);

    const { page, errors, close } = await signedInPage(dev);
    await page.waitForSelector('#chart-activations');
    expect(await page.textContent('#stat-activations')).toBe('3');
    expect(await page.textContent('#stat-sold')).toBe('1');
    expect(await page.textContent('#fees-owed-usd')).toBe('$4.00');
    const today = server.clock.now().toISOString().slice(0, 10);
    expect((await drawnChart(page, 'chart-activations')).rows).toEqual([[today, '3']]);
    await shot(page, '00-dashboard');
    expect(errors).toEqual([]);
    await close();
  });
});
