/**
 * A failed install end to end, against the real authority (Koa + PostgreSQL): the SDK's report
 * makes the device Failed in the push's view, the device is not asked again before its back-off,
 * and once it installs it counts as Installed instead.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLicenseClient, type LicenseClient, type LicenseClientOptions } from '../../../runtime-sdk/index.js';
import type { Platform } from '../../../runtime-sdk/platform.js';
import { createUpdater } from '../../../runtime-sdk/updates/index.js';
import type { Owner } from '../../builds/support.js';
import { createLicense } from '../../support/fixtures.js';
import { startTestServer, type TestServer } from '../../support/server.js';
import { proOwner, pushApp, readyBuild } from '../../updates/support.js';
import { FakeClock, HOUR } from '../support/fake-clock.js';
import { fakeMachine, tempDir } from '../support/fake-machine.js';
import { fakeProcess } from '../support/fake-process.js';
import { RulesFs } from '../support/rules-fs.js';
import { ScriptedPrompt, v1Content } from '../support/updater-harness.js';

let server: TestServer;
let o: Owner;
const clients: LicenseClient[] = [];
const dirs: string[] = [];
beforeAll(async () => {
  server = await startTestServer();
  o = await proOwner(server);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.dispose()));
  await server.close();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** The push's view, read with the developer's API key (the session token would expire as the clock moves). */
async function pushView(): Promise<{ devices: Record<string, number>; complete: boolean }> {
  const res = await o.call('GET', `/v1/apps/${o.app.id}/push-update`, { apiKey: o.dev.apiKey });
  expect(res.status).toBe(200);
  return res.body.push;
}
const devices = async () => (await pushView()).devices;

describe('a failed install, as the authority sees it', () => {
  it('is counted Failed, backs off, and turns Installed once an install succeeds', async () => {
    const installDir = tempDir('latchkey-install-');
    const cacheDir = tempDir('latchkey-data-');
    dirs.push(installDir, cacheDir);
    const appFile = path.join(installDir, 'notes');
    fs.writeFileSync(appFile, v1Content(true), { mode: 0o750 });
    const machine = fakeMachine('FIA');
    const proc = fakeProcess({ execPath: appFile, script: null, args: ['--open', 'notes.txt'], cwd: installDir });
    const platform: Platform = { ...machine.platform, name: 'linux', arch: 'x64', process: proc };
    // The app's clock follows the authority's, which the test moves.
    const clock = new FakeClock(server.clock.now().getTime());
    const options: LicenseClientOptions = {
      appId: o.app.id,
      serverUrl: server.url,
      publicKeys: (await o.call('GET', '/v1/public/keys')).body,
      fingerprintSalt: o.app.fingerprint_salt,
      appVersion: '1.0.0',
      cacheDir,
      clock,
      platform,
      fingerprintProbes: machine.probes,
      memoryProtection: 'masked',
      refreshOnStart: false,
      retryLimit: 0,
    };
    const launch = async (extra: Partial<LicenseClientOptions> = {}) => {
      const license = await createLicenseClient({ ...options, ...extra });
      clients.push(license);
      return license;
    };
    const created = await createLicense(o.call, o.dev, { app_id: o.app.id, license_type: 'perpetual' });
    await (await launch()).activate(created.license_key);
    const build = await readyBuild(o, { version: '2.0.0' });
    await pushApp(o, { target_build_id: build.id });
    clock.advance(server.clock.now().getTime() - clock.now().getTime());

    // The new version cannot be moved in: the swap is undone, v1 runs on, the failure is reported.
    const refusing = new RulesFs('linux').refuse('rename', (file) => file.includes('.new.'), 'EACCES', 1);
    const failing = createUpdater({ license: await launch(), prompt: new ScriptedPrompt(['install']), fs: refusing, sleep: async () => undefined });
    expect(await failing.checkInBackground()).toMatchObject({ status: 'failed', code: 'INSTALL_FAILED' });
    expect(fs.readFileSync(appFile, 'utf8')).toBe(v1Content(true));
    expect(await devices()).toMatchObject({ installed: 0, failed: 1, pending: 0 });
    expect((await pushView()).complete).toBe(false);

    // The next launch, at once: not asked, nothing fetched.
    const notYet = new ScriptedPrompt(['install']);
    expect(await createUpdater({ license: await launch(), prompt: notYet }).checkInBackground()).toMatchObject({ status: 'backed-off' });
    expect(notYet.offers).toEqual([]);

    // An hour later it is asked again, and this time the install goes through.
    server.clock.advance(HOUR);
    clock.advance(HOUR);
    const retry = new ScriptedPrompt(['install']);
    expect(await createUpdater({ license: await launch(), prompt: retry, sleep: async () => undefined }).checkInBackground()).toMatchObject({ status: 'restarting' });
    expect(retry.offers).toHaveLength(1);
    expect(fs.readFileSync(appFile, 'utf8')).toMatch(/^package \d+$/);

    // The new version's first start reports it installed: the failure is replaced.
    expect(await createUpdater({ license: await launch({ buildId: build.id, appVersion: '2.0.0' }) }).start()).toBe('installed');
    expect(await devices()).toMatchObject({ installed: 1, failed: 0, pending: 0 });
  });
});
