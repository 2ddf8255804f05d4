import { describe, expect, it } from 'vitest';
import { normalizeComponent } from '../../runtime-sdk/fingerprint/canonical.js';
import { hardwareProbes, importSystemInformation, readComponents, type Components } from '../../runtime-sdk/fingerprint/components.js';
import { computeFingerprint } from '../../runtime-sdk/fingerprint/index.js';
import { readsHardwareFiles } from '../../runtime-sdk/fingerprint/linux-probes.js';
import { hostPlatform } from '../../runtime-sdk/platform.js';

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
