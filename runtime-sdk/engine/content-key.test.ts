import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateDeviceKeyPair, unwrapContentKey, wrapContentKey } from './content-key.js';
import { openVault, sealVault } from './vault.js';

const context = { buildId: 'bld_1', licenseId: 'lic_1', device: 'a'.repeat(64) };

describe('a content key wrapped for a device', () => {
  const key = randomBytes(32);
  const device = generateDeviceKeyPair();
  const wrapped = wrapContentKey(key, device.x, context);

  it('opens with that device key, for that build, license and device', () => {
    expect(unwrapContentKey(wrapped, device, context)).toEqual(key);
    expect(wrapped.ct).not.toContain(key.toString('base64url'));
  });

  it.each([
    ['another device key', { device: generateDeviceKeyPair() }],
    ['another build', { context: { ...context, buildId: 'bld_2' } }],
    ['another license', { context: { ...context, licenseId: 'lic_2' } }],
    ['another fingerprint', { context: { ...context, device: 'b'.repeat(64) } }],
  ])('does not open with %s', (_name, change: { device?: ReturnType<typeof generateDeviceKeyPair>; context?: typeof context }) => {
    expect(unwrapContentKey(wrapped, change.device ?? device, change.context ?? context)).toBeNull();
  });

  it('does not open once altered', () => {
    const ct = Buffer.from(wrapped.ct, 'base64url');
    ct[0]! ^= 1;
    expect(unwrapContentKey({ ...wrapped, ct: ct.toString('base64url') }, device, context)).toBeNull();
    expect(unwrapContentKey({ ...wrapped, epk: generateDeviceKeyPair().x }, device, context)).toBeNull();
  });
});

describe('the vault', () => {
  const key = randomBytes(32);
  const files = new Map([
    ['a.txt', Buffer.from('alpha')],
    ['dir/b.bin', randomBytes(1000)],
    ['empty', Buffer.alloc(0)],
  ]);
  const sealed = sealVault(files, key, 'bld_1');

  it('gives back every file with its key and build', () => {
    expect(openVault(sealed, key, 'bld_1')).toEqual(files);
    expect(sealed.includes(Buffer.from('alpha'))).toBe(false);
  });

  it('opens for nobody else and for nothing altered', () => {
    expect(openVault(sealed, randomBytes(32), 'bld_1')).toBeNull();
    expect(openVault(sealed, key, 'bld_2')).toBeNull();
    const altered = Buffer.from(sealed);
    altered[altered.length - 1]! ^= 1;
    expect(openVault(altered, key, 'bld_1')).toBeNull();
    expect(openVault(Buffer.from('LKV2'), key, 'bld_1')).toBeNull();
  });
});
