/**
 * Keys for the on-disk cache, derived with HKDF-SHA-256 from what only this machine has, salted with
 * the app's `fingerprint_salt`: a cache copied to another machine (or read by another app) is noise.
 * `binding` (cache-binding.ts: the OS store's secret, or the install id) is mixed in when the cache
 * has one, so the keys also need this user's OS store, or this very installation.
 *
 * node:crypto, not the pure-JavaScript hashes the fingerprint uses: these run at every start, and
 * the JavaScript HKDF, not yet compiled, cost 5 to 40 ms of it (the protection bench's profile).
 */
import { createHmac, hkdfSync } from 'node:crypto';

const KEY_BYTES = 32;

/** Encrypts the token, license key and times; needs the full hardware fingerprint. */
export function deriveCacheKey(fingerprintHash: string, salt: string, appId: string, binding?: Uint8Array): Uint8Array {
  return derive(Buffer.from(fingerprintHash, 'hex'), salt, 'cache', appId, binding);
}

/** Encrypts the remembered fingerprint; needs only the cheap OS identity, so warm starts skip the probes. */
export function deriveMemoKey(quickAnchor: string, salt: string, appId: string, binding?: Uint8Array): Uint8Array {
  return derive(Buffer.from(quickAnchor, 'utf8'), salt, 'fingerprint-memo', appId, binding);
}

/** v1: the machine's input alone (caches of earlier SDKs); v2: followed by the binding. */
function derive(machine: Uint8Array, salt: string, purpose: string, appId: string, binding: Uint8Array | undefined): Uint8Array {
  const input = binding ? Buffer.concat([machine, binding]) : machine;
  const key = new Uint8Array(hkdfSync('sha256', input, salt, `latchkey/${purpose}/${binding ? 'v2' : 'v1'}/${appId}`, KEY_BYTES));
  if (binding) input.fill(0);
  return key;
}

/** A short tag proving a key is the one the cache was sealed with, without revealing it. */
export function keyCheck(key: Uint8Array): Buffer {
  return createHmac('sha256', key).update('latchkey/key-check').digest().subarray(0, 16);
}
