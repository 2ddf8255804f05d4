/**
 * Issue 23, the developer portal: every portal page in headless Chromium at a phone's width (390 px)
 * and a laptop's (1280 px), and fitting 360 px and 1440 px: no horizontal overflow, no console
 * error, no serious or critical axe-core violation, with data in every table and chart (seed.ts) and
 * the charts' numbers tables open. Each chart is drawn and shows the API's numbers. Forms are
 * submitted with every field their API takes and the result read back over the API; messages follow
 * the developer's plan. Screenshots of each page at both widths go to test/portal/screenshots/
 * (git-ignored). One browser, one server.
 */
import type { Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { chromiumForFile, chromiumMissingFor, inspectPage } from '../support/browser.js';
import { createApp, createLicense, registerDeveloper, setPlan, type TestDeveloper } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { startTestServer } from '../support/server.js';
import { seededPortal } from './seed.js';
import { drawnChart, openPortalPage, submitSignIn } from './support.js';

const chromiumMissing = chromiumMissingFor('portal page tests');

const server = await startTestServer();
const call = client(server.url);

const browser = chromiumForFile(chromiumMissing);
afterAll(() => server.close());

type Portal = Awaited<ReturnType<typeof openPortalPage>>;
const openPortal = () => openPortalPage(browser(), server.url);

async function signIn(portal: Portal, dev: TestDeveloper) {
  await submitSignIn(portal.page, server.url, dev);
  await portal.page.waitForSelector('#nav:not([hidden])');
}

/** Goes to a portal route and waits until its view has rendered (no "Loading…" left). */
async function visit(page: Page, hash: string, ready: string) {
  await page.evaluate((h) => {
    location.hash = h;
  }, hash);
  await page.waitForSelector(ready);
  await page.waitForFunction(() => !document.querySelector('#main .view > p.muted')?.textContent?.startsWith('Loading'));
}

/** A signed-in portal on `hash`, rendered. */
async function openAs(dev: TestDeveloper, hash: string, ready: string): Promise<Portal> {
  const portal = await openPortal();
  await signIn(portal, dev);
  await visit(portal.page, hash, ready);
  return portal;
}

/** Nothing went wrong in the page meanwhile; its profile is closed. */
async function expectNoErrors(portal: Portal) {
  expect(portal.errors).toEqual([]);
  await portal.close();
}

async function proDeveloperWithApp() {
  const dev = await registerDeveloper(call, { company_name: 'Northwind Tools, Makers of Remarkably Long Company Names Ltd' });
  await setPlan(call, server.adminToken, dev.id, 'pro');
  const app = await createApp(call, dev, { name: 'Notes Pro with a name long enough to wrap on a phone', platforms: ['linux-x64', 'win-x64', 'mac-arm64'] });
  const license = await createLicense(call, dev, { app_id: app.id, email: 'someone.with.a.long.address@example.com', features: { tier: 'pro' } });
  return { dev, app, license };
}

describe.skipIf(chromiumMissing)('the portal pages', { timeout: 120_000 }, () => {
  it('fit 360 to 1440 px, log no console error and have no serious or critical axe violation, signed out and in, every table and chart filled', async () => {
    const { dev, app, license } = await seededPortal(server, call);
    const portal = await openPortal();
    await portal.page.goto(`${server.url}/portal`);
    await portal.page.waitForSelector('#signin-form');
    await inspectPage(portal.page, 'portal-sign-in');
    await signIn(portal, dev);
    // Each page with the tables and charts it shows: each has rows, and is checked at every width like the rest of its page.
    const pages: [string, string, string, string[]][] = [
      ['portal-dashboard', '#/', '#chart-fees', ['chart-activations', 'chart-sold', 'chart-created', 'chart-fees']],
      ['portal-apps', '#/apps', '#new-app-name', ['apps-table']],
      ['portal-app-settings', `#/apps/${app.id}/settings`, '#tab-settings', []],
      ['portal-app-builds', `#/apps/${app.id}/builds`, '#builds-table', ['builds-table']],
      ['portal-app-updates', `#/apps/${app.id}/updates`, '#adoption-chart', ['adoption-chart']],
      ['portal-app-sales', `#/apps/${app.id}/sales`, '#batches-table', ['batches-table']],
      ['portal-licenses', '#/licenses', '#licenses-table', ['licenses-table']],
      ['portal-license', `#/licenses/${license.license_id}`, '#license-adoption-chart', ['devices-table', 'deactivations-table', 'meters-table', 'license-adoption-chart']],
      ['portal-settings', '#/settings', '#api-keys-table', ['api-keys-table']],
    ];
    for (const [name, hash, ready, shown] of pages) {
      await visit(portal.page, hash, ready);
      const charts = shown.filter((id) => id.includes('chart'));
      for (const id of charts) expect((await drawnChart(portal.page, id)).rows.length, id).toBeGreaterThan(0);
      for (const id of shown.filter((t) => !charts.includes(t))) expect(await portal.page.locator(`#${id} tbody tr`).count(), id).toBeGreaterThan(0);
      // The charts' numbers tables open, so that they too must fit a phone.
      await portal.page.$$eval('figure.chart-figure details', (all) => all.forEach((d) => ((d as HTMLDetailsElement).open = true)));
      await inspectPage(portal.page, name);
      // A chart's box never widens the page, so the plot itself must narrow with it: on the narrowest phone too.
      await portal.page.setViewportSize({ width: 360, height: 800 });
      for (const id of charts) await drawnChart(portal.page, id);
      await portal.page.setViewportSize({ width: 1280, height: 900 });
    }
    await expectNoErrors(portal);
  });

  it('draws each chart with the API’s numbers, named by them for a screen reader', async () => {
    const { dev, app, license } = await seededPortal(server, call);
    const portal = await openAs(dev, '#/', '#chart-fees');
    const { page } = portal;
    const stats = (await call('GET', '/v1/stats?days=30', { apiKey: dev.apiKey })).body;
    const daysCounted = (days: { date: string; count: number }[]) => days.filter((d) => d.count > 0).map((d) => [d.date, String(d.count)]);
    expect(daysCounted(stats.activations)).toHaveLength(3);
    for (const [id, days] of [
      ['chart-activations', stats.activations],
      ['chart-sold', stats.licenses_sold],
      ['chart-created', stats.licenses_created],
    ] as const) {
      const chart = await drawnChart(page, id);
      expect(chart.rows, id).toEqual(daysCounted(days));
      const total = days.reduce((n: number, d: { count: number }) => n + d.count, 0);
      expect(chart.label, id).toContain(`${stats.from} to ${stats.to} (UTC): ${total} in all`);
    }
    const usd = (cents: number) => (cents / 100).toLocaleString('en-US', { style: 'currency', currency: 'USD' });
    const [fees] = stats.fees;
    expect(fees.period_cents).toBeGreaterThan(0);
    const feeRows = [
      ['USD charged, 30 days', usd(fees.period_cents)],
      ['USD not yet billed', usd(fees.unbilled_cents)],
    ];
    const feesChart = await drawnChart(page, 'chart-fees');
    expect(feesChart.rows).toEqual(feeRows);
    expect(feesChart.label).toBe(`Platform fees: ${feeRows.map(([label, amount]) => `${label} ${amount}`).join(', ')}`);

    /** Installed, Skipped, Failed, Pending (able to update) and Unable, as the API counts a push's devices. */
    const adoptionRows = (devices: Record<string, number>) => [
      ['Installed', String(devices.installed)],
      ['Skipped', String(devices.skipped)],
      ['Failed', String(devices.failed)],
      ['Pending', String(devices.pending! - devices.unable!)],
      ['Unable (old engine)', String(devices.unable)],
    ];
    const appPush = (await call('GET', `/v1/apps/${app.id}/push-update`, { apiKey: dev.apiKey })).body.push;
    expect(appPush.devices).toMatchObject({ installed: 2, skipped: 1, failed: 1 });
    await visit(page, `#/apps/${app.id}/updates`, '#adoption-chart');
    const adoption = await drawnChart(page, 'adoption-chart');
    expect(adoption.rows).toEqual(adoptionRows(appPush.devices));
    expect(adoption.label).toMatch(/^Adoption of the push: \d+ devices: Installed 2 \(\d+%\), Skipped 1 \(\d+%\), Failed 1 \(\d+%\)/);
    const licensePush = (await call('GET', `/v1/licenses/${license.license_id}/push-update`, { apiKey: dev.apiKey })).body.push;
    await visit(page, `#/licenses/${license.license_id}`, '#license-adoption-chart');
    expect((await drawnChart(page, 'license-adoption-chart')).rows).toEqual(adoptionRows(licensePush.devices));
    await expectNoErrors(portal);
  });

  it('says on the Sales and Updates pages what the developer’s plan allows: a Pro developer is not told to get Pro', async () => {
    const pro = await proDeveloperWithApp();
    const free = await registerDeveloper(call);
    const freeApp = await createApp(call, free);
    for (const [dev, app, plan] of [
      [pro.dev, pro.app, 'pro'],
      [free, freeApp, 'free'],
    ] as const) {
      const portal = await openAs(dev, `#/apps/${app.id}/sales`, '#webhook-status');
      const sales = (await portal.page.textContent('#tab-sales')) ?? '';
      const types = await portal.page.$$eval('#batch-type option', (options) => options.map((o) => (o as HTMLOptionElement).value));
      if (plan === 'pro') {
        expect(sales).not.toMatch(/Pro plan/);
        expect(types).toEqual(['perpetual', 'trial', 'subscription']);
      } else {
        expect(await portal.page.textContent('#webhook-status')).toMatch(/Needs the Pro plan/);
        expect(await portal.page.textContent('#batch-plan-hint')).toMatch(/trial/);
        expect(types).toEqual(['trial']);
      }
      // Pushing updates needs Pro too: said to the free developer only.
      await visit(portal.page, `#/apps/${app.id}/updates`, '#push-form');
      expect(await portal.page.textContent('#push-form')).toMatch(plan === 'pro' ? /^(?!.*Pro plan)/s : /Needs the Pro plan/);
      await expectNoErrors(portal);
    }
  });

  it('creates a redemption batch with every field the API takes, as the API then answers it', async () => {
    const { dev, app } = await proDeveloperWithApp();
    const portal = await openAs(dev, `#/apps/${app.id}/sales`, '#batch-form');
    const { page } = portal;
    const codesExpire = new Date(Date.now() + 30 * 86_400_000);
    codesExpire.setSeconds(0, 0);
    const local = new Date(codesExpire.getTime() - codesExpire.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await page.fill('#batch-channel', 'appsumo');
    await page.fill('#batch-quantity', '3');
    await page.fill('#batch-label', 'Launch week');
    await page.selectOption('#batch-type', 'subscription');
    await page.fill('#batch-expiry', '365');
    await page.fill('#batch-devices', '4');
    await page.fill('#batch-codes-expire', local);
    await page.fill('#batch-features', '{ "tier": "pro", "beta": true }');
    await page.click('#batch-meter-add');
    await page.fill('#batch-meter-rows .meter-row:nth-child(1) .meter-feature', 'export');
    await page.fill('#batch-meter-rows .meter-row:nth-child(1) .meter-uses', '50');
    await page.selectOption('#batch-meter-rows .meter-row:nth-child(1) .meter-period', 'year');
    await page.click('#batch-submit');
    await page.waitForSelector('#batch-download');
    const batches = (await call('GET', `/v1/apps/${app.id}/redemption-batches`, { apiKey: dev.apiKey })).body as Record<string, unknown>[];
    expect(batches).toHaveLength(1);
    expect(batches[0]).toMatchObject({
      channel: 'appsumo',
      quantity: 3,
      label: 'Launch week',
      license_type: 'subscription',
      license_expiry_days: 365,
      device_limit: 4,
      seat_model: 'node_locked',
      features: { tier: 'pro', beta: true },
      meters: { export: { uses_per_period: 50, period: 'year' } },
    });
    expect(new Date(batches[0]!.codes_expire_at as string).getTime()).toBe(codesExpire.getTime());
    // Features that are not a JSON object are refused in place, and nothing is created.
    await page.fill('#batch-features', '["tier"]');
    await page.click('#batch-submit');
    await expect.poll(() => page.textContent('#batch-error')).toMatch(/JSON object/);
    expect((await call('GET', `/v1/apps/${app.id}/redemption-batches`, { apiKey: dev.apiKey })).body).toHaveLength(1);
    await expectNoErrors(portal);
  });

  it('creates a license with every field the API takes, as the API then answers it', async () => {
    const { dev, app } = await proDeveloperWithApp();
    const portal = await openAs(dev, `#/licenses?app_id=${app.id}`, '#new-license-form');
    const { page } = portal;
    await page.selectOption('#new-license-app', app.id);
    await page.selectOption('#new-license-type', 'subscription');
    await page.fill('#new-license-email', 'buyer@example.com');
    await page.selectOption('#new-license-seat-model', 'floating');
    await page.fill('#new-license-max-concurrent', '3');
    await page.fill('#new-license-lease-ttl', '30');
    await page.fill('#new-license-expiry', '90');
    await page.fill('#new-license-downloads', '7');
    await page.fill('#new-license-features', '{ "tier": "team" }');
    await page.click('#new-license-meter-add');
    await page.fill('#new-license-meter-rows .meter-row:nth-child(1) .meter-feature', 'render');
    await page.fill('#new-license-meter-rows .meter-row:nth-child(1) .meter-uses', '12');
    await page.selectOption('#new-license-meter-rows .meter-row:nth-child(1) .meter-period', 'day');
    await page.click('#new-license-submit');
    await page.waitForSelector('#new-license-key');
    const key = await page.textContent('#new-license-key');
    const listed = (await call('GET', `/v1/licenses?q=${key}`, { apiKey: dev.apiKey })).body as { license_id: string }[];
    const license = (await call('GET', `/v1/licenses/${listed[0]!.license_id}`, { apiKey: dev.apiKey })).body;
    expect(license).toMatchObject({
      license_key: key,
      app_id: app.id,
      license_type: 'subscription',
      email: 'buyer@example.com',
      seat_model: 'floating',
      max_concurrent: 3,
      lease_ttl_minutes: 30,
      download_limit: 7,
      features: { tier: 'team' },
      meters: { render: { uses_per_period: 12, period: 'day' } },
    });
    // Created and stamped in the same request: 90 days apart, to the day.
    expect(Math.round((new Date(license.expires_at).getTime() - new Date(license.created_at).getTime()) / 86_400_000)).toBe(90);
    // Node-locked, the device limit is sent instead of the floating seats.
    await page.selectOption('#new-license-seat-model', 'node_locked');
    await page.fill('#new-license-devices', '5');
    await page.fill('#new-license-features', '');
    await page.click('#new-license-submit');
    await expect.poll(() => page.textContent('#new-license-key')).not.toBe(key);
    const second = (await call('GET', `/v1/licenses?q=${await page.textContent('#new-license-key')}`, { apiKey: dev.apiKey })).body[0];
    expect(second).toMatchObject({ seat_model: 'node_locked', device_limit: 5, download_limit: 7, features: {} });
    await expectNoErrors(portal);
  });

  it('saves an app’s sold seats and meters from its settings, as the API then answers them', async () => {
    const { dev, app } = await proDeveloperWithApp();
    const portal = await openAs(dev, `#/apps/${app.id}/settings`, '#app-settings-form');
    const { page } = portal;
    await page.selectOption('#app-sold-seat-model', 'floating');
    await page.fill('#app-sold-max-concurrent', '4');
    await page.fill('#app-sold-lease-ttl', '20');
    await page.click('#app-sold-meter-add');
    await page.fill('#app-sold-meter-rows .meter-row:nth-child(1) .meter-feature', 'export');
    await page.fill('#app-sold-meter-rows .meter-row:nth-child(1) .meter-uses', '100');
    await page.selectOption('#app-sold-meter-rows .meter-row:nth-child(1) .meter-period', 'month');
    await page.click('#app-settings-save');
    await expect.poll(() => page.textContent('#app-settings-notice')).toBe('Saved.');
    const saved = (await call('GET', `/v1/apps/${app.id}`, { apiKey: dev.apiKey })).body;
    expect(saved).toMatchObject({
      sold_seat_model: 'floating',
      sold_max_concurrent: 4,
      sold_lease_ttl_minutes: 20,
      sold_meters: { export: { uses_per_period: 100, period: 'month' } },
    });
    await expectNoErrors(portal);
  });

  it('works from the keyboard alone: sign-in, a visible focus, and a confirmation that takes the focus and gives it back', async () => {
    const { dev, license } = await proDeveloperWithApp();
    const portal = await openPortal();
    const { page } = portal;
    const focused = () => page.evaluate(() => ({ id: document.activeElement?.id ?? '', text: document.activeElement?.textContent ?? '' }));
    /** Tabs forward until the element `id` has the focus (bounded: the page has fewer stops). */
    const tabTo = async (id: string) => {
      for (let i = 0; i < 80 && (await focused()).id !== id; i++) await page.keyboard.press('Tab');
      expect((await focused()).id).toBe(id);
    };
    await page.goto(`${server.url}/portal`);
    await page.waitForSelector('#signin-form');
    await tabTo('signin-email');
    await page.keyboard.type(dev.email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(dev.password);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#nav:not([hidden])');
    await visit(page, `#/licenses/${license.license_id}`, '#revoke-license');
    await tabTo('revoke-license');
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
    expect(outline).not.toBe('none');
    // The question takes the focus on No; No gives it back to the button, and nothing was revoked.
    await page.keyboard.press('Enter');
    expect((await focused()).text).toBe('No');
    await page.keyboard.press('Enter');
    expect((await focused()).id).toBe('revoke-license');
    expect((await call('GET', `/v1/licenses/${license.license_id}`, { apiKey: dev.apiKey })).body.status).toBe('ACTIVE');
    // Yes (Shift+Tab from No) revokes it.
    await page.keyboard.press('Enter');
    await page.keyboard.press('Shift+Tab');
    expect((await focused()).text).toBe('Yes');
    await page.keyboard.press('Enter');
    await expect.poll(async () => (await call('GET', `/v1/licenses/${license.license_id}`, { apiKey: dev.apiKey })).body.status).toBe('REVOKED');
    await expectNoErrors(portal);
  });
});
