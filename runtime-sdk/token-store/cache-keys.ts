/**
 * Keys for the on-disk cache, derived with HKDF-SHA-256 from what only this machine has, salted with
 * the app's `fingerprint_salt`: a cache copied to another machine (or read by another app) is noise.
 * `binding` (cache-binding.ts: the OS store's secret, or the install id) is mixed in when the cache
 * has one, so the keys also need this user's OS store, or this very installation.
 */
import { hkdf } from '@noble/hashes/hkdf.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { concatBytes, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js';

const KEY_BYTES = 32;

/** Encrypts the token, license key and times; needs the full hardware fingerprint. */
export function deriveCacheKey(fingerprintHash: string, salt: string, appId: string, binding?: Uint8Array): Uint8Array {
  return derive(hexToBytes(fingerprintHash), salt, 'cache', appId, binding);
}

/** Encrypts the remembered fingerprint; needs only the cheap OS identity, so warm starts skip the probes. */
export function deriveMemoKey(quickAnchor: string, salt: string, appId: string, binding?: Uint8Array): Uint8Array {
  return derive(utf8ToBytes(quickAnchor), salt, 'fingerprint-memo', appId, binding);
}

/** v1: the machine's input alone (caches of earlier SDKs); v2: followed by the binding. */
function derive(machine: Uint8Array, salt: string, purpose: string, appId: string, binding: Uint8Array | undefined): Uint8Array {
  const input = binding ? concatBytes(machine, binding) : machine;
  const key = hkdf(sha256, input, utf8ToBytes(salt), utf8ToBytes(`latchkey/${purpose}/${binding ? 'v2' : 'v1'}/${appId}`), KEY_BYTES);
  if (binding) input.fill(0);
  return key;
}

/** A short tag proving a key is the one the cache was sealed with, without revealing it. */
export function keyCheck(key: Uint8Array): Buffer {
  return Buffer.from(hmac(sha256, key, utf8ToBytes('latchkey/key-check')).subarray(0, 16));
}
