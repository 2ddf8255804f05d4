import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ProtocolError, verifyRuntimeToken, type RuntimeTokenClaims } from '../../runtime-sdk/protocol.js';
import { runtimeClaims, TestSigner } from './support/authority-keys.js';

const signer = new TestSigner('k_current');
const keys = { keys: [signer.publicJwk] };
const now = Math.floor(Date.UTC(2030, 0, 1) / 1000);
const device = 'a'.repeat(64);
const claims = runtimeClaims({ iat: now, app_id: 'app_notes', device });
const expect_ = { appId: 'app_notes', device, nowSeconds: now + 60 };

const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
const parts = (token: string) => token.split('.') as [string, string, string];

function failure(token: string, keySet: Parameters<typeof verifyRuntimeToken>[1] = keys, expected = expect_): string {
  try {
    verifyRuntimeToken(token, keySet, expected);
  } catch (err) {
    expect(err).toBeInstanceOf(ProtocolError);
    return (err as ProtocolError).failure;
  }
  return 'accepted';
}

describe('runtime token verification against pinned keys', () => {
  it('accepts a token signed by node:crypto with a pinned key (same bytes, two libraries)', () => {
    const verified: RuntimeTokenClaims = verifyRuntimeToken(signer.sign(claims), keys, expect_);
    expect(verified).toEqual(claims);
    expect(verifyRuntimeToken(signer.sign(claims), [signer.publicJwk], expect_).sub).toBe(claims.sub);
  });

  it('refuses an edited payload (features upgraded, signature kept)', () => {
    const [header, , signature] = parts(signer.sign(claims));
    const forged = `${header}.${b64({ ...claims, features: { tier: 'enterprise' } })}.${signature}`;
    expect(failure(forged)).toBe('bad_signature');
  });

  it('refuses a token re-signed by a key that is not pinned, even with a pinned kid', () => {
    const impostor = new TestSigner('k_current');
    expect(failure(impostor.sign(claims))).toBe('bad_signature');
    expect(failure(new TestSigner('k_other').sign(claims))).toBe('unknown_key');
  });

  it('refuses a token for another app or another device', () => {
    expect(failure(signer.sign({ ...claims, app_id: 'app_other' }))).toBe('wrong_app');
    expect(failure(signer.sign({ ...claims, device: 'b'.repeat(64) }))).toBe('wrong_device');
  });

  it('refuses an expired token when the caller asks for expiry', () => {
    expect(failure(signer.sign({ ...claims, exp: now }))).toBe('expired');
    expect(failure(signer.sign({ ...claims, exp: now + 60 }))).toBe('expired');
  });

  it('refuses alg none, with or without a signature', () => {
    const payload = b64(claims);
    const none = b64({ alg: 'none', kid: 'k_current', typ: 'latchkey-runtime+jwt' });
    expect(failure(`${none}.${payload}.${parts(signer.sign(claims))[2]}`)).toBe('unsupported_alg');
    expect(failure(`${none}.${payload}.`)).toBe('malformed');
  });

  it('refuses the HS256 swap (public key used as an HMAC secret)', () => {
    const header = b64({ alg: 'HS256', kid: 'k_current', typ: 'latchkey-runtime+jwt' });
    const payload = b64(claims);
    const mac = createHmac('sha256', Buffer.from(signer.publicJwk.x, 'base64url')).update(`${header}.${payload}`).digest('base64url');
    expect(failure(`${header}.${payload}.${mac}`)).toBe('unsupported_alg');
    // Same trick announcing EdDSA: the 32-byte MAC is not a 64-byte signature.
    const edHeader = b64({ alg: 'EdDSA', kid: 'k_current', typ: 'latchkey-runtime+jwt' });
    const edMac = createHmac('sha256', Buffer.from(signer.publicJwk.x, 'base64url')).update(`${edHeader}.${payload}`).digest('base64url');
    expect(failure(`${edHeader}.${payload}.${edMac}`)).toBe('malformed');
  });

  it('refuses another document type and garbage', () => {
    expect(failure(signer.sign(claims, { typ: 'latchkey-manifest+jwt' }))).toBe('wrong_type');
    expect(failure('not.a.token')).toBe('malformed');
    expect(failure('')).toBe('malformed');
  });
});
