import { afterAll } from 'vitest';
import { createLicenseClient, type LicenseClient, type LicenseClientOptions } from '../../../runtime-sdk/index.js';
import { fakeMachine, tempDir, type FakeMachine } from './fake-machine.js';

/** One installation of an app: a machine and its cache folder. */
export interface Install {
  machine: FakeMachine;
  cacheDir: string;
  app: { id: string; fingerprint_salt: string };
}

/**
 * Installations of apps on fake machines, each started as a client of `base` (the authority's URL
 * and keys; no start-up refresh, no delay, no retry unless told); every client started is disposed
 * after the file's tests.
 */
export function installations(base: Pick<LicenseClientOptions, 'serverUrl' | 'publicKeys'> & Partial<LicenseClientOptions>) {
  const clients: LicenseClient[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.dispose()));
  });
  return {
    install: (name: string, app: Install['app']): Install => ({ machine: fakeMachine(name), cacheDir: tempDir(), app }),

    /** Starts the app of installation `at`; `overrides` for a start with other options. */
    async start(at: Install, overrides: Partial<LicenseClientOptions> = {}): Promise<LicenseClient> {
      const license = await createLicenseClient({
        appVersion: '2.3.0',
        refreshOnStart: false,
        startupDelayMs: 0,
        retryLimit: 0,
        ...base,
        appId: at.app.id,
        fingerprintSalt: at.app.fingerprint_salt,
        cacheDir: at.cacheDir,
        platform: at.machine.platform,
        fingerprintProbes: at.machine.probes,
        ...overrides,
      });
      clients.push(license);
      return license;
    },
  };
}
