import { createLicenseClient, type LicenseClient, type LicenseClientOptions } from '../../../runtime-sdk/index.js';
import type { FakeAuthority } from './fake-authority.js';
import type { FakeClock } from './fake-clock.js';
import type { FakeMachine } from './fake-machine.js';

export const SALT = 'fp-salt-6d1e0b7c';

/** A client for `machine`, talking to `authority`, with no background refresh unless asked for. */
export function clientOn(
  machine: FakeMachine,
  authority: FakeAuthority,
  clock: FakeClock,
  cacheDir: string,
  overrides: Partial<LicenseClientOptions> = {},
): Promise<LicenseClient> {
  return createLicenseClient({
    appId: authority.appId,
    serverUrl: authority.url,
    publicKeys: authority.publicKeys,
    fingerprintSalt: SALT,
    appVersion: '1.4.2',
    cacheDir,
    clock,
    platform: machine.platform,
    fingerprintProbes: machine.probes,
    refreshOnStart: false,
    startupDelayMs: 0,
    refreshIntervalMs: 3_600_000,
    retryLimit: 0,
    retryBaseDelayMs: 5,
    requestTimeoutMs: 2_000,
    // Never the developer's own keyring: tests that want an OS key store set up a stand-in and ask for it.
    osKeyStore: false,
    ...overrides,
  });
}
