import { describe, expect, it } from 'vitest';
import { createLicenseClient, LicenseError, type LicenseClientOptions } from '../../runtime-sdk/index.js';
import { appDataDirFor, platformLabel } from '../../runtime-sdk/platform.js';
import { TestSigner } from './support/authority-keys.js';

const valid: LicenseClientOptions = {
  appId: 'app_1',
  serverUrl: 'https://licensing.example.com',
  publicKeys: { keys: [new TestSigner().publicJwk] },
  fingerprintSalt: 'salt',
  appVersion: '1.2.3',
};

describe('options', () => {
  it.each([
    ['no app id', { appId: '' }, 'appId'],
    ['a server URL that is not http(s)', { serverUrl: 'ftp://example.com' }, 'serverUrl'],
    ['no keys', { publicKeys: { keys: [] } }, 'publicKeys'],
    ['an RSA key', { publicKeys: [{ kty: 'RSA', kid: 'r1', n: 'x', e: 'AQAB' }] }, 'publicKeys'],
    ['a key of the wrong length', { publicKeys: [{ kty: 'OKP', crv: 'Ed25519', kid: 'k', x: 'AAAA' }] }, 'publicKeys'],
    ['no salt', { fingerprintSalt: ' ' }, 'fingerprintSalt'],
    ['a version the authority would refuse', { appVersion: '1.0 beta' }, 'appVersion'],
    ['a negative timeout', { requestTimeoutMs: -1 }, 'requestTimeoutMs'],
    ['a timeout that is not a number', { refreshIntervalMs: '3600000' }, 'refreshIntervalMs'],
    // Past 2^31 - 1 ms Node's timers fire after 1 ms: a refresh every millisecond, a request timed out at once.
    ['an interval longer than a timer can wait', { refreshIntervalMs: 30 * 86_400_000 }, 'refreshIntervalMs'],
    ['a timeout longer than a timer can wait', { requestTimeoutMs: 2 ** 31 }, 'requestTimeoutMs'],
    ['an empty build id', { buildId: '' }, 'buildId'],
    ['a logger without warn', { logger: { info: () => {} } }, 'logger'],
    ['an unknown memory protection', { memoryProtection: 'sodium' }, 'memoryProtection'],
    ['a key store flag that is not a boolean', { osKeyStore: 'yes' }, 'osKeyStore'],
    ['a loader that is not a function', { loadSodium: 'sodium-native' }, 'loadSodium'],
    ['a probe that is not a function', { fingerprintProbes: ['system.uuid'] }, 'fingerprintProbes'],
  ])('refuses %s with INVALID_OPTIONS naming the option', async (_label, change, option) => {
    const err = await createLicenseClient({ ...valid, ...(change as Partial<LicenseClientOptions>) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LicenseError);
    expect(err).toMatchObject({ code: 'INVALID_OPTIONS', retryable: false });
    expect((err as Error).message).toMatch(new RegExp(`^${option}[ .]`));
  });

  it('refuses missing options with INVALID_OPTIONS', async () => {
    await expect(createLicenseClient(undefined as unknown as LicenseClientOptions)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
  });
});

describe('platform seam', () => {
  it.each([
    ['linux', {}, '/home/ana/.local/share/latchkey/app_1'],
    ['linux', { XDG_DATA_HOME: '/data/ana' }, '/data/ana/latchkey/app_1'],
    ['darwin', {}, '/home/ana/Library/Application Support/Latchkey/app_1'],
    ['win32', { LOCALAPPDATA: 'C:\\Users\\ana\\AppData\\Local' }, 'C:\\Users\\ana\\AppData\\Local\\Latchkey\\app_1'],
  ] as const)('keeps the cache in the per-user app-data folder on %s', (os, env, expected) => {
    expect(appDataDirFor(os, env, '/home/ana', 'app_1')).toBe(expected);
  });

  it('never lets an app id escape the folder', () => {
    expect(appDataDirFor('linux', {}, '/home/ana', '../../etc')).toBe('/home/ana/.local/share/latchkey/.._.._etc');
    expect(appDataDirFor('linux', {}, '/home/ana', '..')).toBe('/home/ana/.local/share/latchkey/_');
  });

  it.each([
    ['linux', 'x64', 'linux-x64'],
    ['win32', 'arm64', 'win-arm64'],
    ['darwin', 'arm64', 'mac-arm64'],
    ['freebsd', 'x64', undefined],
    ['linux', 'ia32', undefined],
  ] as const)('labels %s %s as the authority does', (name, arch, label) => {
    expect(platformLabel({ name, arch })).toBe(label);
  });
});
