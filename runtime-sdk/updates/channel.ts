/**
 * What the updater gets from the license client: the non-secret settings they share, who this
 * installation is (license id, device fingerprint hash), and the authority's update calls made
 * with the license key, which stays in the client's protected memory and is never handed out.
 */
import type { AuthorityClient } from '../authority/authority-client.js';
import type { ResolvedOptions } from '../options.js';
import type { UpdateCheckRequest, UpdateReportRequest } from '../protocol.js';
import type { LicenseVault } from '../token-store/license-vault.js';

export type UpdateSettings = Pick<
  ResolvedOptions,
  'appId' | 'publicKeys' | 'appVersion' | 'buildId' | 'engineVersion' | 'clock' | 'platform' | 'logger' | 'requestTimeoutMs' | 'retryLimit' | 'retryBaseDelayMs'
> & {
  /** The folder of the license cache: the updater's state and its download cache live beside it. */
  dataDir: string;
};

/** Who asks: the activated license and this device as the authority knows it. */
export interface UpdateIdentity {
  licenseId: string;
  device: string;
}

export type CheckBody = Omit<UpdateCheckRequest, 'license_key' | 'device_fingerprint' | 'app_id'>;
export type ReportBody = Omit<UpdateReportRequest, 'license_key' | 'device_fingerprint' | 'app_id'>;

export interface UpdateChannel {
  readonly settings: UpdateSettings;
  /** Undefined until this device is activated (no license key or no token). */
  identity(): UpdateIdentity | undefined;
  check(body: CheckBody): Promise<string | null>;
  report(body: ReportBody): Promise<void>;
}

export function createUpdateChannel(options: ResolvedOptions, dataDir: string, vault: LicenseVault, authority: AuthorityClient): UpdateChannel {
  const signedIn = <T>(call: (auth: { license_key: string; device_fingerprint: string; app_id: string }) => Promise<T>): Promise<T> => {
    const device = vault.fingerprint.hash;
    const request = vault.readLicenseKey((key) => call({ license_key: key, device_fingerprint: device, app_id: options.appId }));
    return request ?? Promise.reject(new Error('this device is not activated'));
  };
  return {
    settings: { ...options, dataDir },
    identity: () => (vault.claims && vault.hasLicenseKey ? { licenseId: vault.claims.sub, device: vault.fingerprint.hash } : undefined),
    check: (body) => signedIn((auth) => authority.checkUpdate({ ...auth, ...body })),
    report: (body) => signedIn((auth) => authority.reportUpdate({ ...auth, ...body })),
  };
}
