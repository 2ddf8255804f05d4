/**
 * Issue 22 item 1, the SDK's half: `license.deactivate()` against the real authority (Koa +
 * PostgreSQL). The seat is freed for another computer, the cache file and the secrets are gone, the
 * next start is unlicensed; a failure (no network, the quota spent) keeps everything as it was.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createApp, createLicense } from '../support/fixtures.js';
import { licenseErrorOf } from './support/license-error.js';
import { installations, type Install } from './support/installations.js';
import { startRealAuthority } from './support/real-authority.js';

const { server, call, dev, app, publicKeys } = await startRealAuthority();
const installs = installations({ serverUrl: server.url, publicKeys });
const { start } = installs;
const install = (name: string, forApp = app) => installs.install(name, forApp);
const cacheFileOf = (at: Install) => path.join(at.cacheDir, 'license.cache');

async function historyOf(licenseId: string) {
  const res = await call('GET', `/v1/licenses/${licenseId}/deactivations`, { apiKey: dev.apiKey });
  expect(res.status).toBe(200);
  return res.body as { source: string }[];
}

describe('license.deactivate()', () => {
  it('frees the seat for another computer, wipes the cache and the secrets, and the next start is unlicensed', async () => {
    const created = await createLicense(call, dev, { app_id: app.id, device_limit: 1 });
    const first = install('DA1');
    const second = install('DA2');
    const license = await start(first);
    expect((await license.activate(created.license_key)).state).toBe('valid');
    expect(fs.existsSync(cacheFileOf(first))).toBe(true);
    const other = await start(second);
    expect((await licenseErrorOf(other.activate(created.license_key))).code).toBe('DEVICE_LIMIT_REACHED');

    const result = await license.deactivate();
    expect(result).toMatchObject({ deactivated: true, deactivationsRemaining: 2, status: { state: 'unlicensed', reason: 'deactivated', usable: false, licenseId: null } });
    expect(result.nextDeactivationAvailableAt).toBeInstanceOf(Date);
    expect(await license.check()).toMatchObject({ state: 'unlicensed', reason: 'deactivated', features: {} });
    expect(fs.existsSync(cacheFileOf(first))).toBe(false);
    // The secrets are gone from memory too: nothing is left to refresh with.
    expect((await licenseErrorOf(license.refresh())).code).toBe('NOT_ACTIVATED');
    expect((await licenseErrorOf(license.deactivate())).code).toBe('NOT_ACTIVATED');

    // The freed seat goes to the other computer, within the limit of 1.
    expect((await other.activate(created.license_key)).state).toBe('valid');
    expect(await historyOf(created.license_id)).toEqual([expect.objectContaining({ source: 'app' })]);

    await license.dispose();
    const restarted = await start(first);
    expect(await restarted.check()).toMatchObject({ state: 'unlicensed', reason: 'not_activated' });
  });

  /**
   * Two running copies of the app on one computer, both licensed from one cache; the first
   * deactivates. `later()` moves their clock past the high-water mark's save step, so the second
   * copy's next check and its exit are routine saves of the license it still holds.
   */
  async function twoCopiesOneDeactivating(name: string) {
    const created = await createLicense(call, dev, { app_id: app.id, device_limit: 1 });
    const at = install(name);
    let offsetMs = 0;
    const clock = { now: () => new Date(Date.now() + offsetMs) };
    const first = await start(at, { clock });
    expect((await first.activate(created.license_key)).state).toBe('valid');
    const second = await start(at, { clock });
    expect((await second.check()).state).toBe('valid');
    expect((await first.deactivate()).deactivated).toBe(true);
    const later = () => void (offsetMs = 2 * 60_000);
    return { created, at, first, second, later };
  }

  it('a second running copy of the app does not write back the cache the first one removed by deactivating', async () => {
    const { at, second, later } = await twoCopiesOneDeactivating('DA3');
    expect(fs.existsSync(cacheFileOf(at))).toBe(false);
    later();
    await second.check();
    await second.dispose();
    expect(fs.existsSync(cacheFileOf(at))).toBe(false);
    const offline = await start(at, { serverUrl: 'http://127.0.0.1:9' });
    expect(await offline.check()).toMatchObject({ state: 'unlicensed', usable: false });
  });

  it('nor overwrites, with the license it still holds, the cache the first copy wrote after activating again', async () => {
    const { created, at, first, second, later } = await twoCopiesOneDeactivating('DA4');
    expect((await first.activate(created.license_key)).state).toBe('valid');
    const rewritten = fs.readFileSync(cacheFileOf(at));
    later();
    await second.check();
    await second.dispose();
    expect(fs.readFileSync(cacheFileOf(at)).equals(rewritten)).toBe(true);
  });

  it('throws OFFLINE without the network and keeps the activation, its cache and its seat', async () => {
    const created = await createLicense(call, dev, { app_id: app.id, device_limit: 1 });
    const at = install('DB1');
    const online = await start(at);
    expect((await online.activate(created.license_key)).state).toBe('valid');
    await online.dispose();

    // The same installation started where the authority cannot be reached (nothing listens on port 1).
    const offline = await start(at, { serverUrl: 'http://127.0.0.1:1' });
    expect((await offline.check()).state).toBe('valid');
    const err = await licenseErrorOf(offline.deactivate());
    expect(err.code).toBe('OFFLINE');
    expect(err.retryable).toBe(true);
    expect((await offline.check()).state).toBe('valid');
    expect(fs.existsSync(cacheFileOf(at))).toBe(true);
    await offline.dispose();

    // Back online, the installation still holds its seat and refreshes.
    const back = await start(at);
    expect((await back.refresh()).state).toBe('valid');
    expect(await historyOf(created.license_id)).toEqual([]);
  });

  it("throws DEACTIVATION_LIMIT_REACHED past the app's quota and keeps everything", async () => {
    const strict = await createApp(call, dev, { name: 'Strict Quota', app_deactivations_per_30_days: 1 });
    const created = await createLicense(call, dev, { app_id: strict.id, device_limit: 2 });
    const a = install('DC1', strict);
    const b = install('DC2', strict);
    const first = await start(a);
    const second = await start(b);
    expect((await first.activate(created.license_key)).state).toBe('valid');
    expect((await second.activate(created.license_key)).state).toBe('valid');

    expect(await first.deactivate()).toMatchObject({ deactivated: true, deactivationsRemaining: 0 });
    const err = await licenseErrorOf(second.deactivate());
    expect(err.code).toBe('DEACTIVATION_LIMIT_REACHED');
    expect(err.extra.status).toBe(429);
    expect(err.extra.retryAfterSeconds).toBeGreaterThan(0);
    expect(err.userMessage).toMatch(/deactivated on computers too often/);
    expect((await second.check()).state).toBe('valid');
    expect(fs.existsSync(cacheFileOf(b))).toBe(true);
    // The seat is still its own: the authority refreshes it.
    expect((await second.refresh()).state).toBe('valid');
  });

  it('wipes an installation the developer already reset, which the authority answers as not counted', async () => {
    const created = await createLicense(call, dev, { app_id: app.id, device_limit: 1 });
    const at = install('DD1');
    const license = await start(at);
    expect((await license.activate(created.license_key)).state).toBe('valid');
    expect((await call('POST', `/v1/licenses/${created.license_id}/reset-devices`, { apiKey: dev.apiKey })).status).toBe(200);

    expect(await license.deactivate()).toMatchObject({ deactivated: false, deactivationsRemaining: 3, status: { state: 'unlicensed', reason: 'deactivated' } });
    expect(fs.existsSync(cacheFileOf(at))).toBe(false);
    expect((await historyOf(created.license_id)).map((d) => d.source)).toEqual(['developer']);
  });
});
