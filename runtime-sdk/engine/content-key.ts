/**
 * The content key of a protected build, wrapped for one device (docs/protocol.md, "Protected
 * builds"): X25519 between an ephemeral key of the authority and the device's key, HKDF-SHA-256
 * bound to build, license and device, AES-256-GCM. Only the device holding the private key, for
 * that license and build, gets the key back; the server imports `wrapContentKey`, the runtime
 * `unwrapContentKey`.
 */
import type { WrappedContentKey } from '../protocol.js';
import { createCipheriv, createDecipheriv, createPrivateKey, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';

/** Whom a key is wrapped for: the same three values on both sides, or nothing opens. */
export interface ContentKeyContext {
  buildId: string;
  licenseId: string;
  /** The device fingerprint hash. */
  device: string;
}

/** A device's X25519 key pair as the runtime keeps it: base64url raw private (`d`) and public (`x`) values. */
export interface DeviceKeyPair {
  d: string;
  x: string;
}

export const CONTENT_KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** A raw X25519 public key, base64url without padding. */
export const DEVICE_KEY_PATTERN = /^[A-Za-z0-9_-]{43}$/;

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url');
const publicKeyOf = (x: string): KeyObject => createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x }, format: 'jwk' });

export function generateDeviceKeyPair(): DeviceKeyPair {
  const { d, x } = generateKeyPairSync('x25519').privateKey.export({ format: 'jwk' });
  return { d: d!, x: x! };
}

function info(context: ContentKeyContext): Buffer {
  return Buffer.from(`latchkey-content-key/v1|${context.buildId}|${context.licenseId}|${context.device}`, 'utf8');
}

function keyEncryptionKey(shared: Buffer, epk: string, deviceKey: string, context: ContentKeyContext): Buffer {
  const salt = Buffer.concat([Buffer.from(epk, 'base64url'), Buffer.from(deviceKey, 'base64url')]);
  return Buffer.from(hkdfSync('sha256', shared, salt, info(context), 32));
}

/** Seals `contentKey` to the device public key `deviceKey` (base64url raw X25519). */
export function wrapContentKey(contentKey: Buffer, deviceKey: string, context: ContentKeyContext): WrappedContentKey {
  const ephemeral = generateKeyPairSync('x25519');
  const epk = ephemeral.publicKey.export({ format: 'jwk' }).x!;
  const shared = diffieHellman({ privateKey: ephemeral.privateKey, publicKey: publicKeyOf(deviceKey) });
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyEncryptionKey(shared, epk, deviceKey, context), iv);
  cipher.setAAD(info(context));
  const ct = Buffer.concat([cipher.update(contentKey), cipher.final(), cipher.getAuthTag()]);
  return { build_id: context.buildId, epk, iv: b64(iv), ct: b64(ct) };
}

/** The content key, or null when the wrapped key is not for this device, license and build (or was altered). */
export function unwrapContentKey(wrapped: WrappedContentKey, device: DeviceKeyPair, context: ContentKeyContext): Buffer | null {
  if (wrapped.build_id !== context.buildId) return null;
  try {
    const privateKey = createPrivateKey({ key: { kty: 'OKP', crv: 'X25519', d: device.d, x: device.x }, format: 'jwk' });
    const shared = diffieHellman({ privateKey, publicKey: publicKeyOf(wrapped.epk) });
    const ct = Buffer.from(wrapped.ct, 'base64url');
    const iv = Buffer.from(wrapped.iv, 'base64url');
    if (iv.length !== IV_BYTES || ct.length !== CONTENT_KEY_BYTES + TAG_BYTES) return null;
    const decipher = createDecipheriv('aes-256-gcm', keyEncryptionKey(shared, wrapped.epk, device.x, context), iv);
    decipher.setAAD(info(context));
    decipher.setAuthTag(ct.subarray(CONTENT_KEY_BYTES));
    return Buffer.concat([decipher.update(ct.subarray(0, CONTENT_KEY_BYTES)), decipher.final()]);
  } catch {
    return null;
  }
}
