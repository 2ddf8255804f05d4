import { randomBytes, randomInt } from 'node:crypto';
import { ENGINE_VERSION } from '../../runtime-sdk/engine/version.js';
import { defineBench, expectStatus } from './lib.js';
import { seedApp, seedDeveloper, seedLicense, seedProPlan, seedReadyBuild } from './seed.js';

/** Checks spread over many licenses and devices, as in the field. */
const LICENSES = 100;
const DEVICES_PER_LICENSE = 5;

interface Device {
  license_key: string;
  device_fingerprint: string;
}

/**
 * Issue 6: an update check with a push active, every device offered the build: the license, the
 * check counted in the license's limit, the device's launch, the push and its build in one
 * statement, a signed download link and one Ed25519 signature of the manifest. The baseline runs
 * one statement of the same reads and writes (no limit) and signs once.
 */
export default defineBench({
  title: 'Update checks with a push active, against node:http doing the same statement with pg and one Ed25519 signature',
  async run(ctx) {
    const latchkey = await ctx.startLatchkey();
    const { call } = latchkey;
    const dev = await seedDeveloper(call);
    await seedProPlan(call, latchkey.adminToken, dev);
    const app = await seedApp(call, dev, 'Bench Updates App');
    const build = await seedReadyBuild(call, dev, app.id, '2.0.0');
    const devices: Device[] = (
      await Promise.all(
        Array.from({ length: LICENSES }, async (_, i) => {
          const { license_key } = await seedLicense(call, dev, { app_id: app.id, email: `buyer${i}@example.com`, device_limit: DEVICES_PER_LICENSE });
          return Promise.all(
            Array.from({ length: DEVICES_PER_LICENSE }, async () => {
              const device = { license_key, device_fingerprint: randomBytes(32).toString('hex') };
              const body = { ...device, build_id: null, platform: 'linux-x64', engine_version: ENGINE_VERSION };
              expectStatus(await call('POST', '/v1/licenses/activate', { body }), 200, 'activate');
              return device;
            }),
          );
        }),
      )
    ).flat();
    const push = { target_build_id: build.id, release_notes: 'Faster sync, fewer bugs.' };
    expectStatus(await call('POST', `/v1/apps/${app.id}/push-update`, { apiKey: dev.apiKey, body: push }), 200, 'push');
    const baseline = await ctx.startBaseline('updates-check');

    const name = 'update check (push active)';
    const request = {
      method: 'POST' as const,
      path: '/v1/updates/check',
      bodyPerRequest: () => ({
        ...devices[randomInt(devices.length)]!,
        app_id: app.id,
        build_id: null,
        version: '1.0.0',
        platform: 'linux-x64',
        engine_version: ENGINE_VERSION,
      }),
    };
    await ctx.measureHotPath(name, [latchkey, baseline], request, 'runtime');
  },
});
