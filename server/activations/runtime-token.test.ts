import { describe, expect, it, vi } from 'vitest';
import { Keyring, generateSigningKey } from '../signing/keyring.js';
import { issueRuntimeToken, readRuntimeToken } from './runtime-token.js';

const license = {
  id: 'lic_remembered',
  app_id: 'app_1',
  license_type: 'perpetual' as const,
  features: {},
  device_limit: 2,
  expires_at: null,
  seat_model: 'node_locked' as const,
  lease_ttl_minutes: null,
};
const device = 'a'.repeat(64);
const issue = (keyring: Keyring, forDevice = device) => issueRuntimeToken(keyring, license, 72, forDevice, new Date(), null, null).token;

/** The same token with its claims part re-encoded with one claim changed, its signature kept. */
function withClaim(token: string, claim: string, value: unknown): string {
  const [header, claims, signature] = token.split('.');
  const changed = { ...JSON.parse(Buffer.from(claims!, 'base64url').toString('utf8')), [claim]: value };
  return `${header}.${Buffer.from(JSON.stringify(changed)).toString('base64url')}.${signature}`;
}

describe('reading a runtime token', () => {
  it('reads a token this keyring signed, again and again', () => {
    const keyring = new Keyring([generateSigningKey()]);
    const token = issue(keyring);
    for (let i = 0; i < 3; i++) expect(readRuntimeToken(keyring, token)).toEqual({ licenseId: license.id, device });
  });

  it('refuses a remembered signature on changed claims, and a token another keyring signed', () => {
    const keyring = new Keyring([generateSigningKey()]);
    const token = issue(keyring);
    for (const forged of [withClaim(token, 'device', 'b'.repeat(64)), withClaim(token, 'sub', 'lic_other'), `${token}x`]) {
      expect(() => readRuntimeToken(keyring, forged)).toThrow(expect.objectContaining({ code: 'INVALID_RUNTIME_TOKEN' }));
    }
    expect(() => readRuntimeToken(keyring, issue(new Keyring([generateSigningKey()])))).toThrow(expect.objectContaining({ code: 'INVALID_RUNTIME_TOKEN' }));
    expect(readRuntimeToken(keyring, token)).toEqual({ licenseId: license.id, device });
  });

  it('checks the signature of a token it never saw or has forgotten: another instance with the same keys signed it', () => {
    const key = generateSigningKey();
    const [signer, reader] = [new Keyring([key]), new Keyring([key])];
    const token = issue(signer);
    expect(readRuntimeToken(reader, token)).toEqual({ licenseId: license.id, device });
    // Far more tokens than are remembered: the first is forgotten, and still read by its signature.
    for (let i = 0; i < 33_000; i++) issue(reader, i.toString(16).padStart(64, '0'));
    expect(readRuntimeToken(reader, token)).toEqual({ licenseId: license.id, device });
    expect(() => readRuntimeToken(reader, withClaim(token, 'device', 'c'.repeat(64)))).toThrow(expect.objectContaining({ code: 'INVALID_RUNTIME_TOKEN' }));
  });

  it('remembers tokens up to a total length, so large ones are forgotten sooner, and checks a forgotten one again', () => {
    const keyring = new Keyring([generateSigningKey()]);
    const verify = vi.spyOn(keyring, 'verify');
    const token = issue(keyring);
    readRuntimeToken(keyring, token);
    expect(verify).not.toHaveBeenCalled();
    // 4,000 tokens of some 5.5 KB each (4 KB of features) pass 16 MB: the first one is forgotten.
    const large = { ...license, features: { notes: 'x'.repeat(4000) } };
    for (let i = 0; i < 4_000; i++) issueRuntimeToken(keyring, large, 72, i.toString(16).padStart(64, '0'), new Date(), null, null);
    expect(readRuntimeToken(keyring, token)).toEqual({ licenseId: license.id, device });
    expect(verify).toHaveBeenCalledTimes(1);
  });
});
