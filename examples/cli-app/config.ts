/**
 * What the vendor bakes into the app. A real app compiles these in; the example reads them from the
 * environment so it can run against any authority.
 */
import { readFileSync } from 'node:fs';
import type { LicenseClientOptions } from '@latchkey/runtime-sdk';

export const APP_VERSION = '1.0.0';

export function licenseConfig(env: NodeJS.ProcessEnv = process.env): Pick<LicenseClientOptions, 'appId' | 'serverUrl' | 'publicKeys' | 'fingerprintSalt' | 'cacheDir'> {
  const required = (name: string): string => {
    const value = env[name];
    if (!value) throw new Error(`${name} is not set (see examples/cli-app/README.md)`);
    return value;
  };
  // The JWK Set itself, or the path of a file holding it (saved from GET /v1/public/keys).
  const keys = required('LATCHKEY_PUBLIC_KEYS');
  return {
    appId: required('LATCHKEY_APP_ID'),
    serverUrl: required('LATCHKEY_SERVER_URL'),
    fingerprintSalt: required('LATCHKEY_FINGERPRINT_SALT'),
    publicKeys: JSON.parse(keys.trimStart().startsWith('{') ? keys : readFileSync(keys, 'utf8')),
    ...(env.LATCHKEY_CACHE_DIR ? { cacheDir: env.LATCHKEY_CACHE_DIR } : {}),
  };
}
