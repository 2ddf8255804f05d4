import { expect } from 'vitest';
import { createApp, createLicense, randomFingerprint, registerDeveloper, setPlan } from '../support/fixtures.js';
import type { Call } from '../support/http.js';
import type { TestServer } from '../support/server.js';
import { activatedDevice, licensePushPath, pushApp, readyBuild, report, type Device } from '../updates/support.js';
import type { Owner } from '../builds/support.js';

const DAY_MS = 86_400_000;

/**
 * A Pro developer whose portal has something in every table and every chart: an app for three
 * platforms with two READY builds and a push of the newer one that devices installed, skipped and
 * failed; a license with meters, its own push of the older build, devices activated over three
 * days and one deactivated by the app; a redemption batch with a code redeemed (a sale, so a fee).
 * Long names and addresses on purpose: they must wrap on a phone. The developer's own calls come
 * first, two days back: their access token has expired by the end (the API key still works).
 */
export async function seededPortal(server: TestServer, call: Call) {
  // The developer's calls two days ago, then a day of activations each day up to today: the clock
  // ends where it began, for the file's other tests.
  server.clock.advance(-2 * DAY_MS);
  const dev = await registerDeveloper(call, { company_name: 'Northwind Tools, Makers of Remarkably Long Company Names Ltd' });
  await setPlan(call, server.adminToken, dev.id, 'pro');
  const app = await createApp(call, dev, { name: 'Notes Pro with a name long enough to wrap on a phone', platforms: ['linux-x64', 'win-x64', 'mac-arm64'] });
  const o: Owner = { server, call, dev, app };
  const license = await createLicense(call, dev, {
    app_id: app.id,
    email: 'someone.with.a.long.address@example.com',
    device_limit: 10,
    features: { tier: 'pro' },
    meters: { export: { uses_per_period: 50, period: 'month' } },
  });
  const older = await readyBuild(o, { platform: 'linux-x64', version: '1.0.0' });
  const newer = await readyBuild(o, { platform: 'linux-x64', version: '1.1.0' });
  await pushApp(o, { target_build_id: newer.id, release_notes: 'Faster sync and fewer bugs' });
  const batch = await call('POST', `/v1/apps/${app.id}/redemption-batches`, { token: dev.accessToken, body: { channel: 'appsumo', quantity: 3, label: 'Launch week' } });
  expect(batch.status, JSON.stringify(batch.body)).toBe(201);
  const redeemed = await call('POST', '/v1/public/redeem', { body: { code: batch.body.codes[0] } });
  expect(redeemed.status, JSON.stringify(redeemed.body)).toBeLessThan(300);

  // Devices of another license of the app report on the app's push; the page's license has a push of its own.
  const buyer = await createLicense(call, dev, { app_id: app.id, email: 'buyer@example.com', device_limit: 10 });
  const reporting: Device[] = [];
  for (let i = 0; i < 5; i++) reporting.push(await activatedDevice(o, buyer));
  for (const [device, event, details] of [
    [reporting[0]!, 'installed', {}],
    [reporting[1]!, 'installed', {}],
    [reporting[2]!, 'skipped', {}],
    [reporting[3]!, 'failed', { reason: 'disk_failed' }],
  ] as const) {
    const reported = await report(o, device, event, newer.id, details);
    expect(reported.status, JSON.stringify(reported.body)).toBe(204);
  }
  const licensePush = await call('POST', licensePushPath(license.license_id), { token: dev.accessToken, body: { target_build_id: older.id } });
  expect(licensePush.status, JSON.stringify(licensePush.body)).toBe(200);

  // Activations on three days: 2, then 3, then 1 (today), and one of them deactivated from the app.
  for (const [day, count] of [2, 3, 1].entries()) {
    if (day > 0) server.clock.advance(DAY_MS);
    for (let i = 0; i < count; i++) await activatedDevice(o, license);
  }
  const activation = await call('POST', '/v1/licenses/activate', { body: { license_key: license.license_key, device_fingerprint: randomFingerprint() } });
  expect(activation.status, JSON.stringify(activation.body)).toBe(200);
  const deactivated = await call('POST', '/v1/licenses/deactivate', { body: { token: activation.body.token } });
  expect(deactivated.status, JSON.stringify(deactivated.body)).toBe(200);
  return { dev, app, license, builds: [older, newer] };
}
