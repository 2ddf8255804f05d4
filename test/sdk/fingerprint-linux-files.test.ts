/**
 * Issue 25 item 2: on Linux x86 the fingerprint's components are read from kernel files instead of
 * systeminformation's tools. An installation activated by an earlier SDK (systeminformation's
 * probes) must keep its fingerprint, hence its seat, after the upgrade. Against the real server.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLicenseClient, type LicenseClient, type LicenseClientOptions } from '../../runtime-sdk/index.js';
import { normalizeComponent } from '../../runtime-sdk/fingerprint/canonical.js';
import { hardwareProbes, importSystemInformation, readComponents, type Components } from '../../runtime-sdk/fingerprint/components.js';
import { computeFingerprint } from '../../runtime-sdk/fingerprint/index.js';
import { readsHardwareFiles } from '../../runtime-sdk/fingerprint/linux-probes.js';
import { hostPlatform } from '../../runtime-sdk/platform.js';
import { createLicense } from '../support/fixtures.js';
import { tempDir } from './support/fake-machine.js';
import { startRealAuthority } from './support/real-authority.js';

const SALT = 'salt-linux-files-5b1e';
// The probes earlier versions ran on this machine: systeminformation's, which the files replace on Linux x86 only.
const systemInformationPlatform = { ...hostPlatform, arch: 'systeminformation' };
const normalized = (components: Components) => Object.fromEntries(Object.entries(components).map(([name, value]) => [name, normalizeComponent(value)]));

describe.runIf(readsHardwareFiles(hostPlatform))('Linux: components read from files, without systeminformation', () => {
  it('give this machine the components and the fingerprint systeminformation gave', async () => {
    const fromFiles = await readComponents(await hardwareProbes(hostPlatform, importSystemInformation, () => {}), 10_000);
    const earlierProbes = await hardwareProbes(systemInformationPlatform, importSystemInformation, () => {});
    const fromSystemInformation = await readComponents(earlierProbes, 30_000);
    expect(fromFiles.complete && fromSystemInformation.complete).toBe(true);
    expect(normalized(fromFiles.components)).toEqual(normalized(fromSystemInformation.components));

    const upgraded = await computeFingerprint({ salt: SALT, platform: hostPlatform, timeoutMs: 10_000 });
    const activatedEarlier = await computeFingerprint({ salt: SALT, platform: hostPlatform, timeoutMs: 30_000, probes: earlierProbes });
    expect(upgraded.hash).toBe(activatedEarlier.hash);
    expect(upgraded.componentHashes).toEqual(activatedEarlier.componentHashes);
  });
});

describe.runIf(readsHardwareFiles(hostPlatform))('an installation activated with systeminformation, after the upgrade', async () => {
  const { call, dev, app, sdkOptions } = await startRealAuthority();
  const base: LicenseClientOptions = { ...sdkOptions, cacheDir: tempDir() };
  const clients: LicenseClient[] = [];
  const client = async (options: Partial<LicenseClientOptions> = {}) => {
    const license = await createLicenseClient({ ...base, ...options });
    clients.push(license);
    return license;
  };
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.dispose()));
  });

  it('keeps its seat: its cache opens, its token refreshes, and a new installation on the machine is the same device', async () => {
    const created = await createLicense(call, dev, { app_id: app.id, license_type: 'perpetual', device_limit: 1 });
    const earlierProbes = await hardwareProbes(systemInformationPlatform, importSystemInformation, () => {});
    const earlier = await client({ fingerprintProbes: earlierProbes });
    expect((await earlier.activate(created.license_key)).state).toBe('valid');
    await earlier.dispose();

    const upgraded = await client();
    expect((await upgraded.check()).state).toBe('valid');
    expect((await upgraded.refresh()).state).toBe('valid');
    // The one seat is this machine's: another installation of the upgraded SDK is let in as the same device.
    const secondInstallation = await client({ cacheDir: tempDir() });
    expect((await secondInstallation.activate(created.license_key)).state).toBe('valid');
    const detail = await call('GET', `/v1/licenses/${created.license_id}`, { apiKey: dev.apiKey });
    expect(detail.body.devices).toHaveLength(1);
  });
});
