/**
 * Keys for the on-disk cache, derived with HKDF-SHA-256 from what only this machine has, salted with
 * the app's `fingerprint_salt`: a cache copied to another machine (or read by another app) is noise.
 */
import { hkdf } from '@noble/hashes/hkdf.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js';

const KEY_BYTES = 32;

/** Encrypts the token, license key and times; needs the full hardware fingerprint. */
export function deriveCacheKey(fingerprintHash: string, salt: string, appId: string): Uint8Array {
  return hkdf(sha256, hexToBytes(fingerprintHash), utf8ToBytes(salt), utf8ToBytes(`latchkey/cache/v1/${appId}`), KEY_BYTES);
}

/** Encrypts the remembered fingerprint; needs only the cheap OS identity, so warm starts skip the probes. */
export function deriveMemoKey(quickAnchor: string, salt: string, appId: string): Uint8Array {
  return hkdf(sha256, utf8ToBytes(quickAnchor), utf8ToBytes(salt), utf8ToBytes(`latchkey/fingerprint-memo/v1/${appId}`), KEY_BYTES);
}

/** A short tag proving a key is the one the cache was sealed with, without revealing it. */
export function keyCheck(key: Uint8Array): Buffer {
  return Buffer.from(hmac(sha256, key, utf8ToBytes('latchkey/key-check')).subarray(0, 16));
}
