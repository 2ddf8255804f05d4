/**
 * The cache file: one JSON envelope, written atomically, holding two AES-256-GCM boxes.
 * - `memo`: the device fingerprint hash, under a key from the OS identity (fast warm start).
 * - `body`: the payload, under a key from the fingerprint; `keyCheck` tells "sealed for another
 *   device" (useless, so unlicensed) apart from "edited" (authentication fails, so tampered).
 * - `components`: the names (never the values) of the components the fingerprint is made of, so a
 *   cold start computes it the same way. Editing them only yields another key.
 * - `binding`: what both keys are bound to besides (the OS store's secret or the install id).
 */
import { createCipheriv, createDecipheriv, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { COMPONENT_NAMES, type ComponentName } from '../fingerprint/index.js';
import { isBindingRecord, type BindingRecord } from './cache-binding.js';
import { keyCheck } from './cache-keys.js';
import type { SecretBuffer } from './secret-memory.js';

const FORMAT = 'latchkey-license-cache';
const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface CacheEnvelope {
  format: typeof FORMAT;
  version: typeof VERSION;
  components: ComponentName[];
  /** What the keys are bound to besides the fingerprint (cache-binding.ts); absent in caches of earlier SDKs. */
  binding?: BindingRecord;
  memo?: string;
  keyCheck: string;
  body: string;
}

/**
 * Which file, as read or written: its identity and size and time of change. Another instance of the
 * app that rewrites or removes the cache gives it another (cacheStampOf).
 */
export type CacheStamp = string;

export type EnvelopeRead = { kind: 'missing' } | { kind: 'corrupt' } | { kind: 'present'; envelope: CacheEnvelope; stamp: CacheStamp };

const stampOf = (s: { dev: number; ino: number; size: number; mtimeMs: number }): CacheStamp => `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}`;

/** The stamp of the file at `file` now, or undefined when there is none. */
export async function cacheStampOf(file: string): Promise<CacheStamp | undefined> {
  try {
    return stampOf(await stat(file));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export type BodyOpen = { kind: 'foreign' } | { kind: 'corrupt' } | { kind: 'opened'; plaintext: Buffer };

export async function readEnvelope(file: string): Promise<EnvelopeRead> {
  let text: string;
  let stamp: CacheStamp;
  try {
    // The stamp of the very file read (one handle), not of whatever the path names a moment later.
    const handle = await open(file, 'r');
    try {
      [text, stamp] = await Promise.all([handle.readFile('utf8'), handle.stat().then(stampOf)]);
    } finally {
      await handle.close();
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' };
    throw err;
  }
  try {
    const parsed = JSON.parse(text) as Partial<CacheEnvelope>;
    const wellFormed =
      parsed.format === FORMAT &&
      parsed.version === VERSION &&
      typeof parsed.keyCheck === 'string' &&
      typeof parsed.body === 'string' &&
      Array.isArray(parsed.components) &&
      parsed.components.every((name) => COMPONENT_NAMES.includes(name)) &&
      (parsed.memo === undefined || typeof parsed.memo === 'string') &&
      (parsed.binding === undefined || isBindingRecord(parsed.binding));
    return wellFormed ? { kind: 'present', envelope: parsed as CacheEnvelope, stamp } : { kind: 'corrupt' };
  } catch {
    return { kind: 'corrupt' };
  }
}

export function openMemo(envelope: CacheEnvelope, memoKey: SecretBuffer, aad: string): Buffer | undefined {
  return envelope.memo === undefined ? undefined : decrypt(envelope.memo, memoKey, `${aad}/memo`);
}

export function openBody(envelope: CacheEnvelope, cacheKey: SecretBuffer, aad: string): BodyOpen {
  const expectedCheck = cacheKey.read((key) => keyCheck(key));
  const storedCheck = Buffer.from(envelope.keyCheck, 'base64');
  if (storedCheck.length !== expectedCheck.length || !timingSafeEqual(storedCheck, expectedCheck)) return { kind: 'foreign' };
  const plaintext = decrypt(envelope.body, cacheKey, `${aad}/body`);
  return plaintext ? { kind: 'opened', plaintext } : { kind: 'corrupt' };
}

export function sealEnvelope(parts: {
  components: ComponentName[];
  binding: BindingRecord | undefined;
  memo?: { plaintext: Buffer; key: SecretBuffer };
  body: Buffer;
  cacheKey: SecretBuffer;
  aad: string;
}): string {
  const envelope: CacheEnvelope = {
    format: FORMAT,
    version: VERSION,
    components: parts.components,
    ...(parts.binding ? { binding: parts.binding } : {}),
    ...(parts.memo ? { memo: encrypt(parts.memo.plaintext, parts.memo.key, `${parts.aad}/memo`) } : {}),
    keyCheck: parts.cacheKey.read((key) => keyCheck(key)).toString('base64'),
    body: encrypt(parts.body, parts.cacheKey, `${parts.aad}/body`),
  };
  return JSON.stringify(envelope);
}

/**
 * Write to a sibling, flush it, and rename: a crash mid-write leaves the old cache, never half a
 * file. The flush comes first because filesystems journal the rename, not the data: after a power
 * loss an unflushed file can be renamed in yet empty, which reads as tampered and costs a paying
 * user a new activation. The folder is flushed too (POSIX), so the rename itself survives.
 */
export async function writeEnvelope(file: string, text: string): Promise<CacheStamp> {
  const folder = path.dirname(file);
  await mkdir(folder, { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  let stamp: CacheStamp;
  try {
    const handle = await open(temporary, 'w', 0o600);
    try {
      await handle.writeFile(text);
      await handle.sync();
      // A rename keeps the file's identity and times: this is the stamp the path then has.
      stamp = stampOf(await handle.stat());
    } finally {
      await handle.close();
    }
    await rename(temporary, file);
  } catch (err) {
    await rm(temporary, { force: true });
    throw err;
  }
  // Windows opens no folder as a file; NTFS journals the rename with its data already flushed.
  if (process.platform !== 'win32') {
    const entries = await open(folder, 'r').catch(() => undefined);
    await entries?.sync().catch(() => undefined);
    await entries?.close();
  }
  return stamp;
}

export async function removeEnvelope(file: string): Promise<void> {
  await rm(file, { force: true });
}

function encrypt(plaintext: Buffer, key: SecretBuffer, aad: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = key.read((k) => createCipheriv('aes-256-gcm', k, iv));
  cipher.setAAD(Buffer.from(aad));
  const sealed = Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  return sealed.toString('base64');
}

function decrypt(box: string, key: SecretBuffer, aad: string): Buffer | undefined {
  const sealed = Buffer.from(box, 'base64');
  if (sealed.length < IV_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = key.read((k) => createDecipheriv('aes-256-gcm', k, sealed.subarray(0, IV_BYTES)));
    decipher.setAAD(Buffer.from(aad));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()]);
  } catch {
    return undefined;
  }
}
